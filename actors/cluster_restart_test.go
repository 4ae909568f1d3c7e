package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/expiry"
	"github.com/kassapay/kassa/kassatest"
	testharness "github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/persistence/postgres"
)

// fencedCluster starts n nodes over PostgreSQL (a handle each, from
// open) in one cluster of protoactor-go's in-memory membership, each
// behind its membership fence as in production, and waits until each
// sees all and has recovered and runs its deadline sweeper.
func fencedCluster(t *testing.T, n int, open func() *postgres.DB, clock *kassatest.TestClock, expiry time.Duration) []*harness {
	t.Helper()
	skipRemoteUnderRace(t)
	agent := test.NewInMemAgent()
	var nodes []*harness
	for range n {
		db := open()
		h := newHarnessWith(t, openMem(t), clock, func(c *Config) {
			c.Journal, c.Reader, c.InvoiceExpiry = db, db, expiry
		})
		cc := ClusterConfig{Name: "test", Provider: test.NewTestProvider(agent), Host: "127.0.0.1", Port: testharness.FreePort(t),
			Insecure: true, Fence: db.Members()}
		if err := h.sys.Cluster.Join(cc); err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, h)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stopTogether(t, nodes)
	for _, h := range nodes {
		eventually(t, "every node sees every member", func() bool { return len(h.sys.Cluster.Health().Members) == n })
		if _, err := h.sys.Runtime.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		h.sys.Runtime.RunSweeper(ctx)
	}
	return nodes
}

// TestClusterRestartFiresTheDeadlinesTheLostRunClaimed: every node of a
// cluster was killed after its sweeper had claimed invoices ahead of
// their deadline (their timers armed on that node, and died with it).
// The cluster that comes back has only new members: none saw the old
// ones leave, so none expelled them. Its first topology frees the claims
// of every holder that is not a member, and the sweeper's round after
// the deadline fires them. Before, the claims ran until Grace past each
// deadline, so every such invoice expired at least 5 s late (TestKill9
// on a cluster failed when one of them was among the last created).
func TestClusterRestartFiresTheDeadlinesTheLostRunClaimed(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	_, open := openPG(t, clock)
	// The old node keeps its own clock, never advanced: its invoices'
	// timers die with it, as a killed process's do.
	old := fencedCluster(t, 1, open, kassatest.NewTestClock(clock.Now()), time.Minute)[0]
	ctx := context.Background()
	st, err := old.sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.Zero})
	if err != nil {
		t.Fatal(err)
	}
	var open3 []*kassa.Invoice
	for range 3 {
		inv, err := old.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
		if err != nil {
			t.Fatal(err)
		}
		open3 = append(open3, inv)
	}
	// The node stops; its claims are what its sweeper had taken ahead
	// of the deadlines when it was killed. (Taken after the stop: a
	// node that stops, unlike one killed, sees itself leave and expels
	// itself, which frees them.)
	old.sys.Runtime.Shutdown()
	// The old node's sweeper may have taken some of them itself, in a
	// first round that ran after the creates (its clock never moves, so
	// it runs no other): the claims of the same member either way. So
	// the old member claims what is left, and then no other holder finds
	// any unclaimed.
	db := open()
	if _, err := db.ClaimOverdue(ctx, old.sys.Cluster.MemberID(), clock.Now().Add(sweepAhead), expiry.DefaultGrace, 10); err != nil {
		t.Fatal(err)
	}
	if got, err := db.ClaimOverdue(ctx, "nobody", clock.Now().Add(sweepAhead), expiry.DefaultGrace, 10); err != nil || len(got) != 0 {
		t.Fatalf("claims left to other holders: %v, %v; want the old member to hold all %d", got, err, len(open3))
	}

	fencedCluster(t, 2, open, clock, time.Minute)
	clock.Advance(time.Minute + time.Second) // past the deadline, within Grace
	for _, inv := range open3 {
		eventually(t, "invoice "+inv.ID+" expired", func() bool {
			got, err := db.Invoice(ctx, inv.ID)
			return err == nil && got.Status == kassa.InvoiceExpired
		})
	}
}

// TestClusterTopologyNamesMembersAsTheProviderDoes: protoactor-go's etcd
// provider names a member CLUSTER@ID in the topology, where ID is the
// actor system's id, under which the member joined the fence and holds
// its claims. A member that left is expelled, and its claims freed,
// under that id; and a node finds itself among the members of its view.
// Before, the topology's names went to the fence as they were: in
// production no expel ever matched a member, and the claims of a lost
// node waited until they ran out.
func TestClusterTopologyNamesMembersAsTheProviderDoes(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	_, open := openPG(t, clock)
	h := fencedCluster(t, 1, open, clock, time.Minute)[0]
	ctx := context.Background()
	st, err := h.sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.Zero})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := h.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS}); err != nil {
			t.Fatal(err)
		}
	}
	db := open()
	for _, lost := range []string{"lost", "gone"} {
		if err := db.Members().Join(ctx, lost); err != nil {
			t.Fatal(err)
		}
		if got, err := db.ClaimOverdue(ctx, lost, clock.Now().Add(sweepAhead), expiry.DefaultGrace, 1); err != nil || len(got) != 1 {
			t.Fatalf("%s's claim: %v, %v", lost, got, err)
		}
	}
	self := h.sys.Cluster.MemberID()
	named := func(id string) *cluster.Member { return &cluster.Member{Id: "test@" + id, Host: "127.0.0.1", Port: 1} }
	// "lost" left while this node watched; "gone" is a member of a run
	// no one saw leave.
	h.sys.Cluster.onTopology(h.sys.Cluster.clusterState(), &cluster.ClusterTopology{
		Members: []*cluster.Member{named(self)}, Left: []*cluster.Member{named("lost")},
	})
	if ok, err := db.Members().Admitted(ctx, "lost"); err != nil || ok {
		t.Errorf("the member that left is admitted: %v, %v", ok, err)
	}
	if ok, err := db.Members().Admitted(ctx, self); err != nil || !ok {
		t.Errorf("this node is not admitted: %v, %v", ok, err)
	}
	got, err := db.ClaimOverdue(ctx, "taker", clock.Now().Add(sweepAhead), expiry.DefaultGrace, 10)
	if err != nil || len(got) != 2 {
		t.Errorf("after the topology another claimer took %v, %v; want both invoices, freed", got, err)
	}
}

// TestClusterJoinerWakesTheDueInvoicesOfTheStoresItTakes: a node that
// joins takes some stores over from the others (rendezvous placement).
// Their invoices due soon had armed their timers on the node that ran
// them, whose deadlines it had claimed ahead; those timers stop with the
// store there. The joiner's Recover wakes the due invoices of the stores
// it owns, so they expire on time. Before, nothing ran those stores on
// the joiner until a call came, and the sweeper could fire them only
// Grace (5 s) past their deadline: TestKill9 on a cluster failed when a
// node joining last took a store whose invoices were due.
func TestClusterJoinerWakesTheDueInvoicesOfTheStoresItTakes(t *testing.T) {
	skipRemoteUnderRace(t)
	clock := kassatest.NewTestClock(time.Now())
	db := openMem(t)
	agent := test.NewInMemAgent()
	join := func() *harness {
		h := newHarnessWith(t, db, clock, func(c *Config) { c.InvoiceExpiry = time.Minute })
		cc := ClusterConfig{Name: "test", Provider: test.NewTestProvider(agent), Host: "127.0.0.1", Port: testharness.FreePort(t), Insecure: true}
		if err := h.sys.Cluster.Join(cc); err != nil {
			t.Fatal(err)
		}
		return h
	}
	a := join()
	eventually(t, "a member", func() bool { return len(a.sys.Cluster.Health().Members) == 1 })
	ctx := context.Background()
	if _, err := a.sys.Runtime.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	var stores []string
	var open []*kassa.Invoice
	for i := range 8 {
		st, err := a.sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: fmt.Sprintf("Shop %d", i), Currency: kassa.EUR, PercentFee: decimal.Zero})
		if err != nil {
			t.Fatal(err)
		}
		inv, err := a.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
		if err != nil {
			t.Fatal(err)
		}
		stores, open = append(stores, st.ID), append(open, inv)
	}
	// a's sweeper claims them ahead of their deadline, as its rounds do.
	if got, err := db.ClaimOverdue(ctx, "node-a", clock.Now().Add(sweepAhead), expiry.DefaultGrace, 100); err != nil || len(got) != len(open) {
		t.Fatalf("a's claims: %v, %v", got, err)
	}
	b := join()
	for _, h := range []*harness{a, b} {
		eventually(t, "two members", func() bool { return len(h.sys.Cluster.Health().Members) == 2 })
	}
	stopTogether(t, []*harness{a, b})
	moved := 0
	for _, id := range stores {
		if remote, err := b.sys.Cluster.remoteStore(ctx, id); err == nil && !remote {
			moved++
		}
	}
	if moved == 0 {
		t.Fatal("no store moved to the node that joined: use more stores")
	}
	eventually(t, "a stops the stores it no longer owns", func() bool {
		for _, id := range stores {
			if remote, _ := a.sys.Cluster.remoteStore(ctx, id); remote && runsStore(a, id) {
				return false
			}
		}
		return true
	})
	if _, err := b.sys.Runtime.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute + time.Second) // past the deadlines, within Grace
	for _, inv := range open {
		eventually(t, "invoice "+inv.ID+" expired", func() bool {
			got, err := db.Invoice(ctx, inv.ID)
			return err == nil && got.Status == kassa.InvoiceExpired
		})
	}
}
