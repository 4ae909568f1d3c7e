package lnd_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/persistence"
)

// wallet is lnd as the pool sees it: GetInfo with an identity key and
// NewAddress handing out a fresh address per call, until down is set
// (the only failure injected: lnd unreachable).
type wallet struct {
	mu       sync.Mutex
	identity string
	n        int
	down     bool
	given    []string
}

var errLndDown = errors.New("rpc error: code = Unavailable desc = connection error: dial tcp 127.0.0.1:10009: connect: connection refused")

func newWallet() *wallet { return &wallet{identity: "02aa"} }

func (w *wallet) rpc() *fakeRPC {
	return &fakeRPC{
		getInfo: func(context.Context) (*lnrpc.GetInfoResponse, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.down {
				return nil, errLndDown
			}
			return &lnrpc.GetInfoResponse{IdentityPubkey: w.identity, SyncedToChain: true}, nil
		},
		newAddress: func(context.Context) (string, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.down {
				return "", errLndDown
			}
			w.n++
			addr := fmt.Sprintf("bcrt1q%s%04d", w.identity, w.n)
			w.given = append(w.given, addr)
			return addr, nil
		},
	}
}

func (w *wallet) setDown(down bool) {
	w.mu.Lock()
	w.down = down
	w.mu.Unlock()
}

func newPool(t *testing.T, w *wallet, store lnd.PoolStore, size int) *lnd.AddressPool {
	t.Helper()
	node, err := lnd.New(w.rpc(), lnd.Config{Cursor: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := lnd.NewPool(node, lnd.PoolConfig{Store: store, Size: size, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func left(t *testing.T, p *lnd.AddressPool) int {
	t.Helper()
	n, err := p.Left(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// While lnd answers, an address is lnd's fresh one and the pool is left
// alone; while it does not, the pool's addresses are handed out oldest
// first, each once, then ErrNoWalletAddress (which names Lightning).
// After a restart the taken ones stay taken; once lnd is back the pool
// fills up again with fresh addresses only.
func TestPoolHandsOutEachAddressOnceThroughAnOutage(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	w := newWallet()
	p := newPool(t, w, db, 3)
	if err := p.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	pooled := slices.Clone(w.given)
	if n := left(t, p); n != 3 || len(pooled) != 3 {
		t.Fatalf("after a fill: %d left, %d asked of lnd; want 3, 3", n, len(pooled))
	}
	if err := p.Fill(ctx); err != nil || len(w.given) != 3 {
		t.Fatalf("a full pool asked lnd again: %v, %d addresses", err, len(w.given))
	}

	addr, err := p.Address(ctx, "inv_up")
	if err != nil || addr != w.given[3] || left(t, p) != 3 {
		t.Fatalf("lnd up: %q %v (lnd gave %v), pool %d; want lnd's fresh address and the pool untouched", addr, err, w.given, left(t, p))
	}

	w.setDown(true)
	var got []string
	for i := range 3 {
		addr, err := p.Address(ctx, fmt.Sprintf("inv_%d", i))
		if err != nil {
			t.Fatalf("take %d with lnd down: %v", i, err)
		}
		got = append(got, addr)
		if n := left(t, p); n != 2-i {
			t.Fatalf("after %d takes: %d left", i+1, n)
		}
	}
	if !slices.Equal(got, pooled) {
		t.Fatalf("handed out %v, want the pool's %v in order", got, pooled)
	}
	_, err = p.Address(ctx, "inv_empty")
	if !errors.Is(err, kassa.ErrNoWalletAddress) || kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("empty pool, lnd down: %v, want ErrNoWalletAddress", err)
	}
	rec, err := db.Request(ctx, "lnd-address-pool", pooled[1])
	if err != nil || rec.ResultID != "inv_1" || rec.Kind != kassa.RequestPoolAddress {
		t.Fatalf("take record of %s: %+v %v, want invoice inv_1", pooled[1], rec, err)
	}

	// A restart: the takes are durable, nothing is handed out twice.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	p = newPool(t, w, db, 3)
	if n := left(t, p); n != 0 {
		t.Fatalf("after a restart: %d left, want 0", n)
	}
	if _, err := p.Address(ctx, "inv_after_restart"); !errors.Is(err, kassa.ErrNoWalletAddress) {
		t.Fatalf("after a restart with lnd down: %v, want ErrNoWalletAddress", err)
	}
	if err := p.Fill(ctx); err == nil {
		t.Fatal("the pool filled while lnd was down")
	}

	w.setDown(false)
	if err := p.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	refilled := w.given[len(w.given)-3:]
	w.setDown(true)
	got = got[:0]
	for i := range 3 {
		addr, err := p.Address(ctx, fmt.Sprintf("inv_again_%d", i))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, addr)
	}
	if !slices.Equal(got, refilled) {
		t.Fatalf("after the refill: handed out %v, want the fresh %v", got, refilled)
	}
}

// The pool of a former lnd (another identity key) is dropped, not
// handed out: its addresses are not the wallet's.
func TestPoolOfAnotherNodeIsDropped(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	w := newWallet()
	p := newPool(t, w, db, 2)
	if err := p.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	old := slices.Clone(w.given)
	w.mu.Lock()
	w.identity = "03bb"
	w.mu.Unlock()
	if err := p.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	w.setDown(true)
	for i := range 2 {
		addr, err := p.Address(ctx, fmt.Sprintf("inv_%d", i))
		if err != nil || slices.Contains(old, addr) {
			t.Fatalf("take %d: %q %v; the former node's addresses were %v", i, addr, err, old)
		}
	}
}

// Run fills the pool at start and again after a take once lnd is back.
func TestPoolRunRefillsAfterOutage(t *testing.T) {
	db := openDB(t)
	w := newWallet()
	node, err := lnd.New(w.rpc(), lnd.Config{Cursor: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	clock := kassatest.NewTestClock(kassatest.Epoch)
	p, err := lnd.NewPool(node, lnd.PoolConfig{Store: db, Size: 4, Interval: time.Minute, Clock: clock, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	defer func() { cancel(); <-done }()
	kassatest.WaitUntil(t, "the pool filled at start", func() bool { return left(t, p) == 4 })

	w.setDown(true)
	if _, err := p.Address(context.Background(), "inv_1"); err != nil {
		t.Fatal(err)
	}
	if n := left(t, p); n != 3 {
		t.Fatalf("after a take: %d left", n)
	}
	w.setDown(false)
	// The take woke Run, whose fill failed while lnd was down; the next
	// round, an interval later, finds lnd back.
	// Interval is a minute: the next round is due within it.
	clock.StepUntil(t, "the pool refilled", clock.Now().Add(2*time.Minute), func() bool {
		return left(t, p) == 4
	})
}

// The same on one Pebble store shared by two pools.
func TestPoolSharedByTwoPoolsOverPebble(t *testing.T) {
	db := openDB(t)
	testPoolShared(t, func() lnd.PoolStore { return db })
}

func testPoolShared(t *testing.T, open func() lnd.PoolStore) {
	ctx := context.Background()
	const size, takers = 10, 8
	w := newWallet()
	a, b := newPool(t, w, open(), size), newPool(t, w, open(), size)
	if err := a.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	// b filling at once finds the pool full and asks lnd for nothing.
	if err := b.Fill(ctx); err != nil || len(w.given) != size {
		t.Fatalf("second fill: %v, lnd gave %d addresses, want %d", err, len(w.given), size)
	}
	w.setDown(true)
	var (
		mu     sync.Mutex
		handed = map[string]string{}
		empty  atomic.Int64
		wg     sync.WaitGroup
	)
	for i := range 2 * takers {
		p := a
		if i%2 == 1 {
			p = b
		}
		wg.Go(func() {
			for j := range 2 {
				id := fmt.Sprintf("inv_%d_%d", i, j)
				addr, err := p.Address(ctx, id)
				if errors.Is(err, kassa.ErrNoWalletAddress) {
					empty.Add(1)
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				if other, ok := handed[addr]; ok {
					t.Errorf("%s handed out twice: to %s and %s", addr, other, id)
				}
				handed[addr] = id
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(handed) != size || empty.Load() != 4*takers-size {
		t.Fatalf("%d addresses handed out, %d refused; want %d and %d", len(handed), empty.Load(), size, 4*takers-size)
	}
	for _, p := range []*lnd.AddressPool{a, b} {
		if n := left(t, p); n != 0 {
			t.Fatalf("%d left after every address was taken", n)
		}
	}
}

// stallingWrite is a node's pool store whose first write of the pool
// record waits, once it has been asked for, until release is closed: a
// node descheduled between reading the pool and writing it.
type stallingWrite struct {
	lnd.PoolStore
	once     sync.Once
	writing  chan struct{} // closed when the stalled write was asked for
	released chan struct{}
}

func (s *stallingWrite) stall() {
	s.once.Do(func() {
		close(s.writing)
		<-s.released
	})
}

func (s *stallingWrite) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	s.stall()
	return s.PoolStore.PutValue(ctx, key, value, expires)
}

func (s *stallingWrite) SwapValue(ctx context.Context, key string, old, value []byte, expires time.Time) (bool, error) {
	s.stall()
	return s.PoolStore.SwapValue(ctx, key, old, value, expires)
}

// The same on one Pebble store shared by two pools.
func TestPoolRefillsAtOnceOverPebbleKeepEveryAddress(t *testing.T) {
	db := openDB(t)
	testPoolRefillsAtOnce(t, func() lnd.PoolStore { return db })
}

func testPoolRefillsAtOnce(t *testing.T, open func() lnd.PoolStore) {
	ctx := context.Background()
	const size = 10
	w := newWallet()
	stalled := &stallingWrite{PoolStore: open(), writing: make(chan struct{}), released: make(chan struct{})}
	a, b := newPool(t, w, stalled, size), newPool(t, w, open(), size)
	filled := make(chan error, 1)
	go func() { filled <- a.Fill(ctx) }()
	<-stalled.writing
	if err := b.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	close(stalled.released)
	if err := <-filled; err != nil {
		t.Fatal(err)
	}
	w.mu.Lock()
	given := slices.Clone(w.given)
	w.mu.Unlock()
	t.Logf("lnd gave %d addresses to the two refills; the pool keeps %d", len(given), left(t, b))
	if n := left(t, b); n != len(given) {
		t.Errorf("the pool keeps %d of the %d addresses lnd gave the two refills: %d written over", n, len(given), len(given)-n)
	}
	// Every one of them is handed out while lnd is down, each once.
	w.setDown(true)
	seen := map[string]bool{}
	for i := range len(given) + 1 {
		addr, err := a.Address(ctx, fmt.Sprintf("inv_%d", i))
		if i == len(given) {
			if !errors.Is(err, kassa.ErrNoWalletAddress) {
				t.Errorf("take after the pool is used up: %q, %v", addr, err)
			}
			break
		}
		if err != nil || seen[addr] || !slices.Contains(given, addr) {
			t.Fatalf("take %d: %q, %v (handed out before: %v)", i, addr, err, seen[addr])
		}
		seen[addr] = true
	}
}
