package postgres

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// TestOutboxClaims runs the outbox claims' contract on two handles
// (two nodes) on one database.
func TestOutboxClaims(t *testing.T) {
	kassatest.RunOutboxClaims(t, func(t *testing.T, clock kassa.Clock) (kassatest.ClaimStorage, kassatest.ClaimStorage) {
		a, b := openClocked(t, clock)
		return kassatest.ClaimStorage{Journal: a, Reader: a, Claims: a}, kassatest.ClaimStorage{Journal: b, Reader: b, Claims: b}
	})
}

// TestExpiryClaims runs the expiry claims' contract that Pebble runs
// too, on one node's handle.
func TestExpiryClaims(t *testing.T) {
	kassatest.RunExpiryClaims(t, func(t *testing.T, clock kassa.Clock) (kassa.Journal, kassa.ExpiryClaims) {
		db, _ := openClocked(t, clock)
		return db, db
	})
}

// TestClaimOverdue: two sweepers split the overdue invoices between
// them, none twice while a claim runs; an invoice not yet overdue is
// left; an expired claim is handed out again.
func TestClaimOverdue(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, clock)
	for i := range 6 {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		kassatest.Commit(t, dbA, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	}
	var deadlines []time.Time
	if err := dbA.OpenInvoices(ctx, func(_, _ string, d time.Time) error { deadlines = append(deadlines, d); return nil }); err != nil || len(deadlines) != 6 {
		t.Fatalf("OpenInvoices = %v, %v", deadlines, err)
	}
	overdue := deadlines[4] // the first four are overdue
	clock.Advance(overdue.Sub(clock.Now()))
	a, err := dbA.ClaimOverdue(ctx, "node-a", overdue, 10*time.Second, 3)
	if err != nil || len(a) != 3 || a[0].InvoiceID != "inv_0" {
		t.Fatalf("A's claim = %v, %v; want inv_0..inv_2", a, err)
	}
	b, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10)
	if err != nil || len(b) != 1 || b[0].InvoiceID != "inv_3" || b[0].StoreID != "s1" {
		t.Fatalf("B's claim = %v, %v; want inv_3 only", b, err)
	}
	if c, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10); len(c) != 0 || err != nil {
		t.Fatalf("a second claim while the first run = %v, %v", c, err)
	}
	clock.Advance(10 * time.Second)
	if c, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10); len(c) != 4 || err != nil {
		t.Fatalf("claim after the claims expired = %v, %v; want all four again", c, err)
	}
}

// TestMigrationNotBefore: migration 4 gives the outbox rows pending at
// the upgrade their delivery's not-before time, so that a retry waiting
// for its time does not become its endpoint's next delivery (which would
// hold the later ones back until then).
func TestMigrationNotBefore(t *testing.T) {
	ctx := t.Context()
	harness.SkipShort(t, "PostgreSQL")
	dsn, pool := schemaAt(t, 3)
	retryAt := time.Date(2026, 3, 1, 12, 0, 10, 123456789, time.UTC)
	for i, d := range []*kassa.Delivery{
		{ID: "dl_retry", WebhookID: "wh_1", Status: kassa.DeliveryPending, NotBefore: retryAt, CreatedAt: kassatest.Epoch},
		{ID: "dl_later", WebhookID: "wh_1", Status: kassa.DeliveryPending, CreatedAt: kassatest.Epoch},
	} {
		doc, _ := json.Marshal(d)
		if _, err := pool.Exec(ctx, `INSERT INTO deliveries (id, webhook_id, created_ms, doc) VALUES ($1, $2, 0, $3)`, d.ID, d.WebhookID, doc); err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO outbox (webhook_id, seq, delivery_id) VALUES ($1, $2, $3)`, d.WebhookID, i+1, d.ID); err != nil {
			t.Fatal(err)
		}
	}
	clock := kassatest.NewTestClock(retryAt.Add(-time.Second))
	db, err := Open(ctx, dsn, Options{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	got := map[string]int64{}
	rows, _ := db.pool.Query(ctx, `SELECT delivery_id, not_before_ms FROM outbox`)
	for rows.Next() {
		var id string
		var ms int64
		_ = rows.Scan(&id, &ms)
		got[id] = ms
	}
	if rows.Err() != nil || got["dl_retry"] != retryAt.Truncate(time.Microsecond).UnixMilli() || got["dl_later"] != 0 {
		t.Fatalf("not_before_ms after the migration: %v (%v), want dl_retry %d, dl_later 0", got, rows.Err(), retryAt.UnixMilli())
	}
	c, ok, err := db.ClaimDelivery(ctx, "wh_1", "node-a", time.Minute)
	if err != nil || !ok || c.DeliveryID != "dl_later" {
		t.Fatalf("claim after the upgrade = %+v, %v, %v; want dl_later (the retry is not due)", c, ok, err)
	}
}
