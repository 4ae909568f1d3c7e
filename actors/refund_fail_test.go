package actors

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// TestFailedPayoutTellsTheMerchant: with the simulated service node as
// the sender's payer, a payout to an invoice it finds no route to ends
// Failed with the reason recorded, its debit back on the balance and its
// claim back on the pull payment; the Greenfield webhook that names
// PayoutUpdated is told (payoutState Cancelled, BTCPay's word for it),
// and a Kassa-format webhook of every event is sent nothing.
func TestFailedPayoutTellsTheMerchant(t *testing.T) {
	ctx := context.Background()
	h, _ := newSimNodePayoutHarness(t)
	fh, customer := h.forwardHarness, h.customer
	gf, err := fh.sys.Service.CreateWebhook(ctx, fh.store.ID, &kassa.WebhookInput{URL: "https://shop.example/greenfield",
		Format: kassa.FormatGreenfield, Events: []kassa.EventType{kassa.GreenfieldPayoutUpdated}, EventsGiven: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fh.sys.Service.CreateWebhook(ctx, fh.store.ID, &kassa.WebhookInput{URL: "https://shop.example/kassa"}); err != nil {
		t.Fatal(err)
	}
	before := h.balance()

	// The simulated node pays only its own invoices: another node's
	// has no route.
	foreign, err := customer.node.CreateInvoice(ctx, 5_000_000, "elsewhere", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	failed := h.waitFinal(h.approved(h.refunds, foreign.PaymentRequest, 5_000).ID)
	if failed.State != kassa.PayoutFailed || failed.LastError == "" || failed.Debited != 0 {
		t.Fatalf("payout with no route: %+v", failed)
	}
	h.eventuallyBalance(before)
	if pp, err := h.db.PullPayment(ctx, failed.PullPaymentID); err != nil || !pp.Claimed.IsZero() {
		t.Fatalf("pull payment after the failure: %+v, %v", pp, err)
	}

	var last map[string]any
	kassatest.WaitFor(t, 5*time.Second, "the merchant's webhook to hear of the failure", func() bool {
		sent := fh.hooks.to(gf.URL)
		if len(sent) == 0 {
			return false
		}
		last = nil
		_ = json.Unmarshal(sent[len(sent)-1].body, &last)
		return last["payoutState"] == "Cancelled"
	})
	for _, s := range fh.hooks.to(gf.URL) {
		var b map[string]any
		_ = json.Unmarshal(s.body, &b)
		if b["type"] != string(kassa.GreenfieldPayoutUpdated) || b["payoutId"] != failed.ID {
			t.Errorf("greenfield delivery %v: want only PayoutUpdated of %s", b, failed.ID)
		}
	}
	if n := len(fh.hooks.to("https://shop.example/kassa")); n != 0 {
		t.Errorf("the Kassa-format webhook was sent %d payout deliveries, want none", n)
	}
}

// TestHeldMoneyDoesNotPayRefunds: Lightning money held on the service's
// node for a store without a Lightning address is the store's, waiting
// to be forwarded, not its prepaid balance: an approval it would cover
// but the prepaid balance does not is refused 402, and nothing moves.
func TestHeldMoneyDoesNotPayRefunds(t *testing.T) {
	ctx := context.Background()
	shop, customer := newMerchant(t), newMerchant(t)
	fh := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), shop, lnsim.NewPayer(shop.node, customer.node))
	st, err := fh.sys.Service.CreateStore(ctx, kassa.StoreSettings{
		Name: "No address", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1), ConfirmationsRequired: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	fh.store = st
	h := payoutsOf(fh, customer)
	if _, err := fh.sys.Service.TopUp(ctx, st.ID, 1_000, ""); err != nil {
		t.Fatal(err)
	}
	inv := fh.invoice("50000", kassa.SATS)
	fh.payLightning(inv, 50_000)
	kassatest.WaitFor(t, 5*time.Second, "the payment to be held", func() bool {
		return fh.transfer(inv.ID).Status == kassa.TransactionHeld
	})
	before := h.balance() // the top-up less the invoice's service fee
	pp, err := h.refunds.RefundInvoice(ctx, st.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundCustom, CustomAmount: decimal.NewFromInt(10_000), CustomCurrency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	p, err := h.refunds.Claim(ctx, pp.ID, customer.address(), decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.refunds.Approve(ctx, st.ID, p.ID); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("approval covered only by held money: %v, want 402", err)
	}
	if got := h.balance(); got != before {
		t.Fatalf("balance %d after a refused approval, want %d", got, before)
	}
	if got, _ := h.db.Payout(ctx, p.ID); got.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("payout %+v, want still awaiting approval", got)
	}
	if tx := fh.transfer(inv.ID); tx.Status != kassa.TransactionHeld {
		t.Fatalf("held transfer became %s", tx.Status)
	}
}

// TestSentPayoutCannotBeMarkedPaid: once its payment is recorded as
// sent (the sender's attempt), a payout can be neither marked paid nor
// cancelled: its debit stays, since the payment may arrive.
func TestSentPayoutCannotBeMarkedPaid(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(50_000)
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(10_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	p := h.claim(pp, "0")
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := h.refunds.Record(ctx, h.store.ID, p.ID, kassa.PayoutAttempt{PaymentRequest: "lnbcrt1…", PaymentHash: "ab12", At: h.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	debited := h.balance()
	if _, err := h.refunds.MarkPaid(ctx, h.store.ID, p.ID); err != kassa.ErrPayoutSent {
		t.Fatalf("mark paid once sent: %v, want %v", err, kassa.ErrPayoutSent)
	}
	if _, err := h.refunds.Cancel(ctx, h.store.ID, p.ID); err != kassa.ErrPayoutSent {
		t.Fatalf("cancel once sent: %v, want %v", err, kassa.ErrPayoutSent)
	}
	if got, _ := h.db.Payout(ctx, p.ID); got.State != kassa.PayoutInProgress || got.MarkedPaid || h.balance() != debited {
		t.Fatalf("after refused commands: %+v, balance %d (want %d)", got, h.balance(), debited)
	}
}
