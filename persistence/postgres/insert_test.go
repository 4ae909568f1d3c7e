package postgres

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestNewInvoiceWithATakenAddressInAGroup: a new invoice is a plain
// INSERT; one whose address and payment hash an older invoice has is
// written again taking them from it first, in the same group as other
// batches, which commit untouched: the lookups name the new invoice, and
// the group's other invoice is stored.
func TestNewInvoiceWithATakenAddressInAGroup(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	old := kassatest.NewInvoice("inv_old", "s1", kassatest.Epoch)
	old.OnchainAddress, old.PaymentHash = "bcrt1qsame", "hash_same"
	commitT(t, db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: old.ID}, 1, []byte("old"))
		b.PutInvoice(old, nil, 1)
	})

	h := newGroupHarness(t, db)
	first := h.start(t)
	again := kassatest.NewInvoice("inv_again", "s1", kassatest.Epoch)
	again.OnchainAddress, again.PaymentHash = old.OnchainAddress, old.PaymentHash
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: again.ID}, 1, []byte("again"))
	b.PutInvoice(again, nil, 1)
	errs := make(chan error, 2)
	go func() { errs <- db.Commit(context.Background(), invoiceBatch(db, "inv_other")) }()
	go func() { errs <- db.Commit(context.Background(), b) }()
	h.waitQueued(t, 2)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("commit in the group: %v", err)
		}
	}
	if id, err := db.InvoiceIDByAddress(ctx, old.OnchainAddress); id != again.ID || err != nil {
		t.Errorf("InvoiceIDByAddress = %q, %v; want %s", id, err, again.ID)
	}
	if id, err := db.InvoiceIDByPaymentHash(ctx, old.PaymentHash); id != again.ID || err != nil {
		t.Errorf("InvoiceIDByPaymentHash = %q, %v; want %s", id, err, again.ID)
	}
	for _, id := range []string{again.ID, "inv_other"} {
		if !stored(t, db, id) {
			t.Errorf("%s not stored", id)
		}
	}
}

// TestNewInvoiceWrittenTwice: a second first write of an invoice (its
// snapshot and open row inserted, not upserted) is ErrSeqTaken even
// without an event in the batch, and changes nothing.
func TestNewInvoiceWrittenTwice(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	inv := kassatest.NewInvoice("inv_1", "s1", kassatest.Epoch)
	if _, ok := inv.Deadline(); !ok {
		t.Fatal("the test invoice has no deadline: its open row is not written")
	}
	commitT(t, db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	stale := *inv
	stale.Status = kassa.InvoiceExpired
	b := db.NewBatch()
	b.PutInvoice(&stale, nil, 1)
	err := db.Commit(ctx, b)
	if !errors.Is(err, ErrSeqTaken) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("second first write = %v (code %s), want ErrSeqTaken, a Conflict", err, kassa.ErrorCode(err))
	}
	if got, _ := db.Invoice(ctx, inv.ID); got == nil || got.Status != kassa.InvoiceNew {
		t.Errorf("the refused batch changed the snapshot: %+v", got)
	}
}

// TestStateWritesAreUnsynced: the simulators' state is written on
// sessions that commit without waiting for their flush, and the store's
// own sessions keep the server's setting (the test server runs with it
// off, so the check is that they do not set it themselves).
func TestStateWritesAreUnsynced(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	const q = `SELECT setting, source FROM pg_settings WHERE name = 'synchronous_commit'`
	var setting, source string
	if err := db.unsynced.QueryRow(ctx, q).Scan(&setting, &source); err != nil {
		t.Fatal(err)
	}
	if setting != "off" || source != "client" {
		t.Errorf("synchronous_commit of the state's sessions = %q from %s, want off from the client", setting, source)
	}
	if err := db.pool.QueryRow(ctx, q).Scan(&setting, &source); err != nil {
		t.Fatal(err)
	}
	if source == "client" || source == "session" {
		t.Errorf("the store's own sessions set synchronous_commit %s themselves (%s)", setting, source)
	}
	if err := db.State("sim").Put(ctx, "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := db.State("sim").Get(ctx, "k"); string(v) != "v" || !ok || err != nil {
		t.Errorf("Get after Put = %q, %v, %v", v, ok, err)
	}
}

// createBatch is a create as the invoice actor writes it: the event,
// the new invoice with its address, hash and open row, and its request
// id.
func createBatch(db *DB, id, address string) (kassa.Batch, *kassa.Invoice) {
	inv := kassatest.NewInvoice(id, "s1", kassatest.Epoch)
	inv.OnchainAddress, inv.PaymentHash = address, "hash_"+id
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: id}, 1, []byte("created "+id))
	b.PutInvoice(inv, nil, 1)
	b.(kassa.RequestBatch).PutRequest(kassa.RequestRecord{StoreID: "s1", ID: "req_" + id, Kind: kassa.RequestInvoice, ResultID: id})
	return b, inv
}

// TestGroupMergesCreates: the creates of one group are written with one
// INSERT per table (four statements and the fence, not four per create),
// and each is whole: its snapshot, lookups, open row and request id.
func TestGroupMergesCreates(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	if err := db.Members().Join(ctx, "node-1"); err != nil {
		t.Fatal(err)
	}
	var sent []int
	db.group.sent = func(n int) { sent = append(sent, n) } // one group runs at a time
	h := newGroupHarness(t, db)
	first := h.start(t)
	const n = 8
	errs := make(chan error, n)
	invs := map[string]*kassa.Invoice{}
	for i := range n {
		b, inv := createBatch(db, fmt.Sprintf("inv_%d", i), fmt.Sprintf("bcrt1q%d", i))
		invs[inv.ID] = inv
		go func() { errs <- db.Members().Commit(context.Background(), "node-1", b) }()
	}
	h.waitQueued(t, n)
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if want := []int{1, 1 + 4}; !slices.Equal(sent, want) {
		t.Errorf("statements sent per transaction = %v, want %v (the first group's store, then a fence and four merged INSERTs)", sent, want)
	}
	open := map[string]bool{}
	if err := db.OpenInvoices(ctx, func(id, _ string, _ time.Time) error { open[id] = true; return nil }); err != nil {
		t.Fatal(err)
	}
	for id, want := range invs {
		got, seq, err := db.InvoiceSnapshot(ctx, id)
		if err != nil || seq != 1 {
			t.Fatalf("InvoiceSnapshot(%s) = seq %d, %v", id, seq, err)
		}
		if got.OnchainAddress != want.OnchainAddress || got.PaymentHash != want.PaymentHash || got.StoreID != want.StoreID {
			t.Errorf("snapshot of %s = %+v, want %+v", id, got, want)
		}
		if a, err := db.InvoiceIDByAddress(ctx, want.OnchainAddress); a != id || err != nil {
			t.Errorf("InvoiceIDByAddress(%s) = %q, %v; want %s", want.OnchainAddress, a, err, id)
		}
		if h, err := db.InvoiceIDByPaymentHash(ctx, want.PaymentHash); h != id || err != nil {
			t.Errorf("InvoiceIDByPaymentHash(%s) = %q, %v; want %s", want.PaymentHash, h, err, id)
		}
		if r, err := db.Request(ctx, "s1", "req_"+id); err != nil || r.ResultID != id {
			t.Errorf("Request(req_%s) = %+v, %v", id, r, err)
		}
		if !open[id] {
			t.Errorf("%s is not among the open invoices", id)
		}
	}
}

// TestGroupMergeFailsOverToEachBatch: two new invoices of one group
// with the same address make the merged INSERT fail; the group is
// written again unmerged, the second batch with its upserts: both
// commit, and the address names the later one, as if committed apart.
func TestGroupMergeFailsOverToEachBatch(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	h := newGroupHarness(t, db)
	first := h.start(t)
	errs := make(chan error, 2)
	for i, id := range []string{"inv_a", "inv_b"} {
		b, _ := createBatch(db, id, "bcrt1qsame")
		go func() { errs <- db.Commit(context.Background(), b) }()
		h.waitQueued(t, i+1)
	}
	close(h.hold)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("commit: %v", err)
		}
	}
	for _, id := range []string{"inv_a", "inv_b"} {
		if !stored(t, db, id) {
			t.Errorf("%s not stored", id)
		}
	}
	if id, err := db.InvoiceIDByAddress(ctx, "bcrt1qsame"); id != "inv_b" || err != nil {
		t.Errorf("InvoiceIDByAddress = %q, %v; want inv_b", id, err)
	}
}

// TestStatePutsTogether: puts racing each other, several to one key and
// to two spaces, are written together; each caller is answered once its
// value is readable, and a key put by several holds one of their values.
func TestStatePutsTogether(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	const n = 40
	errs := make(chan error, n)
	for i := range n {
		go func() {
			space := []string{"ln", "chain"}[i%2]
			k := fmt.Sprintf("k%d", i)
			err := db.State(space).Put(ctx, k, []byte(k))
			if err == nil {
				err = db.State(space).Put(ctx, "shared", []byte(k))
			}
			if err == nil {
				if v, ok, gerr := db.State(space).Get(ctx, k); string(v) != k || !ok || gerr != nil {
					err = fmt.Errorf("Get(%s/%s) after Put = %q, %v, %v", space, k, v, ok, gerr)
				}
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	for _, space := range []string{"ln", "chain"} {
		v, ok, err := db.State(space).Get(ctx, "shared")
		if !ok || err != nil || len(v) < 2 || v[0] != 'k' {
			t.Errorf("Get(%s/shared) = %q, %v, %v; want one of the values put", space, v, ok, err)
		}
	}
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	if err := db.State("ln").Put(canceled, "late", []byte("x")); err == nil {
		t.Error("Put with a context already ended: no error")
	}
}

// TestCreateWritesOneInvoiceRow: a create writes its event, one invoice
// row that holds its address and payment hash, its open row and its
// request id: four statements and four rows (it wrote six of each, the
// address and the hash in lookup tables of their own), and both lookups
// find it.
func TestCreateWritesOneInvoiceRow(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	var sent []int
	db.group.sent = func(n int) { sent = append(sent, n) }
	b, inv := createBatch(db, "inv_1", "bcrt1qone")
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	if want := []int{4}; !slices.Equal(sent, want) {
		t.Errorf("statements sent = %v, want %v (event, invoice with its lookups, open row, request id)", sent, want)
	}
	rows, err := db.pool.Query(ctx, `SELECT table_name FROM information_schema.tables
		WHERE table_schema = current_schema() AND table_type = 'BASE TABLE' AND table_name <> 'schema_migrations'`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	written := map[string]int{}
	for _, table := range tables {
		var n int
		if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			written[table] = n
		}
	}
	if want := map[string]int{"events": 1, "invoices": 1, "open_invoices": 1, "requests": 1}; !maps.Equal(written, want) {
		t.Errorf("rows written by a create = %v, want %v", written, want)
	}
	if id, err := db.InvoiceIDByAddress(ctx, inv.OnchainAddress); id != inv.ID || err != nil {
		t.Errorf("InvoiceIDByAddress = %q, %v; want %s", id, err, inv.ID)
	}
	if id, err := db.InvoiceIDByPaymentHash(ctx, inv.PaymentHash); id != inv.ID || err != nil {
		t.Errorf("InvoiceIDByPaymentHash = %q, %v; want %s", id, err, inv.ID)
	}
}
