package persistence

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/expiry"
	"github.com/kassapay/kassa/kassatest"
)

// TestExpiryClaims runs the expiry claims' contract on Pebble, where the
// one node's sweeper is the only claimer.
func TestExpiryClaims(t *testing.T) {
	kassatest.RunExpiryClaims(t, func(t *testing.T, clock kassa.Clock) (kassa.Journal, kassa.ExpiryClaims) {
		db, err := Open("", Options{InMemory: true, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, db
	})
}

// TestSweeperAhead: the deadline sweeper of one node over Pebble, as
// actors.System runs it (Ahead set), fires each invoice due within Ahead
// (its end included) once, early. Its claim runs until Grace past the
// invoice's deadline, however early it was claimed: one that its actor
// did not expire (the fire was lost with a node killed) is fired again
// then. Before, a claim ran Ahead + Grace from the round that took it,
// so an invoice claimed a minute before its deadline was fired again
// only a minute and Grace late.
func TestSweeperAhead(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db, err := Open("", Options{InMemory: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Due in 1, 2 and 3 minutes.
	invs := map[string]*kassa.Invoice{}
	for i := 1; i <= 3; i++ {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Minute-15*time.Minute))
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
		invs[inv.ID] = inv
	}
	// settle closes an invoice, as its actor would once a fire reaches
	// it: it leaves the deadline index.
	settle := func(id string) {
		next := *invs[id]
		next.Status = kassa.InvoiceSettled
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(&next, invs[id], 2) })
	}
	var (
		mu    sync.Mutex
		fired []string
	)
	s := &expiry.Sweeper{Claims: db, Holder: "node", Clock: clock, Log: slog.New(slog.DiscardHandler), Ahead: 2 * time.Minute,
		Fire: func(_ context.Context, _, invoiceID string) error {
			mu.Lock()
			defer mu.Unlock()
			fired = append(fired, invoiceID)
			return nil
		}}
	round := func(at time.Duration, want ...string) {
		t.Helper()
		clock.Advance(kassatest.Epoch.Add(at).Sub(clock.Now()))
		fired = nil
		if _, err := s.SweepOnce(t.Context()); err != nil {
			t.Fatal(err)
		}
		slices.Sort(fired)
		if !slices.Equal(fired, want) {
			t.Fatalf("round at %v fired %v, want %v", at, fired, want)
		}
	}
	grace := expiry.DefaultGrace
	round(0, "inv_1", "inv_2")
	round(time.Second)
	round(time.Minute, "inv_3")
	round(time.Minute + grace - time.Millisecond)
	round(time.Minute+grace, "inv_1") // lost: fired again
	round(time.Minute + 2*grace - time.Millisecond)
	round(time.Minute+2*grace, "inv_1") // lost again: its claim ran Grace
	settle("inv_1")
	round(2*time.Minute + grace - time.Millisecond)
	round(2*time.Minute+grace, "inv_2")
	settle("inv_2")
	round(3*time.Minute + grace - time.Millisecond)
	round(3*time.Minute+grace, "inv_3")
}

// TestClosedInvoicesLeaveNoClaims: a claim is on an invoice's deadline;
// the commit that takes the invoice out of the deadline index (it
// settled, or its deadline moved) drops the claim with it, so that a
// node closing invoices quickly (a one-second expiry) does not hold a
// claim per invoice for the claim's whole length.
func TestClosedInvoicesLeaveNoClaims(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db, err := Open("", Options{InMemory: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	const n = 500
	var invs []*kassa.Invoice
	for i := range n {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(-14*time.Minute))
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
		invs = append(invs, inv)
	}
	claimed, err := db.ClaimOverdue(t.Context(), "node", kassatest.Epoch.Add(2*time.Minute), 2*time.Minute, 2*n)
	if err != nil || len(claimed) != n {
		t.Fatalf("claimed %d, %v; want %d", len(claimed), err, n)
	}
	claims := func() int {
		db.expiry.mu.Lock()
		defer db.expiry.mu.Unlock()
		return len(db.expiry.expires)
	}
	if got := claims(); got != n {
		t.Fatalf("%d live claims after the round, want %d (the positive control)", got, n)
	}
	// The first half settles (out of the index); the second half's
	// deadline moves on (an expiry, then its monitoring): the old
	// deadline's claim goes with the old index entry either way.
	for i, inv := range invs {
		next := *inv
		next.UpdatedAt = kassatest.Epoch
		if i < n/2 {
			next.Status = kassa.InvoiceSettled
		} else {
			next.Status = kassa.InvoiceExpired
		}
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(&next, inv, 2) })
	}
	if got := claims(); got != 0 {
		t.Errorf("%d claims left after every claimed deadline left the index, want 0", got)
	}
	// The moved deadlines can be claimed again: not a claim lost.
	again, err := db.ClaimOverdue(t.Context(), "node", kassatest.Epoch.Add(25*time.Hour), 2*time.Minute, 2*n)
	if err != nil || len(again) != n/2 {
		t.Errorf("claimed %d moved deadlines, %v; want %d", len(again), err, n/2)
	}
}

// TestSweeperRunKeepsUpWithAClockMovedDuringARound: Run starts its next
// round once Every has passed since the last one began, so a clock that
// moves while a round fires (a test's clock, or a round slower than
// Every) does not leave the deadlines that came due meanwhile waiting a
// whole Every more. Before, the wait for the next round began only after
// the round: on a test clock moved during the round, it never ended.
func TestSweeperRunKeepsUpWithAClockMovedDuringARound(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db, err := Open("", Options{InMemory: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Due now, and in an hour.
	for i, due := range []time.Duration{0, time.Hour} {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(due-15*time.Minute))
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	}
	// The clock moves on an hour while the first round fires inv_0. (No
	// actor closes inv_0 here, so once its claim runs out later rounds
	// fire it again: only inv_1's first fire is awaited.)
	var moved sync.Once
	inv1 := make(chan struct{})
	var inv1Once sync.Once
	s := &expiry.Sweeper{Claims: db, Holder: "node", Clock: clock, Log: slog.New(slog.DiscardHandler), Ahead: 2 * time.Minute,
		Fire: func(_ context.Context, _, invoiceID string) error {
			switch invoiceID {
			case "inv_0":
				moved.Do(func() { clock.Advance(time.Hour) })
			case "inv_1":
				inv1Once.Do(func() { close(inv1) })
			}
			return nil
		}}
	go s.Run(t.Context())
	select {
	case <-inv1:
	case <-time.After(5 * time.Second):
		t.Fatal("inv_1 not fired within 5 s of the clock passing its deadline")
	}
}
