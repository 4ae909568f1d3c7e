//go:build daemon

package lnd_test

import (
	"context"
	"encoding/hex"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lease"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/persistence/postgres"
)

// TestLightningWatcherUnderLeases: two nodes' invoice watchers, each
// under a lease.Runner over one PostgreSQL. Only the lease holder
// subscribes to lnd; when it stalls on a settle past its lease, the
// other node takes the role with the next epoch, subscribes from the
// saved settle_index and moves it on; the stalled one's cursor write is
// refused and it steps down.
func TestLightningWatcherUnderLeases(t *testing.T) {
	dbClock := kassatest.NewTestClock(time.Now())
	dsn := harness.PostgresSchema(t)
	open := harness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: dbClock})
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const ttl = 10 * time.Second

	type node struct {
		n      *lnd.Node
		subs   *streams
		acks   *acks
		runner *lease.Runner
		clock  *kassatest.TestClock
		works  atomic.Int64
		db     *postgres.DB
	}
	var stallMu sync.Mutex
	stallHash, stall, stalled := "", make(chan struct{}), make(chan struct{})
	newLeased := func(name string) *node {
		db := open()
		nd := &node{subs: newStreams(), acks: newAcks(), clock: kassatest.NewTestClock(kassatest.Epoch), db: db}
		n, err := lnd.New(&fakeRPC{subscribeInvoices: nd.subs.subscribe}, lnd.Config{Cursor: db, Cluster: true,
			MinBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		nd.n = n
		handle := func(ctx context.Context, ev kassa.LightningEvent) error {
			stallMu.Lock()
			hold := name == "node-a" && ev.PaymentHash == stallHash
			stallMu.Unlock()
			if hold {
				close(stalled)
				<-stall
			}
			return nd.acks.handle(ctx, ev)
		}
		nd.runner = &lease.Runner{Store: db.Leases(), Role: lease.RoleLightningWatcher, Holder: name, TTL: ttl,
			Clock: nd.clock, Log: slog.New(slog.DiscardHandler),
			Work: func(ctx context.Context, kv kassa.KeyValue) error {
				nd.works.Add(1)
				return n.Watch(ctx, kv, handle)
			}}
		return nd
	}
	a, b := newLeased("node-a"), newLeased("node-b")
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	run := func(nd *node) {
		wg.Add(1)
		go func() { defer wg.Done(); nd.runner.Run(ctx) }()
	}
	run(a)
	stA := a.subs.next(t)
	if stA.from != 0 {
		t.Fatalf("A subscribed from %d, want 0", stA.from)
	}
	run(b)
	kassatest.WaitUntil(t, "B to wait for its next try", func() bool { return b.clock.Pending() == 1 })
	stA.ch <- settled(1, 1)
	if ev := a.acks.next(t); ev.PaymentHash != hex.EncodeToString(hashOf(1)) {
		t.Fatalf("A delivered %+v", ev)
	}
	waitCursor(t, a.n, 1)
	if s := a.runner.Status(); !s.Held || s.Epoch != 1 {
		t.Fatalf("A's lease %+v, want held at epoch 1", s)
	}
	if b.works.Load() != 0 || b.runner.Status().Held {
		t.Fatalf("B watched (%d runs) while A held the lease", b.works.Load())
	}

	// A stalls on settle 2, past its lease.
	stallMu.Lock()
	stallHash = hex.EncodeToString(hashOf(2))
	stallMu.Unlock()
	stA.ch <- settled(2, 2)
	<-stalled
	dbClock.Advance(ttl + time.Millisecond)
	b.clock.Advance(ttl)
	stB := b.subs.next(t)
	if stB.from != 1 {
		t.Fatalf("B subscribed from %d, want A's saved cursor 1", stB.from)
	}
	stB.ch <- settled(2, 2)
	stB.ch <- settled(3, 3)
	b.acks.next(t)
	b.acks.next(t)
	waitCursor(t, b.n, 3)
	if s := b.runner.Status(); !s.Held || s.Epoch != 2 {
		t.Fatalf("B's lease %+v, want held at epoch 2", s)
	}

	close(stall) // A wakes: its write of cursor 2 is refused
	kassatest.WaitUntil(t, "A to step down", func() bool { return !a.runner.Status().Held })
	if got, _ := b.n.SettleIndex(ctx); got != 3 {
		t.Errorf("cursor %d after A woke, want B's 3", got)
	}
}
