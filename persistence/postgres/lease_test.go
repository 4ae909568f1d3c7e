package postgres

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lease"
)

// openClocked opens two handles on one fresh schema (two nodes) whose
// lease expiries are judged by clock.
func openClocked(t testing.TB, clock kassa.Clock) (*DB, *DB) {
	t.Helper()
	dsn := newSchema(t)
	open := func() *DB {
		db, err := Open(t.Context(), dsn, Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open()
}

// TestLeaseFencing: leader A holds epoch 1 and writes its cursor; A
// stalls past its lease's expiry; B takes the role with epoch 2; A's
// cursor write and renewal are then refused with lease.ErrLost, and the
// cursor keeps B's value.
func TestLeaseFencing(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, clock)
	const ttl = 10 * time.Second
	a, ok, err := dbA.Leases().Acquire(ctx, lease.RoleChainWatcher, "node-a", ttl)
	if err != nil || !ok || a.Epoch != 1 {
		t.Fatalf("A's Acquire = %+v, %v, %v; want epoch 1", a, ok, err)
	}
	if _, ok, err := dbB.Leases().Acquire(ctx, lease.RoleChainWatcher, "node-b", ttl); ok || err != nil {
		t.Fatalf("B's Acquire while A's lease runs = %v, %v; want refused", ok, err)
	}
	if err := dbA.Leases().Fenced(a).PutValue(ctx, "cursor", []byte("a-100"), kassatest.Epoch.Add(time.Hour)); err != nil {
		t.Fatalf("A's cursor write while it holds the lease: %v", err)
	}
	// Another role is independent.
	if l, ok, err := dbB.Leases().Acquire(ctx, lease.RoleLightningWatcher, "node-b", ttl); !ok || err != nil || l.Epoch != 1 {
		t.Errorf("B's Acquire of another role = %+v, %v, %v", l, ok, err)
	}

	clock.Advance(ttl + time.Millisecond) // A stalls: no renewal
	b, ok, err := dbB.Leases().Acquire(ctx, lease.RoleChainWatcher, "node-b", ttl)
	if err != nil || !ok || b.Epoch != 2 {
		t.Fatalf("B's Acquire after A's expiry = %+v, %v, %v; want epoch 2", b, ok, err)
	}
	if err := dbB.Leases().Fenced(b).PutValue(ctx, "cursor", []byte("b-101"), kassatest.Epoch.Add(time.Hour)); err != nil {
		t.Fatalf("B's cursor write: %v", err)
	}

	// A wakes up.
	err = dbA.Leases().Fenced(a).PutValue(ctx, "cursor", []byte("a-101"), kassatest.Epoch.Add(time.Hour))
	if !errors.Is(err, lease.ErrLost) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("A's cursor write after B took over = %v (code %s), want lease.ErrLost", err, kassa.ErrorCode(err))
	}
	if _, err := dbA.Leases().Renew(ctx, a, ttl); !errors.Is(err, lease.ErrLost) {
		t.Errorf("A's Renew after B took over = %v, want lease.ErrLost", err)
	}
	if _, ok, _ := dbA.Leases().Acquire(ctx, lease.RoleChainWatcher, "node-a", ttl); ok {
		t.Error("A re-acquired while B's lease runs")
	}
	if v, _, _ := dbA.GetValue(ctx, "cursor"); string(v) != "b-101" {
		t.Errorf("cursor = %q, want B's b-101", v)
	}

	// B releases: A may take the role at once, with epoch 3.
	if err := dbB.Leases().Release(ctx, b); err != nil {
		t.Fatal(err)
	}
	if a3, ok, err := dbA.Leases().Acquire(ctx, lease.RoleChainWatcher, "node-a", ttl); !ok || err != nil || a3.Epoch != 3 {
		t.Errorf("A's Acquire after B released = %+v, %v, %v; want epoch 3", a3, ok, err)
	}
}

// TestLeaseRunnerStepsDown: a Runner whose work is stalled past the
// lease's expiry (its own timers do not fire, as in a stopped process)
// loses the role to another node; when the work wakes up, its cursor
// write is refused and the Runner steps down: the work's context ends
// and Status no longer says held.
func TestLeaseRunnerStepsDown(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dbClock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, dbClock)
	const ttl = 10 * time.Second

	var (
		mu      sync.Mutex
		wrote   []error
		started = make(chan struct{})
		wake    = make(chan struct{})
		ended   = make(chan struct{})
	)
	r := &lease.Runner{
		Store: dbA.Leases(), Role: lease.RoleLightningWatcher, Holder: "node-a", TTL: ttl,
		Clock: kassatest.NewTestClock(kassatest.Epoch), // A's timers: never advanced
		Log:   slog.New(slog.DiscardHandler),
		Work: func(wctx context.Context, kv kassa.KeyValue) error {
			record := func(v string) {
				err := kv.PutValue(wctx, "cursor", []byte(v), kassatest.Epoch.Add(time.Hour))
				mu.Lock()
				wrote = append(wrote, err)
				mu.Unlock()
			}
			record("a-1")
			close(started)
			<-wake // stalled
			record("a-2")
			<-wctx.Done()
			close(ended)
			return nil
		},
	}
	runDone := make(chan struct{})
	go func() { defer close(runDone); r.Run(ctx) }()
	<-started
	if s := r.Status(); !s.Held || s.Epoch != 1 {
		t.Fatalf("Status while working = %+v, want held at epoch 1", s)
	}
	dbClock.Advance(ttl + time.Millisecond)
	b, ok, err := dbB.Leases().Acquire(ctx, lease.RoleLightningWatcher, "node-b", ttl)
	if !ok || err != nil || b.Epoch != 2 {
		t.Fatalf("B's Acquire = %+v, %v, %v", b, ok, err)
	}
	close(wake)
	<-ended // the refused write stepped the Runner down
	mu.Lock()
	if len(wrote) != 2 || wrote[0] != nil || !errors.Is(wrote[1], lease.ErrLost) {
		t.Errorf("A's writes = %v, want [nil, lease lost]", wrote)
	}
	mu.Unlock()
	kassatest.WaitUntil(t, "the Runner to step down", func() bool { return !r.Status().Held })
	if v, _, _ := dbB.GetValue(ctx, "cursor"); string(v) != "a-1" {
		t.Errorf("cursor = %q, want a-1 (A's write after the take-over refused)", v)
	}
	cancel()
	<-runDone
}
