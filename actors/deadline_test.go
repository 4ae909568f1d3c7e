package actors

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestFireDeadlineFromAnotherNode: node A creates an invoice and stalls
// (its clock, and so its timer, never moves); node B, on the same store,
// fires the deadline once it is due. Before that it changes nothing;
// after it the invoice is Expired with one expiry event, and firing
// again changes nothing.
func TestFireDeadlineFromAnotherNode(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	db := openMem(t)
	a := newHarness(t, db, kassatest.NewTestClock(start))
	a.createStore("0", "0")
	inv := a.invoice("1000", kassa.SATS)
	clockB := kassatest.NewTestClock(start)
	b := newHarness(t, db, clockB)
	ctx := context.Background()
	stream := kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}
	seq0, err := db.StreamSeq(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}

	if err := b.sys.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("FireDeadline before the expiry: %v", err)
	}
	if got := b.get(inv.ID); got.Status != kassa.InvoiceNew {
		t.Fatalf("status after an early FireDeadline = %s, want New", got.Status)
	}
	clockB.Advance(15*time.Minute + time.Second)
	if err := b.sys.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("FireDeadline: %v", err)
	}
	eventually(t, "the expiry fired by node B", func() bool { return b.get(inv.ID).Status == kassa.InvoiceExpired })
	if err := b.sys.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("FireDeadline again: %v", err)
	}
	seq, err := db.StreamSeq(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if seq != seq0+1 {
		t.Errorf("invoice events after two FireDeadline = %d more, want 1", seq-seq0)
	}
}
