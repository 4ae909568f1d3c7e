package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// notReadyPayer is a simulated payer whose node can be made not ready,
// as lnd is just after a restart: SendReady answers Unavailable and a
// payment fails with the reason lnd gives while its channels are
// inactive.
type notReadyPayer struct {
	*lnsim.Payer
	down atomic.Bool
}

func newNotReadyPayer(payees ...*lnsim.Node) *notReadyPayer {
	p := &notReadyPayer{Payer: lnsim.NewPayer(payees...)}
	p.Ready = func() error {
		if p.down.Load() {
			return kassa.Errorf(kassa.Unavailable, "lnd has no active channel")
		}
		return nil
	}
	p.Before = func(string) error {
		if p.down.Load() {
			return errors.New("insufficient_balance")
		}
		return nil
	}
	return p
}

// TestPayoutWaitsForLightningNodeReady: while the service's node cannot
// send (lnd restarted, its channels not active yet), an approved
// Lightning payout stays Approved and is tried again with backoff, not
// failed; once the node is ready it is paid, once, and the balance
// debited once.
func TestPayoutWaitsForLightningNodeReady(t *testing.T) {
	shop, customer := newMerchant(t), newMerchant(t)
	payer := newNotReadyPayer(shop.node, customer.node)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newPayoutHarnessWith(t, clock, shop, customer, payer.Payer)
	before := h.balance()
	payer.down.Store(true)
	p := h.approved(h.refunds, customer.address(), 9_000)
	h.retried(3) // tries while the node is not ready
	if got, err := h.db.Payout(context.Background(), p.ID); err != nil || got.State != kassa.PayoutApproved {
		t.Fatalf("payout while the node is not ready: %+v, %v; want Approved", got, err)
	}
	payer.down.Store(false)
	h.paidOnceOnRetry(p.ID)
	h.eventuallyBalance(before - 9_000)
}

// TestPayoutFailedWhileNodeNotReadyIsSentAgain: a payment that fails
// because the node stopped being ready while it was sent (lnd restarted
// mid-payment) does not fail the payout: it is sent again once the node
// is ready, and paid once. A failure while the node is ready still fails
// the payout, money back.
func TestPayoutFailedWhileNodeNotReadyIsSentAgain(t *testing.T) {
	shop, customer := newMerchant(t), newMerchant(t)
	payer := newNotReadyPayer(shop.node, customer.node)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newPayoutHarnessWith(t, clock, shop, customer, payer.Payer)
	before := h.balance()
	var first, noRoute atomic.Bool
	payer.Before = func(string) error {
		if first.CompareAndSwap(false, true) {
			payer.down.Store(true) // lnd restarts while paying
		}
		if noRoute.Load() {
			return errors.New("no_route")
		}
		if payer.down.Load() {
			return errors.New("insufficient_balance")
		}
		return nil
	}
	p := h.approved(h.refunds, customer.address(), 9_000)
	h.retried(3)
	if got, err := h.db.Payout(context.Background(), p.ID); err != nil || got.State.Final() {
		t.Fatalf("payout whose payment failed while the node was not ready: %+v, %v; want still to pay", got, err)
	}
	payer.down.Store(false)
	h.paidOnceOnRetry(p.ID)
	h.eventuallyBalance(before - 9_000)

	// Ready, a failure is definite.
	noRoute.Store(true)
	failed := h.waitFinal(h.approved(h.refunds, customer.address(), 5_000).ID)
	if failed.State != kassa.PayoutFailed {
		t.Fatalf("payout failing while the node is ready: %+v", failed)
	}
	h.eventuallyBalance(before - 9_000)
}
