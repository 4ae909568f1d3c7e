package actors

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// TestPayoutPaidByTheSimulatedNode: with the simulated service node as
// the sender's payer (kassa serve --lightning sim), an approved payout to
// an invoice of that node completes, its hash settled there once and the
// balance debited by the payout alone; a payout to another node's invoice
// finds no route and fails with the money back.
func TestPayoutPaidByTheSimulatedNode(t *testing.T) {
	ctx := context.Background()
	h, node := newSimNodePayoutHarness(t)
	customer := h.customer
	before := h.balance()

	inv, err := node.CreateInvoice(ctx, 20_000_000, "refund", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	done := h.waitFinal(h.approved(h.refunds, inv.PaymentRequest, 20_000).ID)
	if done.State != kassa.PayoutCompleted || done.PaymentHash != inv.PaymentHash {
		t.Fatalf("payout to the node's own invoice: %+v", done)
	}
	if p, err := node.TrackPayment(ctx, inv.PaymentHash); err != nil || p.Status != kassa.PaymentSucceeded {
		t.Fatalf("node's payment = %+v, %v", p, err)
	}
	h.eventuallyBalance(before - 20_000)

	foreign, err := customer.node.CreateInvoice(ctx, 5_000_000, "elsewhere", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	failed := h.waitFinal(h.approved(h.refunds, foreign.PaymentRequest, 5_000).ID)
	if failed.State != kassa.PayoutFailed || failed.LastError == "" {
		t.Fatalf("payout with no route: %+v", failed)
	}
	h.eventuallyBalance(before - 20_000)
}
