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
// (its end included) once, early. Its claim runs Ahead + Grace: one that
// its actor did not then expire (the fire was lost) is fired again after
// that, for an invoice claimed as it came within Ahead Grace after its
// deadline.
func TestSweeperAhead(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db, err := Open("", Options{InMemory: true, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// Due in 1, 2 and 3 minutes.
	for i := 1; i <= 3; i++ {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Minute-15*time.Minute))
		kassatest.Commit(t, db, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
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
	claimed := 2*time.Minute + expiry.DefaultGrace // how long a claim runs
	round(0, "inv_1", "inv_2")
	round(time.Second)
	round(time.Minute, "inv_3")
	round(claimed - time.Millisecond)
	round(claimed, "inv_1", "inv_2")
	round(3*time.Minute + expiry.DefaultGrace - time.Millisecond)
	round(3*time.Minute+expiry.DefaultGrace, "inv_3")
}
