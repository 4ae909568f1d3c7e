package postgres

import (
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence/format"
)

// feedIDs reads the feed from cursor: the invoice ids it gives, by id,
// and the next cursor.
func feedIDs(t *testing.T, db *DB, cursor int64) (map[string]kassa.WatchedAddress, int64) {
	t.Helper()
	got := map[string]kassa.WatchedAddress{}
	next, err := db.NewAddresses(t.Context(), cursor, func(a kassa.WatchedAddress) error {
		got[a.InvoiceID] = a
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, next
}

// watchedInvoice is a new invoice with an address, an index and
// confirmations.
func watchedInvoice(id, store string, index uint32) *kassa.Invoice {
	inv := kassatest.NewInvoice(id, store, kassatest.Epoch)
	inv.OnchainAddress, inv.DerivationIndex, inv.ConfirmationsRequired = "bcrt1q"+id, &index, 3
	return inv
}

// TestAddressFeedSeesLateCommits: the feed gives each new invoice's
// address with its store, index, confirmations and creation time, not
// the invoices without one, and not the invoices updated since; an
// invoice whose transaction began before a read but committed after it
// (its transaction id below ids already read) is given by the next read.
func TestAddressFeedSeesLateCommits(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	cursor, err := db.AddressCursor(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The late one: its transaction takes its id first and commits last.
	late := watchedInvoice("inv_late", "s2", 9)
	tx, err := db.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	doc, err := format.Marshal(late)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, insertNewInvoice, late.ID, late.StoreID, ms(late.CreatedAt), int64(1), doc, late.OnchainAddress,
		"", "", "", int64(9), int64(3)); err != nil {
		t.Fatal(err)
	}
	first := watchedInvoice("inv_first", "s1", 4)
	lightning := kassatest.NewInvoice("inv_ln", "s1", kassatest.Epoch)
	commitT(t, db, func(b kassa.Batch) {
		b.PutInvoice(first, nil, 1)
		b.PutInvoice(lightning, nil, 1)
	})
	got, next := feedIDs(t, db, cursor)
	want := kassa.WatchedAddress{InvoiceID: first.ID, StoreID: "s1", Address: first.OnchainAddress, Index: 4, Confirmations: 3,
		CreatedAt: kassatest.Epoch}
	if len(got) != 1 || got[first.ID] != want {
		t.Fatalf("first read: %+v, want only %+v", got, want)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got, _ = feedIDs(t, db, next)
	if _, ok := got[late.ID]; !ok {
		t.Fatalf("second read: %v, want %s, committed after the first read", slices.Collect(maps.Keys(got)), late.ID)
	}
	if a := got[late.ID]; a.StoreID != "s2" || a.Index != 9 || a.Confirmations != 3 {
		t.Errorf("late invoice read as %+v", a)
	}
	// An update of an invoice keeps its place in the feed: it is not a
	// new address.
	var before, after int64
	if err := db.pool.QueryRow(ctx, `SELECT watch_tx FROM invoices WHERE id = $1`, first.ID).Scan(&before); err != nil {
		t.Fatal(err)
	}
	first.Status = kassa.InvoiceExpired
	commitT(t, db, func(b kassa.Batch) { b.PutInvoice(first, watchedInvoice("inv_first", "s1", 4), 2) })
	if err := db.pool.QueryRow(ctx, `SELECT watch_tx FROM invoices WHERE id = $1`, first.ID).Scan(&after); err != nil || after != before {
		t.Errorf("watch_tx %d before an update, %d after (%v): want it kept", before, after, err)
	}
}

// TestAddressFeedPages: more new addresses than a page are all given,
// once each.
func TestAddressFeedPages(t *testing.T) {
	db := openTest(t)
	cursor, err := db.AddressCursor(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	const n = addressPage + 3
	commitT(t, db, func(b kassa.Batch) {
		for i := range n {
			b.PutInvoice(watchedInvoice(fmt.Sprintf("inv_%05d", i), "s1", uint32(i)), nil, 1)
		}
	})
	seen := map[string]int{}
	if _, err := db.NewAddresses(t.Context(), cursor, func(a kassa.WatchedAddress) error {
		seen[a.InvoiceID]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(seen) != n {
		t.Errorf("%d addresses given, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Errorf("%s given %d times", id, k)
		}
	}
}

// TestMigrationWatchedAddresses: a database of schema 11 migrates; its
// invoices are left to the watcher's load (the feed does not give
// them), and an invoice a binary of schema 11 inserts after the
// migration (a node not upgraded yet) is given with the index and
// confirmations of its document.
func TestMigrationWatchedAddresses(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, 11)
	insert11 := func(inv *kassa.Invoice) {
		t.Helper()
		doc, err := format.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address)
			VALUES ($1, $2, $3, 1, $4, $5)`, inv.ID, inv.StoreID, ms(inv.CreatedAt), doc, inv.OnchainAddress); err != nil {
			t.Fatal(err)
		}
	}
	insert11(watchedInvoice("inv_before", "s1", 1))
	db := openTestDSN(t, dsn)
	got, next := feedIDs(t, db, 0)
	if len(got) != 0 {
		t.Errorf("feed after the migration: %v, want none (invoices before it are loaded at start)", slices.Collect(maps.Keys(got)))
	}
	if inv, err := db.Invoice(ctx, "inv_before"); err != nil || inv.OnchainAddress != "bcrt1qinv_before" {
		t.Errorf("invoice before the migration: %+v, %v", inv, err)
	}
	insert11(watchedInvoice("inv_old_binary", "s1", 7))
	got, _ = feedIDs(t, db, next)
	if a := got["inv_old_binary"]; len(got) != 1 || a.Index != 7 || a.Confirmations != 3 || a.StoreID != "s1" {
		t.Errorf("feed after an old binary's insert: %+v, want inv_old_binary at index 7, 3 confirmations", got)
	}
}

// TestWatchedAddressesLoad: the load at start is given the address of
// each invoice created at or after its bound, whatever its state, with
// its deadline when it waits for a timer, and of each older invoice
// that waits for one, with its deadline, each once, across pages and
// stores; not an older invoice that waits for nothing, nor an invoice
// without an address. A row of schema 11 (no feed columns) is given
// with the index and confirmations of its document.
func TestWatchedAddressesLoad(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, 11)
	since := kassatest.Epoch.Add(-time.Hour)
	old11 := watchedInvoice("inv_old_schema", "s9", 5)
	old11.CreatedAt = since.Add(-48 * time.Hour)
	old11.ExpiresAt = kassatest.Epoch.Add(time.Hour)
	doc, err := format.Marshal(old11)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ($1, $2, $3, 1, $4, $5)`,
		old11.ID, old11.StoreID, ms(old11.CreatedAt), doc, old11.OnchainAddress); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO open_invoices (invoice_id, store_id, deadline_ms) VALUES ($1, $2, $3)`,
		old11.ID, old11.StoreID, ms(old11.ExpiresAt)); err != nil {
		t.Fatal(err)
	}
	db := openTestDSN(t, dsn)
	want := map[string]time.Time{old11.ID: old11.ExpiresAt}
	const recent = addressPage + 3
	commitT(t, db, func(b kassa.Batch) {
		for i := range recent {
			inv := watchedInvoice(fmt.Sprintf("inv_%05d", i), fmt.Sprintf("s%d", i%7), uint32(i))
			inv.CreatedAt = since.Add(time.Duration(i%50) * time.Millisecond)
			if i%2 == 0 {
				inv.Status = kassa.InvoiceSettled
				want[inv.ID] = time.Time{}
			} else {
				want[inv.ID] = inv.ExpiresAt
			}
			b.PutInvoice(inv, nil, 1)
		}
		for i := range addressPage + 1 {
			inv := watchedInvoice(fmt.Sprintf("inv_open_%05d", i), "s1", uint32(10_000+i))
			inv.CreatedAt, inv.Status = since.Add(-time.Millisecond), kassa.InvoiceExpired
			inv.MonitorUntil = kassatest.Epoch.Add(time.Duration(i) * time.Second)
			want[inv.ID] = inv.MonitorUntil
			b.PutInvoice(inv, nil, 1)
		}
		settled := watchedInvoice("inv_old_settled", "s1", 20_000)
		settled.CreatedAt, settled.Status = since.Add(-time.Millisecond), kassa.InvoiceSettled
		b.PutInvoice(settled, nil, 1)
		b.PutInvoice(kassatest.NewInvoice("inv_ln", "s1", kassatest.Epoch), nil, 1)
	})
	seen := map[string]int{}
	err = db.WatchedAddresses(ctx, since, func(a kassa.WatchedAddress) error {
		seen[a.InvoiceID]++
		deadline, ok := want[a.InvoiceID]
		if !ok {
			t.Errorf("%s given", a.InvoiceID)
			return nil
		}
		if !a.Deadline.Equal(deadline) || a.Confirmations != 3 || a.Address != "bcrt1q"+a.InvoiceID || a.StoreID == "" || a.Index < 0 {
			t.Errorf("%s given as %+v, want deadline %v", a.InvoiceID, a, deadline)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("%s given %d times, want once", id, seen[id])
		}
	}
	if len(seen) != len(want) {
		t.Errorf("%d invoices given, want %d", len(seen), len(want))
	}
}
