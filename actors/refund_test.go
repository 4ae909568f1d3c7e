package actors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/refund"
)

// refundHarness is a harness with the refund service over its actors.
type refundHarness struct {
	*harness
	refunds *refund.Service
}

func newRefundHarness(t *testing.T) *refundHarness {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("1", "0")
	return &refundHarness{harness: h, refunds: refund.New(refund.Config{
		Reader: h.db, Payouts: h.db, Ledger: h.sys.Service, Rates: fixedRates{}, Clock: h.clock, Network: refund.Fixed{Net: &chaincfg.RegressionNetParams},
	})}
}

// settled returns a settled invoice of the store for sats, paid by
// Lightning.
func (h *refundHarness) settled(sats string) *kassa.Invoice {
	h.t.Helper()
	inv := h.invoice(sats, kassa.SATS)
	amount, _ := decimal.NewFromString(sats)
	h.payLightning(inv, kassa.Sats(amount.IntPart()))
	inv = h.get(inv.ID)
	if inv.Status != kassa.InvoiceSettled {
		h.t.Fatalf("invoice %s is %s", inv.ID, inv.Status)
	}
	return inv
}

func (h *refundHarness) balance() kassa.Sats {
	h.t.Helper()
	b, err := h.db.Balance(context.Background(), h.store.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

func (h *refundHarness) topUp(sats kassa.Sats) {
	h.t.Helper()
	if _, err := h.sys.Service.TopUp(context.Background(), h.store.ID, sats, ""); err != nil {
		h.t.Fatal(err)
	}
}

// refundLines returns the store's refund, refund returned and network
// fee lines, oldest first.
func (h *refundHarness) refundLines() []*kassa.Transaction {
	h.t.Helper()
	var out []*kassa.Transaction
	_, err := h.db.Transactions(context.Background(), h.store.ID, kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		switch tx.Type {
		case kassa.TransactionRefund, kassa.TransactionRefundReturned, kassa.TransactionNetworkFee:
			out = append([]*kassa.Transaction{tx}, out...)
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

func (h *refundHarness) claim(pp *kassa.PullPayment, amount string) *kassa.Payout {
	h.t.Helper()
	p, err := h.refunds.Claim(context.Background(), pp.ID, "customer@example.com", decimal.RequireFromString(amount))
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// TestRefundApprovalDebitsTheBalanceOnce: a refund of a settled invoice
// at the rate of the payment, claimed to a Lightning address and
// approved: the balance is debited by the payout in the approval's
// batch, with one refund line and one journal event, and a second
// approval changes nothing.
func TestRefundApprovalDebitsTheBalanceOnce(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(100_000)
	inv := h.settled("20000")
	before := h.balance() // less the invoice's 1 % fee
	pp, err := h.refunds.RefundInvoice(ctx, h.store.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		t.Fatal(err)
	}
	if pp.Currency != kassa.SATS || !pp.Amount.Equal(decimal.NewFromInt(20_000)) || pp.InvoiceID != inv.ID {
		t.Fatalf("pull payment %+v", pp)
	}
	p := h.claim(pp, "0")
	if p.State != kassa.PayoutAwaitingApproval || p.Amount != 20_000 {
		t.Fatalf("claimed payout %+v", p)
	}
	if h.balance() != before {
		t.Fatalf("a claim moved the balance: %d, was %d", h.balance(), before)
	}
	approved, err := h.refunds.Approve(ctx, h.store.ID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if approved.State != kassa.PayoutApproved || approved.Debited != 20_200 || approved.FeeLimit != 200 {
		t.Fatalf("approved payout %+v", approved)
	}
	if got := h.balance(); got != before-20_200 {
		t.Fatalf("balance after approval = %d, want %d (the payout and its fee limit)", got, before-20_200)
	}
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); err != kassa.ErrPayoutNotAwaitingApproval {
		t.Fatalf("second approval: %v", err)
	}
	lines := h.refundLines()
	if len(lines) != 2 || lines[0].Type != kassa.TransactionRefund || lines[0].Amount != 20_000 || lines[0].InvoiceID != inv.ID ||
		lines[1].Type != kassa.TransactionNetworkFee || lines[1].Amount != 200 {
		t.Fatalf("refund lines %+v", lines)
	}
	stored, err := h.db.Payout(ctx, p.ID)
	if err != nil || stored.State != kassa.PayoutApproved {
		t.Fatalf("stored payout %+v, %v", stored, err)
	}
	if n := refundEvents(t, h.db, h.store.ID); n != 3 {
		t.Errorf("%d refund events in the store's journal, want 3 (refund, claim, approval)", n)
	}
}

// refundEvents counts the store's RefundsChanged journal events.
func refundEvents(t *testing.T, j kassa.Journal, storeID string) int {
	t.Helper()
	n := 0
	err := j.Events(context.Background(), kassa.Stream{Kind: kassa.KindStore, ID: storeID}, 0, func(_ uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		if ev.GetRefundsChanged() != nil {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRefundApprovalNeedsThePrepaidBalance: the credit limit does not
// pay refunds: an approval that would take the balance below zero (with
// the fee limit) is refused, and nothing is written.
func TestRefundApprovalNeedsThePrepaidBalance(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	inv := h.settled("20000") // fee 200 sat: the balance is -200, within the credit limit
	pp, err := h.refunds.RefundInvoice(ctx, h.store.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		t.Fatal(err)
	}
	p := h.claim(pp, "1000")
	before := h.balance()
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("approval above the balance: %v, want payment_required", err)
	}
	if h.balance() != before || len(h.refundLines()) != 0 {
		t.Fatalf("a refused approval wrote: balance %d (was %d), lines %v", h.balance(), before, h.refundLines())
	}
	if stored, _ := h.db.Payout(ctx, p.ID); stored.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("payout after a refused approval: %s", stored.State)
	}
	// 1000 sat and its fee limit of 10 sat, from a balance of -200.
	h.topUp(1209)
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("approval one satoshi short: %v", err)
	}
	h.topUp(1)
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); err != nil {
		t.Fatalf("approval the balance covers: %v", err)
	}
	if got := h.balance(); got != 0 {
		t.Fatalf("balance = %d, want 0 (the payout and its fee limit debited)", got)
	}
}

// TestRefundApprovalsAreSerialized: approvals racing for one balance:
// those it covers pass, the others are refused, and the balance never
// goes below zero.
func TestRefundApprovalsAreSerialized(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(10_000)
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(100_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for range 8 {
		ids = append(ids, h.claim(pp, "3000").ID)
	}
	_, errs := atOnce(8, func(i int) (*kassa.Payout, error) { return h.refunds.Approve(ctx, h.store.ID, ids[i]) })
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case kassa.ErrorCode(err) != kassa.PaymentRequired:
			t.Fatalf("approval: %v", err)
		}
	}
	// Each takes 3000 sat and 30 sat of fee limit: three fit in 10,000.
	if ok != 3 || h.balance() != 910 {
		t.Fatalf("%d approved, balance %d; want 3 and 910", ok, h.balance())
	}
}

// TestRefundCancelAndMarkPaidGiveTheMoneyBack: a cancelled approved
// payout credits its debit back and frees its claim; one marked paid
// credits the debit back and keeps the claim; a spent pull payment takes
// no second claim.
func TestRefundCancelAndMarkPaidGiveTheMoneyBack(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(50_000)
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(10_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	p := h.claim(pp, "0")
	if _, err := h.refunds.Claim(ctx, pp.ID, "customer@example.com", decimal.Zero); err != kassa.ErrPullPaymentSpent {
		t.Fatalf("second claim of a spent pull payment: %v", err)
	}
	if _, err := h.refunds.Approve(ctx, h.store.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	if h.balance() != 39_900 {
		t.Fatalf("balance after approval = %d, want 39900", h.balance())
	}
	cancelled, err := h.refunds.Cancel(ctx, h.store.ID, p.ID)
	if err != nil || cancelled.State != kassa.PayoutCancelled {
		t.Fatalf("cancel: %+v, %v", cancelled, err)
	}
	if h.balance() != 50_000 {
		t.Fatalf("balance after cancel = %d, want 50000", h.balance())
	}
	if got, _ := h.db.PullPayment(ctx, pp.ID); !got.Claimed.IsZero() {
		t.Fatalf("claimed after cancel = %s, want 0", got.Claimed)
	}
	again := h.claim(pp, "0")
	if _, err := h.refunds.Approve(ctx, h.store.ID, again.ID); err != nil {
		t.Fatal(err)
	}
	paid, err := h.refunds.MarkPaid(ctx, h.store.ID, again.ID)
	if err != nil || paid.State != kassa.PayoutCompleted || !paid.MarkedPaid {
		t.Fatalf("mark paid: %+v, %v", paid, err)
	}
	if h.balance() != 50_000 {
		t.Fatalf("balance after mark paid = %d, want 50000", h.balance())
	}
	if _, err := h.refunds.Claim(ctx, pp.ID, "customer@example.com", decimal.Zero); err != kassa.ErrPullPaymentSpent {
		t.Fatalf("claim after a payout marked paid: %v", err)
	}
	types := []kassa.TransactionType{}
	for _, l := range h.refundLines() {
		types = append(types, l.Type)
	}
	want := []kassa.TransactionType{kassa.TransactionRefund, kassa.TransactionNetworkFee, kassa.TransactionRefundReturned,
		kassa.TransactionRefund, kassa.TransactionNetworkFee, kassa.TransactionRefundReturned}
	if len(types) != len(want) {
		t.Fatalf("lines %v, want %v", types, want)
	}
	for i := range want {
		if types[i] != want[i] {
			t.Fatalf("lines %v, want %v", types, want)
		}
	}
	if _, err := h.refunds.Cancel(ctx, h.store.ID, again.ID); err != kassa.ErrPayoutFinal {
		t.Fatalf("cancel of a completed payout: %v", err)
	}
}

// TestRefundRefusals: bad input is refused with a clear error and
// nothing is written.
func TestRefundRefusals(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(50_000)
	unpaid := h.invoice("1000", kassa.SATS)
	if _, err := h.refunds.RefundInvoice(ctx, h.store.ID, unpaid.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen}); err != kassa.ErrInvoiceNotPaid {
		t.Fatalf("refund of an unpaid invoice: %v", err)
	}
	if _, err := h.refunds.RefundInvoice(ctx, "another", unpaid.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen}); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("refund of another store's invoice: %v", err)
	}
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(1000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, dest, amount, code string }{
		{"above what is left", "customer@example.com", "1001", kassa.Invalid},
		{"mainnet address on regtest", "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4", "0", kassa.Invalid},
		{"no destination", "", "0", kassa.Invalid},
	} {
		if _, err := h.refunds.Claim(ctx, pp.ID, tc.dest, decimal.RequireFromString(tc.amount)); kassa.ErrorCode(err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.code)
		}
	}
	onchain, err := h.refunds.Claim(ctx, pp.ID, "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", decimal.NewFromInt(100))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.refunds.Approve(ctx, h.store.ID, onchain.ID); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("approval of an on-chain payout without a wallet: %v, want unavailable", err)
	}
	if _, err := h.refunds.Approve(ctx, "another", onchain.ID); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("approval through another store: %v", err)
	}
	if h.balance() != 50_000 || len(h.refundLines()) != 0 {
		t.Fatalf("refusals wrote: balance %d, lines %v", h.balance(), h.refundLines())
	}
}

// TestFiatRefundIsConvertedAtApproval: a refund of the invoice's price
// at today's rate is a pull payment in its currency, converted to
// satoshis at the approval's rate, which the payout records.
func TestFiatRefundIsConvertedAtApproval(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(100_000)
	inv := h.invoice("10", kassa.EUR) // 20,000 sat at 50,000 EUR/BTC
	h.payLightning(inv, inv.Amount)
	pp, err := h.refunds.RefundInvoice(ctx, h.store.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundCurrentRate, SubtractPercentage: decimal.NewFromInt(10)})
	if err != nil {
		t.Fatal(err)
	}
	if pp.Currency != kassa.EUR || !pp.Amount.Equal(decimal.NewFromInt(9)) {
		t.Fatalf("pull payment %s %s, want 9 EUR", pp.Amount, pp.Currency)
	}
	p := h.claim(pp, "0")
	approved, err := h.refunds.Approve(ctx, h.store.ID, p.ID)
	if err != nil {
		t.Fatal(err)
	}
	if approved.Amount != 18_000 || !approved.Rate.Equal(decimal.NewFromInt(50_000)) {
		t.Fatalf("approved %d sat at %s, want 18000 at 50000", approved.Amount, approved.Rate)
	}
}

// TestClusterRefundsRunOnAnyNode: refund commands sent to the node
// that does not run the store cross the cluster as data and run in the
// store's actor on its node: a refund of an invoice, a claim (then
// approved automatically), a claim approved by the merchant, a
// cancellation and a pull payment of no invoice each succeed and are
// recorded once, with their ledger lines and journal events.
func TestClusterRefundsRunOnAnyNode(t *testing.T) {
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Now())
	nodes := clusterNodes(t, 2, db, clock, 15*time.Minute)
	ctx := context.Background()
	st, err := nodes[0].sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1), ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	var owner, other *harness
	for _, n := range nodes {
		remote, err := n.sys.Service.cluster.remoteStore(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if remote {
			other = n
		} else {
			owner = n
		}
	}
	if owner == nil || other == nil {
		t.Fatal("no node runs the store, or both do")
	}
	owner.store = st
	if _, err := owner.sys.Service.TopUp(ctx, st.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	inv := owner.invoice("20000", kassa.SATS)
	owner.payLightning(inv, 20_000)
	if got := owner.get(inv.ID); got.Status != kassa.InvoiceSettled {
		t.Fatalf("invoice %s", got.Status)
	}
	balance := func() kassa.Sats {
		b, err := db.Balance(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := balance()
	svc := refund.New(refund.Config{Reader: db, Payouts: db, Ledger: other.sys.Service, Rates: fixedRates{}, Clock: clock, Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}})

	pp, err := svc.RefundInvoice(ctx, st.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		t.Fatalf("refund of the invoice from the other node: %v", err)
	}
	if pp.InvoiceID != inv.ID || !pp.Amount.Equal(decimal.NewFromInt(20_000)) {
		t.Fatalf("pull payment %+v", pp)
	}
	p, err := svc.Claim(ctx, pp.ID, "customer@example.com", decimal.NewFromInt(15_000))
	if err != nil {
		t.Fatalf("claim from the other node: %v", err)
	}
	if p.State != kassa.PayoutAwaitingApproval || p.Amount != 15_000 {
		t.Fatalf("claimed payout %+v", p)
	}
	approved, err := svc.Approve(ctx, st.ID, p.ID)
	if err != nil {
		t.Fatalf("approval from the other node: %v", err)
	}
	if approved.State != kassa.PayoutApproved || approved.Debited != 15_150 {
		t.Fatalf("approved payout %+v", approved)
	}
	if _, err := svc.Approve(ctx, st.ID, p.ID); !errors.Is(err, kassa.ErrPayoutNotAwaitingApproval) {
		t.Fatalf("second approval from the other node: %v", err)
	}
	rest, err := svc.Claim(ctx, pp.ID, "customer@example.com", decimal.Zero)
	if err != nil || rest.Amount != 5_000 {
		t.Fatalf("claim of the rest from the other node: %+v, %v", rest, err)
	}
	if _, err := svc.Claim(ctx, pp.ID, "customer@example.com", decimal.Zero); !errors.Is(err, kassa.ErrPullPaymentSpent) {
		t.Fatalf("a claim of a spent pull payment from the other node: %v", err)
	}
	if cancelled, err := svc.Cancel(ctx, st.ID, rest.ID); err != nil || cancelled.State != kassa.PayoutCancelled {
		t.Fatalf("cancellation from the other node: %+v, %v", cancelled, err)
	}
	if _, err := svc.CreatePullPayment(ctx, st.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(1000), Currency: kassa.SATS}); err != nil {
		t.Fatalf("pull payment from the other node: %v", err)
	}

	if got := balance(); got != before-15_150 {
		t.Fatalf("balance %d, want %d: the approval debited once", got, before-15_150)
	}
	stored, err := db.PullPayment(ctx, pp.ID)
	if err != nil || !stored.Claimed.Equal(decimal.NewFromInt(15_000)) {
		t.Fatalf("stored pull payment %+v, %v; want 15000 claimed", stored, err)
	}
	var pps, payouts int
	db.PullPayments(ctx, st.ID, func(*kassa.PullPayment) error { pps++; return nil })
	db.Payouts(ctx, st.ID, func(*kassa.Payout) error { payouts++; return nil })
	if pps != 2 || payouts != 2 {
		t.Fatalf("%d pull payments and %d payouts stored, want 2 and 2", pps, payouts)
	}
	if n := refundEvents(t, db, st.ID); n != 6 {
		t.Errorf("%d refund events in the store's journal, want 6 (refund, claim, approval, claim, cancellation, pull payment)", n)
	}
}

// TestRefundCommandRetriedIsRecordedOnce: a create or a claim whose
// call is retried (the same command, with the ids it carries) answers
// what the first made and writes nothing again; an approval retried is
// refused by the payout's state.
func TestRefundCommandRetriedIsRecordedOnce(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(100_000)
	now := h.clock.Now().UTC()
	create := &kassa.RefundCommand{Create: &kassa.PullPayment{ID: "pp_retried", StoreID: h.store.ID, Currency: kassa.SATS,
		Amount: decimal.NewFromInt(1000), CreatedAt: now}}
	claim := &kassa.RefundCommand{PayoutID: "po_retried", Claim: &kassa.RefundClaim{PullPaymentID: "pp_retried",
		Destination: kassa.Destination{Kind: kassa.DestinationLNURL, Address: "customer@example.com"}, Amount: decimal.NewFromInt(400), At: now}}
	approve := &kassa.RefundCommand{PayoutID: "po_retried", Approve: &kassa.RefundApproval{At: now}}
	for _, cmd := range []*kassa.RefundCommand{create, create, claim, claim, approve} {
		if _, err := h.sys.Service.ChangeRefunds(ctx, h.store.ID, cmd); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.sys.Service.ChangeRefunds(ctx, h.store.ID, approve); !errors.Is(err, kassa.ErrPayoutNotAwaitingApproval) {
		t.Fatalf("approval retried: %v", err)
	}
	again, err := h.sys.Service.ChangeRefunds(ctx, h.store.ID, claim)
	if err != nil || !again.Repeat || again.Payout.State != kassa.PayoutApproved {
		t.Fatalf("claim retried after the approval: %+v, %v; want the approved payout, written once", again, err)
	}
	pp, err := h.db.PullPayment(ctx, "pp_retried")
	if err != nil || !pp.Claimed.Equal(decimal.NewFromInt(400)) {
		t.Fatalf("pull payment %+v, %v; want 400 claimed once", pp, err)
	}
	if n := refundEvents(t, h.db, h.store.ID); n != 3 {
		t.Fatalf("%d refund events, want 3 (create, claim, approval)", n)
	}
	if lines := h.refundLines(); len(lines) != 2 {
		t.Fatalf("refund lines %+v, want the approval's two", lines)
	}
}

// nodeFunds is a service node that can send sendable satoshis over
// Lightning now (refund.Funds), whatever was approved before.
type nodeFunds struct{ sendable kassa.Sats }

func (f nodeFunds) LightningSendable(context.Context) (kassa.Sats, error) { return f.sendable, nil }
func (f nodeFunds) OnchainSpendable(context.Context) (kassa.Sats, error)  { return 0, nil }
func (f nodeFunds) OnchainFee(context.Context, string, kassa.Sats) (kassa.Sats, error) {
	return 0, nil
}

// TestApprovalCountsPayoutsApprovedNotYetSent: the node's funds pay
// the payouts approved and not yet sent first: a second approval that
// the node's capacity covers only without the first one's is refused
// (503) in the store's turn, and the balance is debited once.
func TestApprovalCountsPayoutsApprovedNotYetSent(t *testing.T) {
	h := newRefundHarness(t)
	ctx := context.Background()
	h.topUp(100_000)
	svc := refund.New(refund.Config{Reader: h.db, Payouts: h.db, Ledger: h.sys.Service, Rates: fixedRates{}, Clock: h.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}, Funds: nodeFunds{sendable: 30_000}})
	pp, err := svc.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(40_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	first := h.claim(pp, "20000")
	second := h.claim(pp, "20000")
	before := h.balance()
	if _, err := svc.Approve(ctx, h.store.ID, first.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, h.store.ID, second.ID); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("an approval the node covers only without the approved payout not yet sent: %v, want unavailable", err)
	}
	if got := h.balance(); got != before-20_200 {
		t.Fatalf("balance %d, want %d: one approval debited", got, before-20_200)
	}
	if p, err := h.db.Payout(ctx, second.ID); err != nil || p.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("refused payout %+v, %v; want it still awaiting approval", p, err)
	}
}
