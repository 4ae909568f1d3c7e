package kassatest

import (
	"slices"
	"testing"

	"github.com/kassapay/kassa"
)

// ForwardStorage is a store under test for forwarding: its journal's
// batches are also kassa.ForwardBatch.
type ForwardStorage struct {
	Journal  kassa.Journal
	Reader   kassa.Reader
	Forwards kassa.ForwardStore
}

// RunForwardStore runs the contract of kassa.ForwardBatch and
// kassa.ForwardStore against fresh stores made by open.
func RunForwardStore(t *testing.T, open func(t *testing.T) ForwardStorage) {
	cases := []struct {
		name string
		fn   func(t *testing.T, s ForwardStorage)
	}{
		{"Queue", forwardQueue},
		{"OpenAndSucceeded", forwardOpenAndSucceeded},
		{"RewriteTransaction", forwardRewriteTransaction},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open(t))
		})
	}
}

// fwBatch returns b as a ForwardBatch, failing the test when it is not.
func fwBatch(t testing.TB, b kassa.Batch) kassa.ForwardBatch {
	t.Helper()
	fb, ok := b.(kassa.ForwardBatch)
	if !ok {
		t.Fatalf("batch %T is no kassa.ForwardBatch", b)
	}
	return fb
}

func queued(t *testing.T, s ForwardStorage, store string) []int64 {
	t.Helper()
	var ids []int64
	if err := s.Forwards.QueuedTransfers(t.Context(), store, func(q kassa.QueuedTransfer) error {
		if q.StoreID != store {
			t.Errorf("QueuedTransfers(%s) gave a transfer of %s", store, q.StoreID)
		}
		ids = append(ids, q.TransactionID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return ids
}

func forwardingStores(t *testing.T, s ForwardStorage) []string {
	t.Helper()
	stores, err := s.Forwards.ForwardingStores(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(stores)
	return stores
}

func openForwards(t *testing.T, s ForwardStorage, store string) []*kassa.Forward {
	t.Helper()
	var out []*kassa.Forward
	if err := s.Forwards.OpenForwards(t.Context(), store, func(f *kassa.Forward) error {
		out = append(out, f)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func forwardQueue(t *testing.T, s ForwardStorage) {
	if got := forwardingStores(t, s); len(got) != 0 {
		t.Errorf("ForwardingStores of an empty store = %v", got)
	}
	Commit(t, s.Journal, func(b kassa.Batch) {
		fb := fwBatch(t, b)
		// Queued out of order, in two stores; 256 and 3 order
		// differently as text and as numbers.
		fb.QueueTransfer(kassa.QueuedTransfer{TransactionID: 256, StoreID: "s1", InvoiceID: "inv_b", Amount: 2000})
		fb.QueueTransfer(kassa.QueuedTransfer{TransactionID: 3, StoreID: "s1", InvoiceID: "inv_a", Amount: 1000, Comment: "thanks"})
		fb.QueueTransfer(kassa.QueuedTransfer{TransactionID: 7, StoreID: "s2", InvoiceID: "inv_c", Amount: 500})
	})
	if got := queued(t, s, "s1"); !slices.Equal(got, []int64{3, 256}) {
		t.Errorf("QueuedTransfers(s1) = %v, want [3 256], oldest first", got)
	}
	if got := queued(t, s, "s2"); !slices.Equal(got, []int64{7}) {
		t.Errorf("QueuedTransfers(s2) = %v", got)
	}
	if got := queued(t, s, "s9"); len(got) != 0 {
		t.Errorf("QueuedTransfers of an unknown store = %v", got)
	}
	var q kassa.QueuedTransfer
	if err := s.Forwards.QueuedTransfers(t.Context(), "s1", func(x kassa.QueuedTransfer) error {
		if x.TransactionID == 3 {
			q = x
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "queued transfer", q, kassa.QueuedTransfer{TransactionID: 3, StoreID: "s1", InvoiceID: "inv_a", Amount: 1000, Comment: "thanks"})
	if got := forwardingStores(t, s); !slices.Equal(got, []string{"s1", "s2"}) {
		t.Errorf("ForwardingStores = %v, want [s1 s2]", got)
	}
}

func forwardOpenAndSucceeded(t *testing.T, s ForwardStorage) {
	q1 := kassa.QueuedTransfer{TransactionID: 1, StoreID: "s1", InvoiceID: "inv_a", Amount: 1000}
	q2 := kassa.QueuedTransfer{TransactionID: 2, StoreID: "s1", InvoiceID: "inv_b", Amount: 3000}
	q3 := kassa.QueuedTransfer{TransactionID: 4, StoreID: "s1", InvoiceID: "inv_c", Amount: 5000}
	Commit(t, s.Journal, func(b kassa.Batch) {
		fb := fwBatch(t, b)
		fb.QueueTransfer(q1)
		fb.QueueTransfer(q2)
		fb.QueueTransfer(q3)
	})
	f := &kassa.Forward{ID: "fwd_1", StoreID: "s1", Status: kassa.ForwardOpen, Address: "shop@example.com",
		Transfers: []kassa.QueuedTransfer{q1, q2}, Amount: 4000, NextTry: Epoch, CreatedAt: Epoch, UpdatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) { fwBatch(t, b).PutForward(f) })
	if got := queued(t, s, "s1"); !slices.Equal(got, []int64{4}) {
		t.Errorf("QueuedTransfers after the forward took two = %v, want [4]", got)
	}
	open := openForwards(t, s, "s1")
	if len(open) != 1 {
		t.Fatalf("OpenForwards = %d forwards, want 1", len(open))
	}
	sameJSON(t, "open forward", open[0], f)
	if got := openForwards(t, s, "s2"); len(got) != 0 {
		t.Errorf("OpenForwards of another store = %d", len(got))
	}

	// The last queued transfer leaves too; the open forward keeps the
	// store forwarding.
	Commit(t, s.Journal, func(b kassa.Batch) {
		fwBatch(t, b).PutForward(&kassa.Forward{ID: "fwd_2", StoreID: "s1", Status: kassa.ForwardOpen,
			Transfers: []kassa.QueuedTransfer{q3}, Amount: 5000, CreatedAt: Epoch, UpdatedAt: Epoch})
	})
	if got := forwardingStores(t, s); !slices.Equal(got, []string{"s1"}) {
		t.Errorf("ForwardingStores with open forwards = %v", got)
	}
	for _, id := range []string{"fwd_1", "fwd_2"} {
		done := &kassa.Forward{ID: id, StoreID: "s1", Status: kassa.ForwardSucceeded, CreatedAt: Epoch, UpdatedAt: Epoch}
		Commit(t, s.Journal, func(b kassa.Batch) { fwBatch(t, b).PutForward(done) })
	}
	if got := openForwards(t, s, "s1"); len(got) != 0 {
		t.Errorf("OpenForwards after both succeeded = %d", len(got))
	}
	if got := forwardingStores(t, s); len(got) != 0 {
		t.Errorf("ForwardingStores with nothing left = %v", got)
	}
}

func forwardRewriteTransaction(t *testing.T, s ForwardStorage) {
	ctx := t.Context()
	tx := &kassa.Transaction{StoreID: "s1", InvoiceID: "inv_a", Type: kassa.TransactionTopUp,
		Status: kassa.TransactionPending, Amount: 700, CreatedAt: Epoch}
	Commit(t, s.Journal, func(b kassa.Batch) { b.PutTransaction(tx) })
	if tx.ID <= 0 {
		t.Fatalf("PutTransaction left ID %d", tx.ID)
	}
	rewritten := *tx
	rewritten.Status = kassa.TransactionSettled
	rewritten.Comment = "forwarded"
	Commit(t, s.Journal, func(b kassa.Batch) { fwBatch(t, b).RewriteTransaction(&rewritten) })
	got, err := s.Reader.Transaction(ctx, tx.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "rewritten transaction", got, &rewritten)
	lines, err := s.Reader.TransactionsByInvoice(ctx, "inv_a")
	if err != nil || len(lines) != 1 || lines[0].Status != kassa.TransactionSettled {
		t.Errorf("TransactionsByInvoice after the rewrite = %v, %v", lines, err)
	}
	if bal, err := s.Reader.Balance(ctx, "s1"); err != nil || bal != 700 {
		t.Errorf("Balance after the rewrite = %d, %v; want 700, the delta applied once", bal, err)
	}
	b := s.Journal.NewBatch()
	fwBatch(t, b).RewriteTransaction(&kassa.Transaction{StoreID: "s1", Amount: 1})
	if err := s.Journal.Commit(ctx, b); err == nil {
		t.Error("rewriting a transaction without an ID committed")
	}
}
