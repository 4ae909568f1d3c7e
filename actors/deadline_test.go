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

	if err := b.sys.Service.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("FireDeadline before the expiry: %v", err)
	}
	if got := b.get(inv.ID); got.Status != kassa.InvoiceNew {
		t.Fatalf("status after an early FireDeadline = %s, want New", got.Status)
	}
	clockB.Advance(15*time.Minute + time.Second)
	if err := b.sys.Service.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("FireDeadline: %v", err)
	}
	eventually(t, "the expiry fired by node B", func() bool { return b.get(inv.ID).Status == kassa.InvoiceExpired })
	if err := b.sys.Service.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
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

// TestEarlyFireDeadlineArmsTheTimer: the sweeper fires a deadline up to
// sweepAhead early on purpose. After a restart, with the invoice
// passivated, such an early FireDeadline wakes it and changes nothing
// else: its own timer is armed, and the expiry fires through it exactly
// at the deadline, once.
func TestEarlyFireDeadlineArmsTheTimer(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	ctx := context.Background()
	stream := kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}
	seq0, err := db2.StreamSeq(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(inv.ExpiresAt.Add(-time.Minute).Sub(clock.Now()))
	if h2.active(inv) || clock.Pending() != 0 {
		t.Fatalf("before the early fire: active %v, %d timers pending; want a passivated invoice and none", h2.active(inv), clock.Pending())
	}
	if err := h2.sys.Service.FireDeadline(ctx, inv.StoreID, inv.ID); err != nil {
		t.Fatalf("early FireDeadline: %v", err)
	}
	if got := h2.get(inv.ID); got.Status != kassa.InvoiceNew || !h2.active(inv) {
		t.Fatalf("after the early fire: %s, active %v; want New and active", got.Status, h2.active(inv))
	}
	eventually(t, "the invoice's own timer", func() bool { return clock.Pending() == 1 })
	clock.Advance(time.Minute)
	eventually(t, "expiry", func() bool { return h2.get(inv.ID).Status == kassa.InvoiceExpired })
	if got := h2.get(inv.ID); !got.UpdatedAt.Equal(got.ExpiresAt) {
		t.Errorf("expired at %v, want its expiry %v", got.UpdatedAt, got.ExpiresAt)
	}
	if seq, err := db2.StreamSeq(ctx, stream); err != nil || seq != seq0+1 {
		t.Errorf("invoice events = %d more (%v), want 1", seq-seq0, err)
	}
}
