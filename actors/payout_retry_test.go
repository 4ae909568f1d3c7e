package actors

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// downAddresses is a LightningAddresses that answers Unavailable while
// down (lnd unreachable, so the address's network cannot be checked),
// else the real resolver's answers.
type downAddresses struct {
	LightningAddresses
	down atomic.Bool
}

func (d *downAddresses) PayRequest(ctx context.Context, address string) (kassa.PayRequest, error) {
	if d.down.Load() {
		return kassa.PayRequest{}, kassa.ErrLightningNodeUnreachable
	}
	return d.LightningAddresses.PayRequest(ctx, address)
}

// TestPayoutToAddressWaitsWhileItCannotBeResolved: a Lightning address
// that cannot be resolved for a passing reason (lnd unreachable) keeps
// the payout approved and tried again, not failed; once it resolves the
// payout is paid, once.
func TestPayoutToAddressWaitsWhileItCannotBeResolved(t *testing.T) {
	shop, customer := newMerchant(t), newMerchant(t)
	payer := lnsim.NewPayer(shop.node, customer.node)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	var addrs *downAddresses
	h := newPayoutHarnessWith(t, clock, shop, customer, payer, func(c *ForwarderConfig) {
		addrs = &downAddresses{LightningAddresses: c.Addresses}
		c.Addresses = addrs
	})
	addrs.down.Store(true)
	p := h.approved(h.refunds, customer.address(), 9_000)
	h.retried(3) // tries while lnd is down
	if got, err := h.db.Payout(context.Background(), p.ID); err != nil || got.State != kassa.PayoutApproved {
		t.Fatalf("payout while its address cannot be resolved: %+v, %v; want Approved", got, err)
	}
	addrs.down.Store(false)
	h.paidOnceOnRetry(p.ID)
}
