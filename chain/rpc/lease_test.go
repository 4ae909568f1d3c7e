//go:build daemon

package rpc

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lease"
	"github.com/kassapay/kassa/persistence/postgres"
)

var pg harness.SharedPostgres

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// openNodes opens two handles on one fresh PostgreSQL schema (two nodes
// of a cluster) whose lease expiries are judged by clock.
func openNodes(t *testing.T, clock kassa.Clock) (*postgres.DB, *postgres.DB) {
	t.Helper()
	dsn := pg.Schema(t)
	open := harness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: clock})
	})
	return open(), open()
}

// leaseNode is one node of the test cluster: its chain backend, the
// runner of its chain-watcher lease, and the events its watcher
// delivered.
type leaseNode struct {
	name   string
	chain  *Chain
	runner *lease.Runner
	clock  *kassatest.TestClock // the runner's timers
	works  atomic.Int64         // how often the runner started the watcher

	mu     sync.Mutex
	events []string
	// stall, when set, holds the handler on a payment of this txid
	// until the channel is closed.
	stallTx string
	stall   chan struct{}
	stalled chan struct{}
}

func (n *leaseNode) handle(ctx context.Context, ev kassa.ChainEvent) error {
	n.mu.Lock()
	stall := n.stallTx != "" && ev.Payment.TxID == n.stallTx
	n.mu.Unlock()
	if stall {
		close(n.stalled)
		<-n.stall
	}
	n.mu.Lock()
	n.events = append(n.events, fmt.Sprintf("%s conf %d", label(ev.Payment.TxID), ev.Payment.Confirmations))
	n.mu.Unlock()
	return nil
}

func (n *leaseNode) seen() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.events...)
}

func (n *leaseNode) has(event string) bool {
	for _, e := range n.seen() {
		if e == event {
			return true
		}
	}
	return false
}

// TestChainWatcherUnderLeases runs two nodes' chain watchers, each under
// a lease.Runner over one PostgreSQL: exactly one watches; it finds the
// payment of an invoice the other node created (the other node's
// address, found through the store); when it stalls past its lease, the
// other takes the role over with the next epoch and resumes from the
// saved cursor, and the stalled one's cursor write is refused.
func TestChainWatcherUnderLeases(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	dbClock := kassatest.NewTestClock(time.Now())
	dbA, dbB := openNodes(t, dbClock)
	node := newScriptedNode()
	node.mine(1)
	const ttl = 10 * time.Second

	newNode := func(name string, db *postgres.DB) *leaseNode {
		c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams, Poll: 10 * time.Millisecond}, Node: node,
			State: db, Reader: db, Cluster: true, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		n := &leaseNode{name: name, chain: c, clock: kassatest.NewTestClock(kassatest.Epoch)}
		n.runner = &lease.Runner{Store: db.Leases(), Role: lease.RoleChainWatcher, Holder: name, TTL: ttl,
			Clock: n.clock, Log: slog.New(slog.DiscardHandler),
			Work: func(ctx context.Context, kv kassa.KeyValue) error {
				n.works.Add(1)
				return c.Watch(ctx, kv, n.handle)
			}}
		return n
	}
	a, b := newNode("node-a", dbA), newNode("node-b", dbB)
	t.Cleanup(func() {
		if t.Failed() { // what each node was doing, for a failure seen only under load
			for _, n := range []*leaseNode{a, b} {
				t.Logf("%s: lease %+v, watcher started %d times, events %v, health %+v",
					n.name, n.runner.Status(), n.works.Load(), n.seen(), n.chain.Info(context.Background()))
			}
		}
	})
	if info := a.chain.Info(ctx); !strings.HasPrefix(info.Warning, "standby") || info.Synced {
		t.Errorf("health before the lease: %+v, want standby, not synced (no cursor yet)", info)
	}
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	run := func(n *leaseNode) {
		wg.Add(1)
		go func() { defer wg.Done(); n.runner.Run(ctx) }()
	}
	run(a)
	kassatest.WaitUntil(t, "A to hold the role", func() bool { return a.runner.Status().Held })
	run(b)
	kassatest.WaitUntil(t, "B to wait for its next try", func() bool { return b.clock.Pending() == 1 })

	// Node B creates an invoice (B's own matcher learns its address, A's
	// does not): A's watcher finds it through the store.
	addr1, script1 := testAddress(t, 1)
	st := &kassa.Store{ID: "store_1", Name: "Shop"}
	inv := &kassa.Invoice{ID: "inv_1", StoreID: st.ID, OnchainAddress: addr1, ConfirmationsRequired: 1,
		CreatedAt: time.Now().UTC(), Status: kassa.InvoiceNew}
	batch := dbB.NewBatch()
	batch.PutStore(st, 1)
	batch.PutInvoice(inv, nil, 1)
	if err := dbB.Commit(ctx, batch); err != nil {
		t.Fatal(err)
	}
	tx1 := payment(1, script1, 5000)
	node.mine(2, tx1)
	p1 := label(tx1.TxHash().String())
	kassatest.WaitUntil(t, "A to report the payment to B's address", func() bool { return a.has(p1 + " conf 1") })
	if s := a.runner.Status(); !s.Held || s.Epoch != 1 {
		t.Fatalf("A's status %+v, want held at epoch 1", s)
	}
	if s := b.runner.Status(); s.Held || b.works.Load() != 0 || len(b.seen()) != 0 {
		t.Fatalf("B's status %+v, %d watcher runs, events %v: want B standing by", s, b.works.Load(), b.seen())
	}
	if info := a.chain.Info(ctx); !info.Synced || info.Height != 2 {
		t.Errorf("A's health while it watches: %+v", info)
	}

	// A stalls on the next payment, past its lease's expiry.
	_, script2 := testAddress(t, 2)
	a.chain.matcher.add(script2, &watch{address: "second", storeID: st.ID, index: -1, until: time.Now().Add(time.Hour), confirmations: 1})
	b.chain.matcher.add(script2, &watch{address: "second", storeID: st.ID, index: -1, until: time.Now().Add(time.Hour), confirmations: 1})
	tx2 := payment(2, script2, 7000)
	a.mu.Lock()
	a.stallTx, a.stall, a.stalled = tx2.TxHash().String(), make(chan struct{}), make(chan struct{})
	a.mu.Unlock()
	node.mine(3, tx2)
	p2 := label(tx2.TxHash().String())
	<-a.stalled
	dbClock.Advance(ttl + time.Millisecond)
	// B's retry timer fires: it takes the role with epoch 2 and resumes
	// from A's cursor (block 2): the payment A acknowledged is not
	// reported again at depth 1; block 3 is.
	b.clock.Advance(ttl)
	kassatest.WaitUntil(t, "B to take the role over and report the second payment", func() bool { return b.has(p2 + " conf 1") })
	if s := b.runner.Status(); !s.Held || s.Epoch != 2 {
		t.Fatalf("B's status %+v, want held at epoch 2", s)
	}
	if got := b.seen(); len(got) != 2 || got[0] != p1+" conf 2" || got[1] != p2+" conf 1" {
		t.Errorf("B's events %v, want [%s conf 2, %s conf 1]: resumed from A's cursor", got, p1, p2)
	}
	kassatest.WaitUntil(t, "B to save its cursor", func() bool { return cursorHeight(t, dbB) == 3 })

	// A wakes up: its cursor write is refused and it steps down.
	close(a.stall)
	kassatest.WaitUntil(t, "A to step down", func() bool { return !a.runner.Status().Held })
	if h := cursorHeight(t, dbA); h != 3 {
		t.Errorf("cursor at height %d after A woke, want B's 3", h)
	}
	// A, standing by, reports B's progress from the shared cursor.
	if info := a.chain.Info(ctx); !strings.HasPrefix(info.Warning, "standby") || !info.Synced || info.Height != 3 || info.NodeHeight != 3 {
		t.Errorf("A's health after stepping down: %+v, want standby, synced at B's cursor 3", info)
	}
	if l, ok, err := dbA.Leases().Current(ctx, lease.RoleChainWatcher); err != nil || !ok || l.Holder != "node-b" || l.Epoch != 2 {
		t.Errorf("lease %+v, %v, %v; want B's at epoch 2", l, ok, err)
	}
}

// cursorHeight reads the chain watcher's saved cursor height.
func cursorHeight(t *testing.T, db *postgres.DB) int64 {
	t.Helper()
	raw, ok, err := db.GetValue(context.Background(), "chain/rpc/regtest")
	if err != nil || !ok {
		return -1
	}
	var s savedState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s.Height
}
