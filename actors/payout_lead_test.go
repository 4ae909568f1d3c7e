package actors

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// TestLeaseHolderPaysPayoutsApprovedElsewhere: in a cluster the forward
// actors run only on the node that holds the forwarder lease (Lead),
// while a payout is approved on whichever node answers the request, and
// the approval wakes that node's sender alone: another node's, or this
// node's before it took the lease (after a restart, the lease of the
// killed node still runs). The holder finds those payouts itself: one
// approved before its term is paid when the term starts, one approved
// on another node during the term at the next poll; each paid once.
func TestLeaseHolderPaysPayoutsApprovedElsewhere(t *testing.T) {
	const poll = time.Second
	h := newPayoutHarness(t, func(c *ForwarderConfig) { c.Standby, c.PollEvery = true, poll })
	elsewhere := h.refundService(nil) // another node's: its approvals wake no sender here
	before := h.balance()
	first := h.approved(elsewhere, h.customer.address(), 20_000)

	ctx, cancel := context.WithCancel(context.Background())
	led := make(chan error, 1)
	go func() { led <- h.fwd.Lead(ctx, h.db) }()
	t.Cleanup(func() {
		cancel()
		if err := <-led; err != nil {
			t.Error(err)
		}
	})
	if p := h.waitFinal(first.ID); p.State != kassa.PayoutCompleted {
		t.Fatalf("payout approved before the term: %+v", p)
	}

	second := h.approved(elsewhere, h.customer.address(), 10_000)
	var p *kassa.Payout
	eventually(t, "the payout approved on another node to end", func() bool {
		h.clock.Advance(poll) // the holder's next poll
		var err error
		p, err = h.db.Payout(context.Background(), second.ID)
		return err == nil && p.State.Final()
	})
	if p.State != kassa.PayoutCompleted {
		t.Fatalf("payout approved during the term: %+v", p)
	}
	if paid := h.customer.paid(); len(paid) != 2 || h.payer.Sent() != 2 {
		t.Fatalf("customer invoices paid %v, %d payments sent: want each payout paid once", paid, h.payer.Sent())
	}
	h.eventuallyBalance(before - 30_000)
}
