package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// panicJournal is the Pebble journal, except that while armed its next
// commit panics, before writing (after unset) or once the batch is
// written (after set), as a port with a bug would in the store actor's
// turn. Only the failure is injected.
type panicJournal struct {
	kassa.Journal
	armed atomic.Bool
	after bool
}

func (j *panicJournal) Commit(ctx context.Context, b kassa.Batch) error {
	if !j.armed.CompareAndSwap(true, false) {
		return j.Journal.Commit(ctx, b)
	}
	if j.after {
		if err := j.Journal.Commit(ctx, b); err != nil {
			return err
		}
	}
	panic("injected: the journal port panicked")
}

// TestStoreActorPanicAnswersAtOnce: a store command whose handling
// panics in the store actor's turn (a port's panic, outside a routed
// call's recover) answers its caller the panic's error, not the
// caller's deadline, and the actor, restarted, holds what storage
// holds: a panic before the write credits nothing, one after it credits
// once, and the top-up sent again with its reference is credited once.
func TestStoreActorPanicAnswersAtOnce(t *testing.T) {
	for _, when := range []string{"before", "after"} {
		t.Run(when+" the write", func(t *testing.T) {
			db := openMem(t)
			j := &panicJournal{Journal: db, after: when == "after"}
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Now()), func(c *Config) { c.Journal = j })
			st := h.createStore("0", "0")
			// A generous deadline: a caller left waiting would wait it out
			// and get its timeout, not the panic's error.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			j.armed.Store(true)
			if _, err := h.sys.Service.TopUp(ctx, st.ID, 1000, "ref-1"); !errors.Is(err, errActorPanicked) {
				t.Fatalf("top-up whose commit panicked: %v, want %v", err, errActorPanicked)
			}
			want := kassa.Sats(0)
			if j.after {
				want = 1000
			}
			if b, err := db.Balance(ctx, st.ID); err != nil || b != want {
				t.Fatalf("balance after the panic %d, %v; want %d", b, err, want)
			}
			if _, err := h.sys.Service.TopUp(ctx, st.ID, 1000, "ref-1"); err != nil {
				t.Fatalf("the top-up sent again: %v", err)
			}
			if _, err := h.sys.Service.TopUp(ctx, st.ID, 500, "ref-2"); err != nil {
				t.Fatalf("the next top-up: %v", err)
			}
			if b, err := db.Balance(ctx, st.ID); err != nil || b != 1500 {
				t.Fatalf("balance %d, %v; want 1500: each reference credited once", b, err)
			}
		})
	}
}

// TestInvoiceActorPanicAnswersAtOnce: a payment whose recording panics
// in the invoice actor's turn answers the caller the panic's error, not
// its deadline; the invoice actor, restarted from storage, records the
// payment delivered again once, and a third delivery changes nothing.
func TestInvoiceActorPanicAnswersAtOnce(t *testing.T) {
	for _, when := range []string{"before", "after"} {
		t.Run(when+" the write", func(t *testing.T) {
			db := openMem(t)
			j := &panicJournal{Journal: db, after: when == "after"}
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Now()), func(c *Config) { c.Journal = j })
			h.createStore("0", "0")
			inv := h.invoice("1000", kassa.SATS)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			paid := kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000}
			j.armed.Store(true)
			if err := h.sys.Service.HandleLightningEvent(ctx, paid); !errors.Is(err, errActorPanicked) {
				t.Fatalf("payment whose commit panicked: %v, want %v", err, errActorPanicked)
			}
			if err := h.sys.Service.HandleLightningEvent(ctx, paid); err != nil {
				t.Fatalf("the payment delivered again: %v", err)
			}
			if got := h.get(inv.ID); got.Status != kassa.InvoiceSettled {
				t.Fatalf("invoice %s after the payment delivered again", got.Status)
			}
			lines, err := db.TransactionsByInvoice(ctx, inv.ID)
			if err != nil {
				t.Fatal(err)
			}
			if err := h.sys.Service.HandleLightningEvent(ctx, paid); err != nil {
				t.Fatalf("a third delivery: %v", err)
			}
			again, err := db.TransactionsByInvoice(ctx, inv.ID)
			if err != nil || len(again) != len(lines) || len(lines) == 0 {
				t.Fatalf("ledger lines %d, then %d after a third delivery (%v): want the same, more than none", len(lines), len(again), err)
			}
		})
	}
}
