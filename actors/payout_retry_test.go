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
	fh := newForwardHarness(t, openMem(t), clock, shop, payer, func(c *ForwarderConfig) {
		addrs = &downAddresses{LightningAddresses: c.Addresses}
		c.Addresses = addrs
	})
	fh.createStore()
	h := &payoutHarness{forwardHarness: fh, customer: customer}
	h.refunds = h.refundService(fh.fwd)
	fh.fwd.PayPayouts(h.refunds)
	if _, err := fh.sys.Service.TopUp(context.Background(), fh.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	addrs.down.Store(true)
	p := h.approved(h.refunds, customer.address(), 9_000)
	for range 3 { // tries while lnd is down
		kassatest.WaitFor(t, 5*time.Second, "a retry armed", func() bool { return clock.Pending() > 0 })
		clock.AdvanceToNext()
	}
	if got, err := h.db.Payout(context.Background(), p.ID); err != nil || got.State != kassa.PayoutApproved {
		t.Fatalf("payout while its address cannot be resolved: %+v, %v; want Approved", got, err)
	}
	addrs.down.Store(false)
	clock.Advance(time.Hour)
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted || len(customer.paid()) != 1 {
		t.Fatalf("payout %+v, customer paid %v", done, customer.paid())
	}
}
