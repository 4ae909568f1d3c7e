package persistence

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// backends are the stores the suite runs against. Each gives a directory
// and options that a later Open finds again, so that tests can reopen.
var backends = []struct {
	name string
	new  func(t *testing.T) (dir string, o Options)
}{
	{"mem", func(t *testing.T) (string, Options) { return "kassa", Options{FS: vfs.NewMem()} }},
	{"disk", func(t *testing.T) (string, Options) { return t.TempDir(), Options{} }},
}

// suite is every case that runs against each backend.
var suite = []struct {
	name string
	fn   func(t *testing.T, h *harness)
}{
	{"Events", testEvents},
	{"EventsFnError", testEventsFnError},
	{"Snapshots", testSnapshots},
	{"NotFound", testNotFound},
	{"UncommittedBatchInvisible", testUncommittedBatchInvisible},
	{"BatchBuildError", testBatchBuildError},
	{"CommitAfterClose", testCommitAfterClose},
	{"ForeignBatch", testForeignBatch},
	{"TransactionIDs", testTransactionIDs},
	{"TransactionIDsConcurrent", testTransactionIDsConcurrent},
	{"TransactionIDsAfterReopen", testTransactionIDsAfterReopen},
	{"Transactions", testTransactions},
	{"TransactionsByInvoice", testTransactionsByInvoice},
	{"Balance", testBalance},
	{"BalanceConcurrent", testBalanceConcurrent},
	{"BalanceReopenCompact", testBalanceReopenCompact},
	{"BalanceCachedUnderWrites", testBalanceCachedUnderWrites},
	{"CompactAll", testCompactAll},
	{"KeyValue", testKeyValue},
	{"Invoices", testInvoices},
	{"InvoicesDateFilter", testInvoicesDateFilter},
	{"InvoicesBadCursor", testInvoicesBadCursor},
	{"InvoiceLookups", testInvoiceLookups},
	{"OpenInvoices", testOpenInvoices},
	{"Stores", testStores},
	{"PaymentRequests", testPaymentRequests},
	{"Webhooks", testWebhooks},
	{"Deliveries", testDeliveries},
	{"Outbox", testOutbox},
}

func TestDB(t *testing.T) {
	for _, bk := range backends {
		t.Run(bk.name, func(t *testing.T) {
			t.Parallel()
			for _, c := range suite {
				t.Run(c.name, func(t *testing.T) {
					t.Parallel()
					dir, o := bk.new(t)
					c.fn(t, newHarness(t, dir, o))
				})
			}
		})
	}
}

// harness holds one open DB and can close and reopen it on the same
// storage.
type harness struct {
	t    *testing.T
	dir  string
	opts Options
	db   *DB
}

func newHarness(t *testing.T, dir string, o Options) *harness {
	h := &harness{t: t, dir: dir, opts: o}
	h.open()
	t.Cleanup(func() {
		if err := h.db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return h
}

func (h *harness) open() {
	h.t.Helper()
	db, err := Open(h.dir, h.opts)
	if err != nil {
		h.t.Fatalf("open: %v", err)
	}
	h.db = db
}

// reopen closes the DB and opens it again on the same storage.
func (h *harness) reopen() {
	h.t.Helper()
	if err := h.db.Close(); err != nil {
		h.t.Fatalf("close: %v", err)
	}
	h.open()
}

// commit builds one batch with build and commits it.
func commit(t testing.TB, j kassa.Journal, build func(b kassa.Batch)) {
	t.Helper()
	b := j.NewBatch()
	build(b)
	if err := j.Commit(t.Context(), b); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

func wantCode(t *testing.T, what string, err error, code string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want %s", what, code)
		return
	}
	if got := kassa.ErrorCode(err); got != code {
		t.Errorf("%s: error %v has code %s, want %s", what, err, got, code)
	}
}

// sameJSON compares two values by their encoding, which is what the store
// keeps (decimals and times compare badly with reflect.DeepEqual).
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		t.Errorf("%s:\n got %s\nwant %s", what, g, w)
	}
}

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func testEvents(t *testing.T, h *harness) {
	ab := kassa.Stream{Kind: kassa.KindInvoice, ID: "ab"}
	abc := kassa.Stream{Kind: kassa.KindInvoice, ID: "abc"}
	a := kassa.Stream{Kind: kassa.KindInvoice, ID: "a"}
	storeAB := kassa.Stream{Kind: kassa.KindStore, ID: "ab"}
	event := func(s kassa.Stream, seq uint64) []byte { return fmt.Appendf(nil, "%s/%s#%d", s.Kind, s.ID, seq) }

	// 300 events cross the byte boundary at 256; they are appended in
	// reverse so that order comes from the keys, not from insertion.
	const n = 300
	commit(t, h.db, func(b kassa.Batch) {
		for seq := uint64(n); seq >= 1; seq-- {
			b.AppendEvent(ab, seq, event(ab, seq))
		}
		for seq := uint64(1); seq <= 3; seq++ {
			b.AppendEvent(abc, seq, event(abc, seq))
			b.AppendEvent(storeAB, seq, event(storeAB, seq))
		}
		b.AppendEvent(a, 1, event(a, 1))
	})

	type got struct {
		seq   uint64
		event []byte
	}
	events := func(s kassa.Stream, after uint64) []got {
		t.Helper()
		var out []got
		err := h.db.Events(t.Context(), s, after, func(seq uint64, e []byte) error {
			out = append(out, got{seq, e}) // kept after the call on purpose
			return nil
		})
		if err != nil {
			t.Fatalf("events %v after %d: %v", s, after, err)
		}
		return out
	}
	check := func(s kassa.Stream, after, last uint64) {
		t.Helper()
		es := events(s, after)
		want := int(last) - int(min(after, last))
		if len(es) != want {
			t.Fatalf("events %v after %d: %d events, want %d", s, after, len(es), want)
		}
		for i, e := range es {
			seq := after + 1 + uint64(i)
			if e.seq != seq || !bytes.Equal(e.event, event(s, seq)) {
				t.Fatalf("events %v after %d: #%d is %d %q, want %d %q", s, after, i, e.seq, e.event, seq, event(s, seq))
			}
		}
	}
	for _, c := range []struct {
		s    kassa.Stream
		last uint64
	}{{ab, n}, {abc, 3}, {a, 1}, {storeAB, 3}, {kassa.Stream{Kind: kassa.KindInvoice, ID: "b"}, 0}} {
		seq, err := h.db.StreamSeq(t.Context(), c.s)
		if err != nil || seq != c.last {
			t.Errorf("StreamSeq(%v) = %d, %v; want %d", c.s, seq, err, c.last)
		}
		for _, after := range []uint64{0, 1, c.last / 2, 255, 256, c.last - 1, c.last, c.last + 1, math.MaxUint64} {
			check(c.s, after, c.last)
		}
	}

	// Appending continues the stream.
	commit(t, h.db, func(b kassa.Batch) { b.AppendEvent(abc, 4, event(abc, 4)) })
	check(abc, 2, 4)
	check(ab, 0, n)
}

func testEventsFnError(t *testing.T, h *harness) {
	s := kassa.Stream{Kind: kassa.KindStore, ID: "s1"}
	commit(t, h.db, func(b kassa.Batch) {
		for seq := uint64(1); seq <= 5; seq++ {
			b.AppendEvent(s, seq, []byte("e"))
		}
	})
	stop := errors.New("stop")
	calls := 0
	err := h.db.Events(t.Context(), s, 0, func(seq uint64, _ []byte) error {
		calls++
		if seq == 2 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || calls != 2 {
		t.Errorf("Events with failing fn: %v after %d calls, want %v after 2", err, calls, stop)
	}
}

func testSnapshots(t *testing.T, h *harness) {
	inv := kassatest.NewInvoice("inv_1", "s1", t0)
	st := kassatest.NewStore("s1", "key_a")
	commit(t, h.db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte("{}"))
		b.PutInvoice(inv, nil, 1)
		b.PutStore(st, 7)
	})
	got, seq, err := h.db.InvoiceSnapshot(t.Context(), inv.ID)
	if err != nil || seq != 1 {
		t.Fatalf("InvoiceSnapshot = seq %d, %v; want 1", seq, err)
	}
	sameJSON(t, "invoice snapshot", got, inv)
	gotStore, seq, err := h.db.StoreSnapshot(t.Context(), st.ID)
	if err != nil || seq != 7 {
		t.Fatalf("StoreSnapshot = seq %d, %v; want 7", seq, err)
	}
	sameJSON(t, "store snapshot", gotStore, st)

	next := *inv
	next.Status = kassa.InvoiceSettled
	next.SettledAt = t0.Add(time.Minute)
	next.Payments = []kassa.Payment{{ID: "tx:0", Method: kassa.MethodOnchain, TxID: "tx", Amount: 1000, ReceivedAt: t0.Add(time.Minute)}}
	commit(t, h.db, func(b kassa.Batch) { b.PutInvoice(&next, inv, 2) })
	got, seq, err = h.db.InvoiceSnapshot(t.Context(), inv.ID)
	if err != nil || seq != 2 {
		t.Fatalf("InvoiceSnapshot after update = seq %d, %v; want 2", seq, err)
	}
	sameJSON(t, "updated invoice snapshot", got, &next)
	viaReader, err := h.db.Invoice(t.Context(), inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Invoice", viaReader, &next)

	h.reopen()
	got, seq, err = h.db.InvoiceSnapshot(t.Context(), inv.ID)
	if err != nil || seq != 2 {
		t.Fatalf("InvoiceSnapshot after reopen = seq %d, %v; want 2", seq, err)
	}
	sameJSON(t, "invoice snapshot after reopen", got, &next)
}

func testNotFound(t *testing.T, h *harness) {
	ctx := t.Context()
	// A neighbour of every missing record exists, so that a lookup that
	// matched by prefix would find something.
	commit(t, h.db, func(b kassa.Batch) {
		inv := kassatest.NewInvoice("inv_10", "s10", t0)
		inv.OnchainAddress, inv.PaymentHash = "bc1q10", "hash10"
		b.PutInvoice(inv, nil, 1)
		b.PutStore(kassatest.NewStore("s10", "key_10"), 1)
		b.PutPaymentRequest(&kassa.PaymentRequest{ID: "pr_10", StoreID: "s10", CreatedAt: t0})
		b.PutWebhook(&kassa.Webhook{ID: "wh_10", StoreID: "s10"})
		b.PutDelivery(&kassa.Delivery{ID: "dl_10", WebhookID: "wh_10", CreatedAt: t0}, true)
	})
	_, _, err := h.db.InvoiceSnapshot(ctx, "inv_1")
	wantCode(t, "InvoiceSnapshot", err, kassa.NotFound)
	_, err = h.db.Invoice(ctx, "inv_1")
	wantCode(t, "Invoice", err, kassa.NotFound)
	_, _, err = h.db.StoreSnapshot(ctx, "s1")
	wantCode(t, "StoreSnapshot", err, kassa.NotFound)
	_, err = h.db.Store(ctx, "s1")
	wantCode(t, "Store", err, kassa.NotFound)
	_, err = h.db.StoreByAPIKey(ctx, "key_1")
	wantCode(t, "StoreByAPIKey", err, kassa.NotFound)
	_, err = h.db.InvoiceIDByAddress(ctx, "bc1q1")
	wantCode(t, "InvoiceIDByAddress", err, kassa.NotFound)
	_, err = h.db.InvoiceIDByPaymentHash(ctx, "hash1")
	wantCode(t, "InvoiceIDByPaymentHash", err, kassa.NotFound)
	_, err = h.db.Transaction(ctx, 1)
	wantCode(t, "Transaction", err, kassa.NotFound)
	_, err = h.db.PaymentRequest(ctx, "pr_1")
	wantCode(t, "PaymentRequest", err, kassa.NotFound)
	_, err = h.db.Webhook(ctx, "wh_1")
	wantCode(t, "Webhook", err, kassa.NotFound)
	_, err = h.db.Delivery(ctx, "dl_1")
	wantCode(t, "Delivery", err, kassa.NotFound)

	// Missing streams, lists and balances are empty, not errors.
	if seq, err := h.db.StreamSeq(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_1"}); seq != 0 || err != nil {
		t.Errorf("StreamSeq of missing stream = %d, %v; want 0, nil", seq, err)
	}
	if txs, err := h.db.TransactionsByInvoice(ctx, "inv_1"); len(txs) != 0 || err != nil {
		t.Errorf("TransactionsByInvoice of missing invoice = %v, %v", txs, err)
	}
	if bal, err := h.db.Balance(ctx, "s1"); bal != 0 || err != nil {
		t.Errorf("Balance of missing store = %d, %v", bal, err)
	}
}

func topUp(store string, amount kassa.Sats, at time.Time) *kassa.Transaction {
	return &kassa.Transaction{StoreID: store, Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: amount, CreatedAt: at}
}

func fee(store, invoice string, amount kassa.Sats, at time.Time) *kassa.Transaction {
	return &kassa.Transaction{StoreID: store, InvoiceID: invoice, Type: kassa.TransactionFee, Status: kassa.TransactionSettled, Amount: amount, FeeAmount: amount, CreatedAt: at}
}

func transfer(store, invoice string, amount kassa.Sats, at time.Time) *kassa.Transaction {
	return &kassa.Transaction{StoreID: store, InvoiceID: invoice, Type: kassa.TransactionTransfer, Status: kassa.TransactionSettled, Amount: amount, FullAmount: amount, CreatedAt: at}
}

// fullBatch writes one of everything a batch can hold; checkFullBatch and
// checkNothingOfFullBatch look for it.
func fullBatch(b kassa.Batch) {
	inv := kassatest.NewInvoice("inv_1", "s1", t0)
	inv.OnchainAddress, inv.PaymentHash = "bc1qaddr", "hash1"
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte("{}"))
	b.PutInvoice(inv, nil, 1)
	b.PutStore(kassatest.NewStore("s1", "key_1"), 1)
	b.PutTransaction(topUp("s1", 500, t0))
	b.PutPaymentRequest(&kassa.PaymentRequest{ID: "pr_1", StoreID: "s1", CreatedAt: t0})
	b.MarkPaymentRequestPaid("pr_1", inv.ID)
	b.PutWebhook(&kassa.Webhook{ID: "wh_1", StoreID: "s1"})
	b.PutDelivery(&kassa.Delivery{ID: "dl_1", WebhookID: "wh_1", CreatedAt: t0, Payload: json.RawMessage(`{}`)}, true)
}

// checkNothingOfFullBatch fails if anything written by fullBatch is
// visible.
func checkNothingOfFullBatch(t *testing.T, db *DB) {
	t.Helper()
	ctx := t.Context()
	if seq, err := db.StreamSeq(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_1"}); seq != 0 || err != nil {
		t.Errorf("StreamSeq = %d, %v; want 0", seq, err)
	}
	_, err := db.Invoice(ctx, "inv_1")
	wantCode(t, "Invoice", err, kassa.NotFound)
	_, err = db.InvoiceIDByAddress(ctx, "bc1qaddr")
	wantCode(t, "InvoiceIDByAddress", err, kassa.NotFound)
	_, err = db.Store(ctx, "s1")
	wantCode(t, "Store", err, kassa.NotFound)
	_, err = db.StoreByAPIKey(ctx, "key_1")
	wantCode(t, "StoreByAPIKey", err, kassa.NotFound)
	_, err = db.PaymentRequest(ctx, "pr_1")
	wantCode(t, "PaymentRequest", err, kassa.NotFound)
	_, err = db.Webhook(ctx, "wh_1")
	wantCode(t, "Webhook", err, kassa.NotFound)
	if bal, err := db.Balance(ctx, "s1"); bal != 0 || err != nil {
		t.Errorf("Balance = %d, %v; want 0", bal, err)
	}
	n := 0
	count := func() { n++ }
	if _, err := db.Invoices(ctx, "s1", kassa.ListQuery{}, func(*kassa.Invoice) error { count(); return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Transactions(ctx, "s1", kassa.ListQuery{}, func(*kassa.Transaction) error { count(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.OpenInvoices(ctx, func(string, string, time.Time) error { count(); return nil }); err != nil {
		t.Fatal(err)
	}
	if err := db.PendingDeliveries(ctx, func(string, string) error { count(); return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d index entries visible, want none", n)
	}
}

// checkFullBatch fails unless everything written by fullBatch is visible.
func checkFullBatch(t *testing.T, db *DB) {
	t.Helper()
	ctx := t.Context()
	if seq, err := db.StreamSeq(ctx, kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_1"}); seq != 1 || err != nil {
		t.Errorf("StreamSeq = %d, %v; want 1", seq, err)
	}
	if _, err := db.Invoice(ctx, "inv_1"); err != nil {
		t.Errorf("Invoice: %v", err)
	}
	if id, err := db.InvoiceIDByAddress(ctx, "bc1qaddr"); id != "inv_1" || err != nil {
		t.Errorf("InvoiceIDByAddress = %q, %v", id, err)
	}
	if st, err := db.StoreByAPIKey(ctx, "key_1"); err != nil || st.ID != "s1" {
		t.Errorf("StoreByAPIKey = %v, %v", st, err)
	}
	if pr, err := db.PaymentRequest(ctx, "pr_1"); err != nil || pr.PaidInvoiceID != "inv_1" {
		t.Errorf("PaymentRequest = %v, %v", pr, err)
	}
	if bal, err := db.Balance(ctx, "s1"); bal != 500 || err != nil {
		t.Errorf("Balance = %d, %v; want 500", bal, err)
	}
	pending := 0
	if err := db.PendingDeliveries(ctx, func(string, string) error { pending++; return nil }); err != nil || pending != 1 {
		t.Errorf("PendingDeliveries: %d, %v; want 1", pending, err)
	}
}

func testUncommittedBatchInvisible(t *testing.T, h *harness) {
	b := h.db.NewBatch()
	fullBatch(b)
	checkNothingOfFullBatch(t, h.db)
	if err := h.db.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	checkFullBatch(t, h.db)

	// A batch never committed leaves nothing behind, also after reopen.
	abandoned := h.db.NewBatch()
	abandoned.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_2"}, 1, []byte("{}"))
	abandoned.PutTransaction(topUp("s1", 1000, t0))
	h.reopen()
	if seq, _ := h.db.StreamSeq(t.Context(), kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_2"}); seq != 0 {
		t.Errorf("StreamSeq of abandoned batch = %d, want 0", seq)
	}
	checkFullBatch(t, h.db)
}

func testBatchBuildError(t *testing.T, h *harness) {
	// Metadata that is not JSON cannot be encoded, so the batch holds an
	// error; Commit must report it and write none of the batch, not even
	// what came before the failing write.
	bad := kassatest.NewInvoice("inv_bad", "s1", t0)
	bad.Metadata = json.RawMessage(`{not json`)
	b := h.db.NewBatch()
	fullBatch(b)
	b.PutInvoice(bad, nil, 1)
	b.PutTransaction(topUp("s1", 1, t0))
	if err := h.db.Commit(t.Context(), b); err == nil {
		t.Fatal("Commit of a batch with an unencodable invoice succeeded")
	}
	checkNothingOfFullBatch(t, h.db)
	_, err := h.db.Invoice(t.Context(), "inv_bad")
	wantCode(t, "Invoice", err, kassa.NotFound)

	// The store is still usable.
	commit(t, h.db, fullBatch)
	checkFullBatch(t, h.db)
}

func testCommitAfterClose(t *testing.T, h *harness) {
	b := h.db.NewBatch()
	fullBatch(b)
	if err := h.db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := h.db.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := h.db.Commit(t.Context(), b); err == nil {
		t.Error("Commit after Close succeeded")
	}
	late := h.db.NewBatch()
	fullBatch(late)
	if err := h.db.Commit(t.Context(), late); err == nil {
		t.Error("Commit of a batch made after Close succeeded")
	}
	if err := h.db.PutValue(t.Context(), "k", []byte("v"), time.Now().Add(time.Hour)); err == nil {
		t.Error("PutValue after Close succeeded")
	}
	if _, _, err := h.db.GetValue(t.Context(), "k"); err == nil {
		t.Error("GetValue after Close succeeded")
	}
	h.open()
	checkNothingOfFullBatch(t, h.db)
	if _, ok, err := h.db.GetValue(t.Context(), "k"); ok || err != nil {
		t.Errorf("GetValue after reopen = %v, %v; want nothing", ok, err)
	}
}

// foreignBatch is a kassa.Batch of another implementation.
type foreignBatch struct{ kassa.Batch }

func testForeignBatch(t *testing.T, h *harness) {
	if err := h.db.Commit(t.Context(), foreignBatch{}); err == nil {
		t.Error("Commit of a foreign batch succeeded")
	}
}

func testTransactionIDs(t *testing.T, h *harness) {
	var txs []*kassa.Transaction
	commit(t, h.db, func(b kassa.Batch) {
		for i := range 5 {
			tx := topUp("s1", kassa.Sats(i+1), t0)
			b.PutTransaction(tx)
			txs = append(txs, tx)
		}
	})
	for i, tx := range txs {
		if tx.ID != int64(i+1) {
			t.Errorf("transaction %d has ID %d, want %d", i, tx.ID, i+1)
		}
		got, err := h.db.Transaction(t.Context(), tx.ID)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "transaction", got, tx)
	}
}

// release starts n goroutines at once, each running fn with its index, and
// waits for all.
func release(n int, fn func(i int)) {
	var start, done sync.WaitGroup
	start.Add(1)
	for i := range n {
		done.Go(func() {
			start.Wait()
			fn(i)
		})
	}
	start.Done()
	done.Wait()
}

func testTransactionIDsConcurrent(t *testing.T, h *harness) {
	const n = 50
	ids := make([][2]int64, n)
	errs := make([]error, n)
	release(n, func(i int) {
		b := h.db.NewBatch()
		first, second := topUp("s1", 1, t0), fee("s1", "", 1, t0)
		b.PutTransaction(first)
		b.PutTransaction(second)
		ids[i] = [2]int64{first.ID, second.ID}
		errs[i] = h.db.Commit(t.Context(), b)
	})
	seen := map[int64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("commit %d: %v", i, errs[i])
		}
		if ids[i][0] >= ids[i][1] {
			t.Errorf("batch %d: IDs %v not increasing", i, ids[i])
		}
		for _, id := range ids[i] {
			if seen[id] {
				t.Errorf("ID %d assigned twice", id)
			}
			seen[id] = true
		}
	}
	// No gaps either: every ID from 1 to 2n was given and is readable.
	for id := int64(1); id <= 2*n; id++ {
		if !seen[id] {
			t.Errorf("ID %d never assigned", id)
		}
		if _, err := h.db.Transaction(t.Context(), id); err != nil {
			t.Errorf("Transaction(%d): %v", id, err)
		}
	}
	var listed []int64
	if _, err := h.db.Transactions(t.Context(), "s1", kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		listed = append(listed, tx.ID)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(listed) != 2*n {
		t.Errorf("Transactions lists %d, want %d", len(listed), 2*n)
	}
}

func testTransactionIDsAfterReopen(t *testing.T, h *harness) {
	var last int64
	for range 3 {
		commit(t, h.db, func(b kassa.Batch) {
			for range 3 {
				tx := topUp("s1", 1, t0)
				b.PutTransaction(tx)
				last = tx.ID
			}
		})
	}
	// IDs handed to a batch that never commits may be skipped, never
	// reused while the process lives.
	dropped := topUp("s1", 1, t0)
	h.db.NewBatch().PutTransaction(dropped)
	if dropped.ID != last+1 {
		t.Errorf("dropped transaction got ID %d, want %d", dropped.ID, last+1)
	}
	h.reopen()
	tx := topUp("s1", 1, t0)
	commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(tx) })
	if tx.ID <= last {
		t.Fatalf("after reopen a transaction got ID %d, want more than %d", tx.ID, last)
	}
	got, err := h.db.Transaction(t.Context(), last)
	if err != nil || got.ID != last {
		t.Errorf("Transaction(%d) = %v, %v: overwritten?", last, got, err)
	}
	if bal, _ := h.db.Balance(t.Context(), "s1"); bal != 10 {
		t.Errorf("Balance = %d, want 10", bal)
	}
	h.reopen()
	again := topUp("s1", 1, t0)
	commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(again) })
	if again.ID != tx.ID+1 {
		t.Errorf("after second reopen a transaction got ID %d, want %d", again.ID, tx.ID+1)
	}
}

// pages lists with q, follows the cursors to the end and returns every
// item and the number of pages. It fails on a page longer than q.Limit or
// an empty page with a cursor.
func pages[T any](t *testing.T, q kassa.ListQuery, list func(kassa.ListQuery, func(T) error) (string, error)) (items []T, n int) {
	t.Helper()
	for {
		var page []T
		next, err := list(q, func(v T) error { page = append(page, v); return nil })
		if err != nil {
			t.Fatalf("page %d: %v", n, err)
		}
		n++
		if q.Limit > 0 && len(page) > q.Limit {
			t.Fatalf("page %d has %d items, limit %d", n, len(page), q.Limit)
		}
		if next != "" && len(page) == 0 {
			t.Fatalf("page %d is empty but has a next cursor", n)
		}
		items = append(items, page...)
		if next == "" {
			return items, n
		}
		if n > 1000 {
			t.Fatal("cursors never end")
		}
		q.Cursor = next
	}
}

func testTransactions(t *testing.T, h *harness) {
	ctx := t.Context()
	// 54 transactions of s1 over time, two in each second and two in one
	// millisecond; neighbours s and s10 must not appear.
	type entry struct {
		id      int64
		created time.Time
	}
	var all []entry
	commit(t, h.db, func(b kassa.Batch) {
		for i := range 53 {
			tx := transfer("s1", fmt.Sprintf("inv_%d", i), 100, t0.Add(time.Duration(i/2)*time.Second+time.Duration(i%2)*300*time.Millisecond))
			b.PutTransaction(tx)
			all = append(all, entry{tx.ID, tx.CreatedAt})
			b.PutTransaction(topUp("s", 1, t0))
			b.PutTransaction(topUp("s10", 1, t0))
		}
		same := topUp("s1", 1, t0.Add(20*time.Second))
		b.PutTransaction(same)
		all = append(all, entry{same.ID, same.CreatedAt})
	})
	// Newest first; equal times by ID, highest first.
	slices.SortFunc(all, func(a, b entry) int {
		if c := b.created.Compare(a.created); c != 0 {
			return c
		}
		return cmp.Compare(b.id, a.id)
	})
	var want, wantSeconds3to5 []int64
	for _, e := range all {
		want = append(want, e.id)
		if d := e.created.Sub(t0); d >= 3*time.Second && d < 6*time.Second {
			wantSeconds3to5 = append(wantSeconds3to5, e.id)
		}
	}
	list := func(q kassa.ListQuery, fn func(int64) error) (string, error) {
		return h.db.Transactions(ctx, "s1", q, func(tx *kassa.Transaction) error {
			if tx.StoreID != "s1" {
				t.Errorf("transaction %d of store %s listed for s1", tx.ID, tx.StoreID)
			}
			return fn(tx.ID)
		})
	}
	for _, limit := range []int{0, 1, 7, 53, 54, 55, 100} {
		got, n := pages(t, kassa.ListQuery{Limit: limit}, list)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: got\n%v\nwant\n%v", limit, got, want)
		}
		if limit > 0 {
			if wantPages := (len(want) + limit - 1) / limit; n != wantPages {
				t.Errorf("limit %d: %d pages, want %d", limit, n, wantPages)
			}
		}
	}
	// Seconds 3 to 5, from an instant within second 3 to one within 5.
	q := kassa.ListQuery{From: t0.Add(3*time.Second + 900*time.Millisecond), To: t0.Add(5*time.Second + 1*time.Millisecond), Limit: 2}
	got, n := pages(t, q, list)
	if len(wantSeconds3to5) != 6 || !slices.Equal(got, wantSeconds3to5) || n != 3 {
		t.Errorf("seconds 3 to 5: got %v in %d pages, want %v in 3", got, n, wantSeconds3to5)
	}
}

func testTransactionsByInvoice(t *testing.T, h *harness) {
	var want []*kassa.Transaction
	commit(t, h.db, func(b kassa.Batch) {
		b.PutTransaction(transfer("s1", "inv_a", 1, t0))
		for i := range 3 {
			tx := transfer("s1", "inv_ab", kassa.Sats(10+i), t0.Add(time.Duration(-i)*time.Second))
			b.PutTransaction(tx)
			want = append(want, tx)
		}
		b.PutTransaction(transfer("s1", "inv_abc", 2, t0))
		b.PutTransaction(topUp("s1", 3, t0))
	})
	feeLine := fee("s1", "inv_ab", 5, t0)
	commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(feeLine) })
	want = append(want, feeLine)
	got, err := h.db.TransactionsByInvoice(t.Context(), "inv_ab")
	if err != nil {
		t.Fatal(err)
	}
	// Oldest first means in ID order, whatever the times.
	sameJSON(t, "TransactionsByInvoice", got, want)
}

func testBalance(t *testing.T, h *harness) {
	ctx := t.Context()
	commit(t, h.db, func(b kassa.Batch) {
		b.PutTransaction(topUp("s1", 10_000, t0))
		b.PutTransaction(transfer("s1", "inv_1", 50_000, t0))
		b.PutTransaction(fee("s1", "inv_1", 250, t0))
		b.PutTransaction(topUp("s10", 7, t0))
	})
	commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(fee("s1", "inv_2", 20_000, t0)) })
	for store, want := range map[string]kassa.Sats{"s1": 10_000 - 250 - 20_000, "s10": 7, "s": 0} {
		if got, err := h.db.Balance(ctx, store); got != want || err != nil {
			t.Errorf("Balance(%s) = %d, %v; want %d", store, got, err, want)
		}
	}
}

func testBalanceConcurrent(t *testing.T, h *harness) {
	const n = 50
	errs := make([]error, n)
	var want atomic.Int64
	release(n, func(i int) {
		b := h.db.NewBatch()
		up, down := kassa.Sats(1000+i), kassa.Sats(3*i)
		b.PutTransaction(topUp("s1", up, t0))
		b.PutTransaction(fee("s1", fmt.Sprintf("inv_%d", i), down, t0))
		want.Add(int64(up - down))
		errs[i] = h.db.Commit(t.Context(), b)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	if got, err := h.db.Balance(t.Context(), "s1"); int64(got) != want.Load() || err != nil {
		t.Errorf("Balance = %d, %v; want %d", got, err, want.Load())
	}
}

// testBalanceCachedUnderWrites reads balances for the first time while
// commits change them: the cached balance, read again after the writes,
// equals the one on disk and the sum of the writes, for every store.
func testBalanceCachedUnderWrites(t *testing.T, h *harness) {
	const stores, writes = 8, 40
	var want [stores]atomic.Int64
	errs := make([]error, stores*writes)
	release(stores*writes+stores*4, func(i int) {
		if i >= stores*writes {
			// Readers: the first read of each store misses and fills
			// the cache while the writers commit.
			if _, err := h.db.Balance(t.Context(), fmt.Sprintf("s%d", i%stores)); err != nil {
				t.Errorf("Balance: %v", err)
			}
			return
		}
		store := i % stores
		b := h.db.NewBatch()
		up, down := kassa.Sats(1000+i), kassa.Sats(3*i)
		b.PutTransaction(topUp(fmt.Sprintf("s%d", store), up, t0))
		b.PutTransaction(fee(fmt.Sprintf("s%d", store), fmt.Sprintf("inv_%d", i), down, t0))
		want[store].Add(int64(up - down))
		errs[i] = h.db.Commit(t.Context(), b)
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("commit %d: %v", i, err)
		}
	}
	for s := range stores {
		id := fmt.Sprintf("s%d", s)
		if _, ok := h.db.balances.Get(id); !ok {
			t.Errorf("%s: balance not cached after a read", id)
		}
		got, err := h.db.Balance(t.Context(), id)
		v, gerr := h.db.get(balanceKey(id))
		if err != nil || gerr != nil || int64(got) != want[s].Load() || int64(binary.BigEndian.Uint64(v)) != want[s].Load() {
			t.Errorf("%s: Balance = %d, %v; on disk %x, %v; want %d", id, got, err, v, gerr, want[s].Load())
		}
	}
	// One more commit moves the cached balance along.
	commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(fee("s0", "inv_x", 5, t0)) })
	if got, _ := h.db.Balance(t.Context(), "s0"); int64(got) != want[0].Load()-5 {
		t.Errorf("s0 after one more fee: Balance = %d, want %d", got, want[0].Load()-5)
	}
}

func testBalanceReopenCompact(t *testing.T, h *harness) {
	ctx := t.Context()
	var want kassa.Sats
	add := func(tx *kassa.Transaction) {
		t.Helper()
		commit(t, h.db, func(b kassa.Batch) { b.PutTransaction(tx) })
		want += tx.BalanceDelta()
	}
	check := func(when string) {
		t.Helper()
		if got, err := h.db.Balance(ctx, "s1"); got != want || err != nil {
			t.Errorf("%s: Balance = %d, %v; want %d", when, got, err, want)
		}
	}
	compact := func() {
		t.Helper()
		if err := h.db.db.Compact(ctx, []byte("bal/"), prefixEnd([]byte("bal/")), false); err != nil {
			t.Fatalf("compact: %v", err)
		}
	}
	// Operands end up in several sstables and the memtable before each
	// compaction, so that the merge operator runs in flushes, compactions
	// and reads.
	for round := range 3 {
		for i := range 4 {
			add(topUp("s1", kassa.Sats(100*(round+1)+i), t0))
			add(fee("s1", "inv", kassa.Sats(7*i), t0))
			if err := h.db.db.Flush(); err != nil {
				t.Fatal(err)
			}
		}
		add(fee("s1", "inv", 1, t0))
		check("before compaction")
		compact()
		check("after compaction")
		h.reopen()
		check("after reopen")
	}
	// A balance may go below zero.
	add(fee("s1", "inv", want+5, t0))
	compact()
	check("negative")
	h.reopen()
	check("negative after reopen")
}

func testKeyValue(t *testing.T, h *harness) {
	ctx := t.Context()
	now := time.Now()
	put := func(k, v string, expires time.Time) {
		t.Helper()
		if err := h.db.PutValue(ctx, k, []byte(v), expires); err != nil {
			t.Fatal(err)
		}
	}
	get := func(k string) (string, bool) {
		t.Helper()
		v, ok, err := h.db.GetValue(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		return string(v), ok
	}
	put("idem/a", "first", now.Add(time.Hour))
	put("idem/ab", "other", now.Add(time.Hour))
	put("idem/old", "stale", now.Add(-time.Millisecond))
	put("idem/epoch", "ancient", time.Unix(0, 0).Add(-time.Hour))
	put("idem/empty", "", now.Add(time.Hour))
	for k, want := range map[string]struct {
		v  string
		ok bool
	}{
		"idem/a":       {"first", true},
		"idem/ab":      {"other", true},
		"idem/old":     {"", false},
		"idem/epoch":   {"", false},
		"idem/empty":   {"", true},
		"idem/missing": {"", false},
	} {
		if v, ok := get(k); v != want.v || ok != want.ok {
			t.Errorf("GetValue(%s) = %q, %v; want %q, %v", k, v, ok, want.v, want.ok)
		}
	}
	// Overwrite, and expire by overwriting with a past time.
	put("idem/a", "second", now.Add(time.Hour))
	if v, ok := get("idem/a"); v != "second" || !ok {
		t.Errorf("after overwrite GetValue = %q, %v", v, ok)
	}
	h.reopen()
	if v, ok := get("idem/a"); v != "second" || !ok {
		t.Errorf("after reopen GetValue = %q, %v", v, ok)
	}
	put("idem/a", "second", now.Add(-time.Second))
	if _, ok := get("idem/a"); ok {
		t.Error("value still there after its expiry")
	}
}

func TestOpenInMemory(t *testing.T) {
	db, err := Open("ignored", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commit(t, db, fullBatch)
	checkFullBatch(t, db)
}

func TestCrash(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewCrashableMem()
	db, err := Open("kassa", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commit(t, db, fullBatch)
	tx := topUp("s2", 1, t0)
	commit(t, db, func(b kassa.Batch) { b.PutTransaction(tx) })

	// Every crash keeps what was synced, whatever else of the unsynced
	// tail it keeps.
	crashes := []vfs.CrashCloneCfg{{UnsyncedDataPercent: 0}}
	for seed := range 5 {
		crashes = append(crashes, vfs.CrashCloneCfg{UnsyncedDataPercent: 50, RNG: rand.New(rand.NewPCG(uint64(seed), 1))})
	}
	for i, cfg := range crashes {
		crashed, err := Open("kassa", Options{FS: fs.CrashClone(cfg)})
		if err != nil {
			t.Fatalf("crash %d: open: %v", i, err)
		}
		checkFullBatch(t, crashed)
		if bal, _ := crashed.Balance(ctx, "s2"); bal != 1 {
			t.Errorf("crash %d: Balance = %d, want 1", i, bal)
		}
		next := topUp("s2", 1, t0)
		commit(t, crashed, func(b kassa.Batch) { b.PutTransaction(next) })
		if next.ID != tx.ID+1 {
			t.Errorf("crash %d: next transaction ID %d, want %d", i, next.ID, tx.ID+1)
		}
		crashed.Close()
	}

	// The crash simulation does lose what was not synced: a store that
	// commits without fsync forgets its last batch.
	unsynced := vfs.NewCrashableMem()
	nosync, err := Open("kassa", Options{FS: unsynced, NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer nosync.Close()
	commit(t, nosync, fullBatch)
	checkFullBatch(t, nosync)
	crashed, err := Open("kassa", Options{FS: unsynced.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	checkNothingOfFullBatch(t, crashed)
}

func TestPrefixEnd(t *testing.T) {
	for _, c := range []struct{ in, want []byte }{
		{[]byte("ist/s1\x00"), []byte("ist/s1\x01")},
		{[]byte("a\xff"), []byte("b")},
		{[]byte("a\xff\xff"), []byte("b")},
		{[]byte("\xff\xff"), nil},
	} {
		if got := prefixEnd(c.in); !bytes.Equal(got, c.want) {
			t.Errorf("prefixEnd(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// BenchmarkCommitParallel commits small synced batches from many
// goroutines on disk: Pebble should group their WAL syncs, so throughput
// grows with parallelism while each commit stays durable.
func BenchmarkCommitParallel(b *testing.B) {
	db, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	var next atomic.Int64
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := next.Add(1)
			inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", n), "s1", t0.Add(time.Duration(n)*time.Millisecond))
			batch := db.NewBatch()
			batch.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte(`{"type":"created"}`))
			batch.PutInvoice(inv, nil, 1)
			if err := db.Commit(b.Context(), batch); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// TestReadsAfterCloseFail checks that range reads after Close answer an
// error: Pebble itself panics on use after close.
func TestReadsAfterCloseFail(t *testing.T) {
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	checks := map[string]error{
		"Events":       db.Events(ctx, kassa.Stream{Kind: "invoice", ID: "x"}, 0, func(uint64, []byte) error { return nil }),
		"OpenInvoices": db.OpenInvoices(ctx, func(string, string, time.Time) error { return nil }),
		"Stores":       db.Stores(ctx, func(*kassa.Store) error { return nil }),
		"Webhooks":     db.Webhooks(ctx, "s", func(*kassa.Webhook) error { return nil }),
		"Pending":      db.PendingDeliveries(ctx, func(string, string) error { return nil }),
	}
	_, checks["Invoices"] = db.Invoices(ctx, "s", kassa.ListQuery{}, func(*kassa.Invoice) error { return nil })
	_, checks["StreamSeq"] = db.StreamSeq(ctx, kassa.Stream{Kind: "invoice", ID: "x"})
	_, checks["TransactionsByInvoice"] = db.TransactionsByInvoice(ctx, "i")
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s after Close: no error", name)
		}
	}
}

func TestSweepExpired(t *testing.T) {
	db, err := Open("", Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	now := time.Now()
	for i, exp := range []time.Duration{-time.Hour, -time.Second, time.Hour} {
		if err := db.PutValue(ctx, fmt.Sprint("idem/s/", i), []byte("v"), now.Add(exp)); err != nil {
			t.Fatal(err)
		}
	}
	n, err := db.SweepExpired(ctx, now)
	if err != nil || n != 2 {
		t.Fatalf("swept %d, %v", n, err)
	}
	if _, ok, _ := db.GetValue(ctx, "idem/s/2"); !ok {
		t.Fatal("a live value was swept")
	}
	if n, _ := db.SweepExpired(ctx, now); n != 0 {
		t.Fatalf("second sweep deleted %d", n)
	}
}

// TestValuesExpireByTheClock checks that GetValue reads expiries by the
// clock of Options, the one its callers set them with, not the system's.
func TestValuesExpireByTheClock(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC))
	db, err := Open("kassa", Options{FS: vfs.NewMem(), Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.PutValue(t.Context(), "k", []byte("v"), clock.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.GetValue(t.Context(), "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("before its expiry: %q, %v, %v", v, ok, err)
	}
	clock.Advance(time.Hour)
	if _, ok, err := db.GetValue(t.Context(), "k"); err != nil || ok {
		t.Fatalf("at its expiry: found %v, %v", ok, err)
	}
}
