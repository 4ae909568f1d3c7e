package actors

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestRestartActivatesInvoicesLazily restarts with open invoices whose
// expiry is ten minutes away: Recover wakes none of them, so start-up does
// not grow with their number; the sweeper wakes them as their deadline
// approaches, every timer is armed before the deadline, and every expiry
// fires on time.
func TestRestartActivatesInvoicesLazily(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	const n = 30
	var invoices []*kassa.Invoice
	for range n {
		invoices = append(invoices, h.invoice("1000", kassa.SATS))
	}
	db2 := reopen(t, h, db, dir)
	clock.Advance(5 * time.Minute)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h2.sys.Runtime.RunSweeper(ctx)
	woken, err := h2.sys.Runtime.Recover(ctx)
	if err != nil || woken != 0 {
		t.Fatalf("Recover woke %d invoices (%v), want none: no deadline is near", woken, err)
	}
	for _, inv := range invoices {
		if h2.active(inv) {
			t.Fatalf("invoice %s is active after the restart", inv.ID)
		}
	}
	// The sweeper arms its next round in its own goroutine.
	eventually(t, "only the sweeper's timer pending", func() bool { return clock.Pending() == 1 })

	// A minute at a time up to a minute before the deadline. The pending
	// timers are the positive control: the sweeper's own, then, once the
	// deadline is within its reach, one per invoice, armed in time.
	for clock.Now().Before(invoices[0].ExpiresAt.Add(-time.Minute)) {
		clock.Advance(time.Minute)
		want := 1
		if !invoices[0].ExpiresAt.After(clock.Now().Add(sweepAhead)) {
			want = n + 1
		}
		eventually(t, "the sweeper's round", func() bool { return clock.Pending() == want })
	}
	clock.Advance(time.Minute)
	for _, inv := range invoices {
		eventually(t, "expiry", func() bool { return h2.get(inv.ID).Status == kassa.InvoiceExpired })
		if got := h2.get(inv.ID); !got.UpdatedAt.Equal(got.ExpiresAt) {
			t.Fatalf("invoice %s expired at %v, want its expiry %v", inv.ID, got.UpdatedAt, got.ExpiresAt)
		}
	}
	// Expired, they wait an hour for the end of monitoring: passivated.
	for _, inv := range invoices {
		eventually(t, "passivation", func() bool { return !h2.active(inv) })
	}
}

// TestNewInvoicePassivatesUntilItsExpiryIsNear checks that a new invoice
// due later than sweepAhead holds no actor and no timer once created, is
// woken by the sweeper as its expiry nears, and expires on time; and that
// one due within sweepAhead keeps its actor and timer from the start.
func TestNewInvoicePassivatesUntilItsExpiryIsNear(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	eventually(t, "the new invoice's actor to stop", func() bool { return !h.active(inv) })
	if n := clock.Pending(); n != 0 {
		t.Fatalf("%d timers pending for an invoice due in 15 minutes, want none", n)
	}
	h.runSweeper()
	eventually(t, "the sweeper's timer", func() bool { return clock.Pending() == 1 })
	clock.Advance(inv.ExpiresAt.Add(-time.Minute).Sub(clock.Now()))
	eventually(t, "the sweeper to wake the invoice and arm its timer", func() bool {
		return h.active(inv) && clock.Pending() == 2
	})
	if got := h.get(inv.ID).Status; got != kassa.InvoiceNew {
		t.Fatalf("a minute before its expiry the invoice is %s", got)
	}
	clock.Advance(time.Minute)
	eventually(t, "expiry", func() bool { return h.get(inv.ID).Status == kassa.InvoiceExpired })
	if got := h.get(inv.ID); !got.UpdatedAt.Equal(got.ExpiresAt) {
		t.Errorf("expired at %v, want its expiry %v", got.UpdatedAt, got.ExpiresAt)
	}

	// Due within sweepAhead: the actor stays, with its timer.
	soon := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.InvoiceExpiry = time.Minute })
	soon.createStore("0", "0")
	before := clock.Pending()
	quick := soon.invoice("1000", kassa.SATS)
	time.Sleep(50 * time.Millisecond) // room for a stop that must not come
	if !soon.active(quick) || clock.Pending() != before+1 {
		t.Fatalf("an invoice due in a minute: active %v, %d new timers; want active and 1", soon.active(quick), clock.Pending()-before)
	}
}
