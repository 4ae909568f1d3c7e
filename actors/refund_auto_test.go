package actors

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestRefundsApprovedAutomaticallyUpToTheLimit: a store that approves
// payouts of up to 5000 sat automatically has a claim within it approved
// in the claim's batch (debited with its fee limit, PayoutCreated then
// PayoutApproved); a claim above it, one in fiat above it at today's
// rate, and one the prepaid balance does not cover wait for the
// merchant, nothing debited. Without the setting every claim waits.
func TestRefundsApprovedAutomaticallyUpToTheLimit(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(8_000)
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(20_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	if p := h.claim(pp, "1000"); p.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("claim without the setting: %s, want AwaitingApproval", p.State)
	}
	st := h.store
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, kassa.StoreUpdate{Name: st.Name, Currency: st.Currency,
		ConfirmationsRequired: st.ConfirmationsRequired, RefundAutoApproveMax: 5_000}); err != nil {
		t.Fatal(err)
	}
	before := h.balance()
	within := h.claim(pp, "5000")
	if within.State != kassa.PayoutApproved || within.Debited != 5_000+within.FeeLimit {
		t.Fatalf("claim within the limit: %+v, want Approved and debited", within)
	}
	if got := h.balance(); got != before-within.Debited {
		t.Fatalf("balance %d after an automatic approval, want %d", got, before-within.Debited)
	}
	before = h.balance()
	if p := h.claim(pp, "5001"); p.State != kassa.PayoutAwaitingApproval || p.Debited != 0 {
		t.Fatalf("claim above the limit: %+v, want AwaitingApproval", p)
	}
	// 4000 sat more and its fee limit are more than the 2950 left.
	if p := h.claim(pp, "4000"); p.State != kassa.PayoutAwaitingApproval || p.Debited != 0 {
		t.Fatalf("claim the balance does not cover: %+v, want AwaitingApproval", p)
	}
	if got := h.balance(); got != before {
		t.Fatalf("balance %d after claims left to the merchant, want %d", got, before)
	}
	// In fiat: 5 EUR is more than 5000 sat at the test rate.
	eur, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(5), Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	if p := h.claim(eur, "0"); p.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("fiat claim above the limit: %+v", p)
	}
	// A store cannot set a negative limit.
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, kassa.StoreUpdate{Name: st.Name, Currency: st.Currency,
		ConfirmationsRequired: st.ConfirmationsRequired, RefundAutoApproveMax: -1}); kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("negative limit: %v", err)
	}
}

// TestAutoApprovedPayoutIsPaid: a claim the store approves automatically
// wakes the sender, which pays it without anyone approving it.
func TestAutoApprovedPayoutIsPaid(t *testing.T) {
	h := newPayoutHarness(t)
	ctx := context.Background()
	st := h.store
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, kassa.StoreUpdate{Name: st.Name, Currency: st.Currency,
		LightningAddress: st.LightningAddress, ConfirmationsRequired: st.ConfirmationsRequired, RefundAutoApproveMax: 50_000}); err != nil {
		t.Fatal(err)
	}
	before := h.balance()
	pp, err := h.refunds.CreatePullPayment(ctx, st.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(20_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.refunds.Claim(ctx, pp.ID, h.customer.address(), decimal.Zero)
	if err != nil || p.State != kassa.PayoutApproved {
		t.Fatalf("claim: %+v %v, want Approved", p, err)
	}
	if done := h.waitFinal(p.ID); done.State != kassa.PayoutCompleted || len(h.customer.paid()) != 1 {
		t.Fatalf("auto-approved payout %+v, customer paid %v", done, h.customer.paid())
	}
	h.eventuallyBalance(before - 20_000)
}
