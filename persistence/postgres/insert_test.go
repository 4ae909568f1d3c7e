package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestNewInvoiceWithATakenAddressInAGroup: a new invoice's index rows
// are plain INSERTs; one whose address and payment hash an older
// invoice has is written again with upserts, in the same group as other
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
