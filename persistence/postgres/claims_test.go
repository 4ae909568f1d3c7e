package postgres

import (
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestOutboxClaims runs the outbox claims' contract on two handles
// (two nodes) on one database.
func TestOutboxClaims(t *testing.T) {
	kassatest.RunOutboxClaims(t, func(t *testing.T, clock kassa.Clock) (kassatest.ClaimStorage, kassatest.ClaimStorage) {
		a, b := openClocked(t, clock)
		return kassatest.ClaimStorage{Journal: a, Reader: a, Claims: a}, kassatest.ClaimStorage{Journal: b, Reader: b, Claims: b}
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
