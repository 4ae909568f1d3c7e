package actors

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
)

// TestReplayRefusesAnEventThatDoesNotApply: an invoice whose journal
// holds, after its snapshot, an event the state machine refuses (an
// expiry before the invoice's expiry time) is not loaded as if the event
// were not there. The actor refuses the invoice's commands with an
// error, logs which event of which invoice does not apply, and the
// system lists the invoice among its journal faults; a sound invoice of
// the same store keeps working (the positive control).
func TestReplayRefusesAnEventThatDoesNotApply(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	bad, good := h.invoice("1000", kassa.SATS), h.invoice("1000", kassa.SATS)

	// The snapshot stays at seq 1; the journal gets an event at seq 2
	// that cannot apply to a New invoice before its expiry.
	ev := &protos.InvoiceEvent{AtUnixNano: bad.CreatedAt.UnixNano(), Kind: &protos.InvoiceEvent_ExpiryReached{ExpiryReached: &protos.ExpiryReached{}}}
	data, err := marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: bad.ID}, 2, data)
	if err := db.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}

	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	logs := &kassatest.LogBuffer{}
	h2 := newHarnessWith(t, db2, clock, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	h2.store = h.store
	ctx := context.Background()

	if _, err := h2.sys.Service.MarkInvoiceInvalid(ctx, h.store.ID, good.ID); err != nil {
		t.Fatalf("mark the sound invoice invalid: %v", err)
	}
	got, err := h2.sys.Service.MarkInvoiceInvalid(ctx, h.store.ID, bad.ID)
	if err == nil {
		t.Fatalf("the invoice whose journal does not replay was marked invalid: %+v", got)
	}
	if !strings.Contains(err.Error(), "journal") {
		t.Fatalf("error = %v; want one that names the journal", err)
	}
	if inv := h2.get(bad.ID); inv.Status != kassa.InvoiceNew {
		t.Fatalf("the refused invoice's snapshot changed to %s", inv.Status)
	}
	if _, err := h2.sys.Service.MarkInvoiceInvalid(ctx, h.store.ID, bad.ID); err == nil {
		t.Fatal("a second command to the refused invoice succeeded")
	}
	faults := h2.sys.Runtime.JournalFaults()
	if len(faults) != 1 || faults[0].Stream.ID != bad.ID || faults[0].Seq != 2 {
		t.Fatalf("journal faults = %+v; want the invoice %s at seq 2", faults, bad.ID)
	}
	out := logs.String()
	if !strings.Contains(out, "level=ERROR") || !strings.Contains(out, bad.ID) || !strings.Contains(out, "ExpiryReached") {
		t.Fatalf("log does not say which event of which invoice failed:\n%s", out)
	}
	if n := strings.Count(out, "does not replay"); n != 1 {
		t.Fatalf("the fault is logged %d times, want once:\n%s", n, out)
	}
	for _, st := range h2.sys.Runtime.ActorStats() {
		if st.Restarts != 0 {
			t.Fatalf("%d %s actors restarted: a refused journal is no crash to retry", st.Restarts, st.Kind)
		}
	}
}

// newerSnapshots answers, for the ids in it, the error Pebble and
// PostgreSQL give for a snapshot of a newer format (persistence/format
// tests that they do).
type newerSnapshots struct {
	kassa.Journal
	ids map[string]bool
}

func (j newerSnapshots) StoreSnapshot(ctx context.Context, id string) (*kassa.Store, uint64, error) {
	if j.ids[id] {
		return nil, 0, fmt.Errorf("decode store %s: %w", id, &format.VersionError{Kind: format.Store, Found: 99})
	}
	return j.Journal.StoreSnapshot(ctx, id)
}

func (j newerSnapshots) InvoiceSnapshot(ctx context.Context, id string) (*kassa.Invoice, uint64, error) {
	if j.ids[id] {
		return nil, 0, fmt.Errorf("decode invoice %s: %w", id, &format.VersionError{Kind: format.Invoice, Found: 99})
	}
	return j.Journal.InvoiceSnapshot(ctx, id)
}

// TestNewerSnapshotRefused: a store or invoice snapshot written in a
// newer format than this binary reads is not guessed at: the actor
// refuses its commands with an error that says so, the log says it
// once, the system lists it among its journal faults, and no actor
// restarts in a loop. Another store and another invoice keep working
// (the positive controls).
func TestNewerSnapshotRefused(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	newerStore := h.createStore("0", "0")
	other := h.createStore("0", "0")
	newerInvoice, sound := h.invoice("1000", kassa.SATS), h.invoice("1000", kassa.SATS)

	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	logs := &kassatest.LogBuffer{}
	h2 := newHarnessWith(t, db2, clock, func(c *Config) {
		c.Journal = newerSnapshots{Journal: db2, ids: map[string]bool{newerStore.ID: true, newerInvoice.ID: true}}
		c.Logger = slog.New(slog.NewTextHandler(logs, nil))
	})
	ctx := context.Background()

	if _, err := h2.sys.Service.MarkInvoiceInvalid(ctx, other.ID, sound.ID); err != nil {
		t.Fatalf("an invoice of a sound snapshot: %v", err)
	}
	if _, err := h2.sys.Service.TopUp(ctx, other.ID, 1000, ""); err != nil {
		t.Fatalf("a store of a sound snapshot: %v", err)
	}
	for i := range 2 {
		if _, err := h2.sys.Service.MarkInvoiceInvalid(ctx, other.ID, newerInvoice.ID); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("command %d to the invoice of a newer snapshot: %v; want an error that says it is newer", i, err)
		}
		if _, err := h2.sys.Service.TopUp(ctx, newerStore.ID, 1000, ""); err == nil || !strings.Contains(err.Error(), "newer") {
			t.Fatalf("command %d to the store of a newer snapshot: %v; want an error that says it is newer", i, err)
		}
	}
	faults := h2.sys.Runtime.JournalFaults()
	if len(faults) != 2 || faults[0].Stream.ID != newerInvoice.ID || faults[1].Stream.ID != newerStore.ID {
		t.Fatalf("journal faults = %+v; want the invoice and the store", faults)
	}
	out := logs.String()
	for _, id := range []string{newerStore.ID, newerInvoice.ID} {
		if n := strings.Count(out, "id="+id); n != 1 {
			t.Fatalf("%s is logged %d times, want once:\n%s", id, n, out)
		}
	}
	for _, st := range h2.sys.Runtime.ActorStats() {
		if st.Restarts != 0 {
			t.Fatalf("%d %s actors restarted: a newer snapshot is no crash to retry", st.Restarts, st.Kind)
		}
	}
}
