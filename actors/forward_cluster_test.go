package actors

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	testharness "github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lease"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/lnurl"
	"github.com/kassapay/kassa/persistence/postgres"
)

// openShared opens two handles on one fresh PostgreSQL (its own
// throw-away server, stopped when t ends): the store two nodes of a
// cluster share. Lease expiries are judged by clock.
func openShared(t *testing.T, clock kassa.Clock) (*postgres.DB, *postgres.DB) {
	t.Helper()
	dsn := testharness.PostgresSchema(t)
	open := testharness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: clock})
	})
	return open(), open()
}

// openForward records, through db, a store with the merchant's
// Lightning address, its Pending transfer line and an open forward of it
// whose earlier attempt failed and which is due again now: what two
// nodes find when they start (or when a store moves during a topology
// change).
func openForward(t *testing.T, db *postgres.DB, m *merchant) (storeID string, txID int64) {
	t.Helper()
	ctx := t.Context()
	now := time.Now().UTC()
	st := &kassa.Store{ID: "store_fwd", Name: "Shop", Currency: kassa.EUR, LightningAddress: m.address(), CreatedAt: now}
	tx := &kassa.Transaction{StoreID: st.ID, InvoiceID: "inv_fwd", Type: kassa.TransactionTransfer, Status: kassa.TransactionPending,
		Amount: 20_000, FullAmount: 20_000, Currency: kassa.EUR, DepositMethod: kassa.MethodLightning, CreatedAt: now}
	b := db.NewBatch()
	b.PutStore(st, 1)
	b.PutTransaction(tx)
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	q := kassa.QueuedTransfer{TransactionID: tx.ID, StoreID: st.ID, InvoiceID: tx.InvoiceID, Amount: tx.FullAmount.MSat()}
	fw := &kassa.Forward{ID: "fwd_1", StoreID: st.ID, Status: kassa.ForwardOpen, Address: m.address(),
		Transfers: []kassa.QueuedTransfer{q}, Amount: q.Amount, CreatedAt: now, UpdatedAt: now}
	fw.Fail("payment failed: no route", now.Add(-time.Hour))
	fw.NextTry = now
	b = db.NewBatch()
	b.(kassa.ForwardBatch).PutForward(fw)
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	return st.ID, tx.ID
}

// forwardNode is one node's forwarding.
type forwardNode struct {
	fwd    *Forwarder
	runner *lease.Runner
}

// standby reports that this node positively does not forward now: it
// does not hold the forwarder lease.
func (n *forwardNode) standby() bool { return !n.runner.Status().Held }

// startForwarding starts forwarding on one node of the cluster as `kassa
// serve --cluster` does: the Forwarder in standby, led under the
// forwarder lease of the shared PostgreSQL. clock runs the lease
// runner's timers.
func startForwarding(t *testing.T, db *postgres.DB, payer *lnsim.Payer, holder string, clock kassa.Clock) *forwardNode {
	t.Helper()
	fwd := NewForwarder(ForwarderConfig{
		Journal: db, Store: db, Reader: db, Payer: payer,
		Addresses: lnurl.Addresses{Client: lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})},
		Logger:    slog.New(slog.NewTextHandler(io.Discard, nil)),
		Standby:   true, PollEvery: 20 * time.Millisecond,
	})
	n := &forwardNode{fwd: fwd, runner: &lease.Runner{
		Store: db.Leases(), Role: lease.RoleForwarder, Holder: holder, TTL: forwardLease, Clock: clock,
		Log: slog.New(slog.DiscardHandler), Work: fwd.Lead,
	}}
	// Recover before the runner starts: once it holds the lease the
	// forwarder is no longer a standby one (and Recover then wakes the
	// stores of its term, harmlessly).
	if got, err := fwd.Recover(t.Context()); err != nil || got != 0 {
		t.Errorf("Recover of a standby forwarder = %d, %v; want nothing (Lead resumes)", got, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); n.runner.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
		fwd.Shutdown()
	})
	return n
}

// forwardLease is the forwarder lease of the tests.
const forwardLease = 10 * time.Second

// TestForwardOfTwoNodesPaidOnce: two nodes of a cluster both run
// forwarding and find the same open forward due. Each would ask the
// merchant's Lightning address for its own invoice and pay it: the
// merchant paid twice. The merchant's server holds the invoice requests
// until both nodes asked, or until one asked and the other positively
// stands by; then every invoice asked for must have been paid or
// refused, and exactly one was made and paid.
func TestForwardOfTwoNodesPaidOnce(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	dbA, dbB := openShared(t, kassa.SystemClock{})
	_, txID := openForward(t, dbA, m)

	var nodes []*forwardNode
	var mu sync.Mutex
	release := make(chan struct{})
	var released atomic.Bool
	m.gate = func() { <-release }
	open := func() {
		mu.Lock()
		defer mu.Unlock()
		standby := 0
		for _, n := range nodes {
			if n.standby() {
				standby++
			}
		}
		if asked := m.asked.Load(); asked >= 2 || asked == 1 && standby == 1 {
			if released.CompareAndSwap(false, true) {
				close(release)
			}
		}
	}
	a := startForwarding(t, dbA, payer, "node-a", kassa.SystemClock{})
	b := startForwarding(t, dbB, payer, "node-b", kassa.SystemClock{})
	mu.Lock()
	nodes = []*forwardNode{a, b}
	mu.Unlock()
	eventually(t, "the invoice requests to be let through", func() bool { open(); return released.Load() })

	line := func() kassa.Transaction {
		tx, err := dbA.Transaction(context.Background(), txID)
		if err != nil {
			t.Fatal(err)
		}
		return *tx
	}
	eventually(t, "the transfer to settle and every invoice asked for to be paid", func() bool {
		return line().Status == kassa.TransactionSettled && int64(payer.Sent()) >= m.asked.Load()
	})
	paid := m.paid()
	if m.asked.Load() != 1 || len(paid) != 1 || payer.Sent() != 1 {
		t.Fatalf("the merchant was asked for %d invoices and %d were paid (%d payments sent): want one forward paid once",
			m.asked.Load(), len(paid), payer.Sent())
	}
	if tx := line(); tx.Hash != paid[0] {
		t.Errorf("transfer hash %s, want the paid invoice's %s", tx.Hash, paid[0])
	}
}

// TestForwarderStalledLeaderCannotPay: node A holds the forwarder lease
// and stalls while it asks the merchant for an invoice; its lease runs
// out and B takes the role with the next epoch, asks for its own invoice,
// records it and pays it. When A wakes up with its invoice, recording
// the attempt is refused (the lease moved on), so A pays nothing, steps
// down, and the merchant is paid once, B's invoice.
func TestForwarderStalledLeaderCannotPay(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	dbClock := kassatest.NewTestClock(time.Now())
	dbA, dbB := openShared(t, dbClock)
	_, txID := openForward(t, dbA, m)
	hold := make(chan struct{})
	m.gate = func() {
		if m.asked.Load() == 1 {
			<-hold // A's request: A stalls here
		}
	}
	clockA, clockB := kassatest.NewTestClock(kassatest.Epoch), kassatest.NewTestClock(kassatest.Epoch)
	a := startForwarding(t, dbA, payer, "node-a", clockA) // clockA never moves: A renews nothing
	eventually(t, "A to hold the forwarder lease", func() bool { return a.runner.Status().Held })
	b := startForwarding(t, dbB, payer, "node-b", clockB)
	eventually(t, "B to wait for its next try", func() bool { return clockB.Pending() == 1 })
	eventually(t, "A to ask the merchant for an invoice", func() bool { return m.asked.Load() == 1 })

	dbClock.Advance(forwardLease + time.Millisecond) // A's lease runs out
	clockB.Advance(forwardLease)                     // B tries again
	line := func() kassa.Transaction {
		tx, err := dbB.Transaction(context.Background(), txID)
		if err != nil {
			t.Fatal(err)
		}
		return *tx
	}
	eventually(t, "B to pay the forward", func() bool { return line().Status == kassa.TransactionSettled })
	if s := b.runner.Status(); !s.Held || s.Epoch != 2 {
		t.Fatalf("B's lease %+v, want held at epoch 2", s)
	}

	close(hold) // A wakes up with its invoice
	eventually(t, "A to step down", func() bool { return !a.runner.Status().Held })
	paid := m.paid()
	if m.asked.Load() != 2 || len(paid) != 1 || payer.Sent() != 1 {
		t.Fatalf("invoices asked for %d, paid %d, payments sent %d: want A's and B's invoice asked for and only B's paid",
			m.asked.Load(), len(paid), payer.Sent())
	}
	if tx := line(); tx.Hash != paid[0] {
		t.Errorf("transfer hash %s, want the paid invoice's %s", tx.Hash, paid[0])
	}
	fw, err := dbA.Forward(context.Background(), "fwd_1")
	if err != nil || fw.Status != kassa.ForwardSucceeded || fw.Hashes() != paid[0] {
		t.Errorf("forward %+v, %v: want succeeded with B's hash", fw, err)
	}
}
