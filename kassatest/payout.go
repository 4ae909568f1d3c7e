package kassatest

import (
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// PayoutStorage is a store under test for refunds: its journal's
// batches are also kassa.PayoutBatch.
type PayoutStorage struct {
	Journal kassa.Journal
	Reader  kassa.Reader
	Payouts kassa.PayoutStore
}

// RunPayoutStore runs the contract of kassa.PayoutBatch and
// kassa.PayoutStore against fresh stores made by open.
func RunPayoutStore(t *testing.T, open func(t *testing.T) PayoutStorage) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s PayoutStorage)
	}{
		{"PullPayments", payoutPullPayments},
		{"ApprovalWithItsDebit", payoutApprovalWithItsDebit},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

func poBatch(t testing.TB, b kassa.Batch) kassa.PayoutBatch {
	t.Helper()
	pb, ok := b.(kassa.PayoutBatch)
	if !ok {
		t.Fatalf("batch %T is no kassa.PayoutBatch", b)
	}
	return pb
}

func payoutPullPayments(t *testing.T, s PayoutStorage) {
	ctx := t.Context()
	if _, err := s.Payouts.PullPayment(ctx, "pp_none"); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("PullPayment of an unknown id: %v", err)
	}
	first := &kassa.PullPayment{ID: "pp_1", StoreID: "s1", InvoiceID: "inv_1", Currency: kassa.USD,
		Amount: decimal.RequireFromString("20.50"), Claimed: decimal.Zero, Rate: decimal.NewFromInt(50_000), CreatedAt: Epoch}
	second := &kassa.PullPayment{ID: "pp_2", StoreID: "s1", Currency: kassa.SATS, Amount: decimal.NewFromInt(1000),
		Claimed: decimal.Zero, CreatedAt: Epoch.Add(time.Minute), ExpiresAt: Epoch.Add(time.Hour)}
	other := &kassa.PullPayment{ID: "pp_3", StoreID: "s2", Currency: kassa.SATS, Amount: decimal.NewFromInt(5), Claimed: decimal.Zero, CreatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) {
		pb := poBatch(t, b)
		pb.PutPullPayment(first)
		pb.PutPullPayment(second)
		pb.PutPullPayment(other)
	})
	got, err := s.Payouts.PullPayment(ctx, "pp_1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "pull payment", got, first)
	var ids []string
	if err := s.Payouts.PullPayments(ctx, "s1", func(pp *kassa.PullPayment) error { ids = append(ids, pp.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(ids, []string{"pp_2", "pp_1"}) {
		t.Errorf("PullPayments(s1) = %v, want [pp_2 pp_1], newest first", ids)
	}
	// Written again with a claim: the same record, changed.
	claimed := *first
	claimed.Claimed = decimal.RequireFromString("5.25")
	Commit(t, s.Journal, func(b kassa.Batch) { poBatch(t, b).PutPullPayment(&claimed) })
	if got, err := s.Payouts.PullPayment(ctx, "pp_1"); err != nil || !got.Claimed.Equal(claimed.Claimed) {
		t.Errorf("PullPayment after a claim = %+v, %v", got, err)
	}
	ids = nil
	if err := s.Payouts.PullPayments(ctx, "s1", func(pp *kassa.PullPayment) error { ids = append(ids, pp.ID); return nil }); err != nil || len(ids) != 2 {
		t.Errorf("PullPayments(s1) after a rewrite = %v, %v", ids, err)
	}
}

func toSend(t *testing.T, s PayoutStorage) []string {
	t.Helper()
	var ids []string
	if err := s.Payouts.PayoutsToSend(t.Context(), func(p *kassa.Payout) error { ids = append(ids, p.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(ids)
	return ids
}

func payoutApprovalWithItsDebit(t *testing.T, s PayoutStorage) {
	ctx := t.Context()
	Commit(t, s.Journal, func(b kassa.Batch) {
		b.PutTransaction(&kassa.Transaction{StoreID: "s1", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 5000, CreatedAt: Epoch})
	})
	p := &kassa.Payout{ID: "po_1", StoreID: "s1", PullPaymentID: "pp_1", InvoiceID: "inv_1",
		Destination: kassa.Destination{Kind: kassa.DestinationLNURL, Address: "a@example.com"},
		State:       kassa.PayoutAwaitingApproval, Currency: kassa.SATS, Claimed: decimal.NewFromInt(1200), Amount: 1200,
		CreatedAt: Epoch, UpdatedAt: Epoch}
	other := &kassa.Payout{ID: "po_2", StoreID: "s2", PullPaymentID: "pp_9", State: kassa.PayoutAwaitingApproval,
		Currency: kassa.SATS, Claimed: decimal.NewFromInt(1), Amount: 1, CreatedAt: Epoch, UpdatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) {
		poBatch(t, b).PutPayout(p)
		poBatch(t, b).PutPayout(other)
	})
	if got := toSend(t, s); len(got) != 0 {
		t.Errorf("PayoutsToSend with none approved = %v", got)
	}
	approved := *p
	approved.State, approved.Debited, approved.UpdatedAt = kassa.PayoutApproved, 1200, Epoch.Add(time.Minute)
	debit := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionRefund, Status: kassa.TransactionSettled, Amount: 1200, CreatedAt: Epoch.Add(time.Minute)}
	Commit(t, s.Journal, func(b kassa.Batch) {
		poBatch(t, b).PutPayout(&approved)
		b.PutTransaction(debit)
	})
	got, err := s.Payouts.Payout(ctx, "po_1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "approved payout", got, &approved)
	if bal, err := s.Reader.Balance(ctx, "s1"); err != nil || bal != 3800 {
		t.Errorf("Balance after the approval = %d, %v; want 3800", bal, err)
	}
	if got := toSend(t, s); !slices.Equal(got, []string{"po_1"}) {
		t.Errorf("PayoutsToSend = %v, want [po_1]", got)
	}
	var ids []string
	if err := s.Payouts.Payouts(ctx, "s1", func(p *kassa.Payout) error { ids = append(ids, p.ID); return nil }); err != nil || !slices.Equal(ids, []string{"po_1"}) {
		t.Errorf("Payouts(s1) = %v, %v", ids, err)
	}
	failed := approved
	failed.State, failed.Debited, failed.LastError = kassa.PayoutFailed, 0, "no route"
	Commit(t, s.Journal, func(b kassa.Batch) {
		poBatch(t, b).PutPayout(&failed)
		b.PutTransaction(&kassa.Transaction{StoreID: "s1", InvoiceID: "inv_1", Type: kassa.TransactionRefundReturned, Status: kassa.TransactionSettled, Amount: 1200, CreatedAt: Epoch.Add(2 * time.Minute)})
	})
	if got := toSend(t, s); len(got) != 0 {
		t.Errorf("PayoutsToSend after it failed = %v", got)
	}
	if bal, err := s.Reader.Balance(ctx, "s1"); err != nil || bal != 5000 {
		t.Errorf("Balance after the failure = %d, %v; want 5000, the debit credited back", bal, err)
	}
	if _, err := s.Payouts.Payout(ctx, "po_none"); kassa.ErrorCode(err) != kassa.NotFound {
		t.Errorf("Payout of an unknown id: %v", err)
	}
}
