//go:build daemon

// Every test of this package runs against a real etcd, so all of them
// carry the build tag daemon (make test passes -tags daemon): without it
// the package has no test files and the fast tier links nothing for it.
// A stand-in test that skipped would link the package, etcd's client and
// protoactor-go just to say so.

package etcdmember

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/etcd"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

const testTTL = 2 * time.Second

// topologies records what a provider published.
type topologies struct {
	mu   sync.Mutex
	last []string // member ids
	n    int
}

func (r *topologies) publish(ms cluster.Members) {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.Id)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.last, r.n = ids, r.n+1
}

func (r *topologies) ids() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.last)
}

func (r *topologies) waitFor(t *testing.T, want ...string) {
	t.Helper()
	kassatest.WaitFor(t, 10*time.Second, "the topology "+strings.Join(want, ","), func() bool { return slices.Equal(r.ids(), want) })
}

func client(t *testing.T, e *harness.Etcd) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(ClientConfig([]string{e.Endpoint()}, testTTL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// member starts a member id of cluster "kassa" on its own client.
func member(t *testing.T, e *harness.Etcd, id string, port int) (*Provider, *topologies) {
	t.Helper()
	p := New(client(t, e), "/kassa", testTTL, 100*time.Millisecond, nil)
	r := &topologies{}
	if err := p.Start(Self{Cluster: "kassa", ID: id, Address: "127.0.0.1:" + strconv.Itoa(port*1000), Kinds: []string{"store"}}, r.publish); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(false) })
	return p, r
}

// TestMembersSeeEachOther: each member's topology holds every member,
// itself included, named CLUSTER@ID; the key is protoactor-go's etcd
// provider's, and its value reads as that provider's node (nodes of
// either can read each other's).
func TestMembersSeeEachOther(t *testing.T) {
	e := harness.EtcdForTest(t)
	_, a := member(t, e, "A", 1)
	a.waitFor(t, "kassa@A")
	_, b := member(t, e, "B", 2)
	b.waitFor(t, "kassa@A", "kassa@B")
	a.waitFor(t, "kassa@A", "kassa@B")

	res, err := client(t, e).Get(context.Background(), Key("/kassa", "kassa", "B"))
	if err != nil || len(res.Kvs) != 1 {
		t.Fatalf("B's key: %v, %v", res, err)
	}
	n, err := etcd.NewNodeFromBytes(res.Kvs[0].Value)
	if err != nil {
		t.Fatal(err)
	}
	m := n.MemberStatus()
	if m.Id != "kassa@B" || m.Host != "127.0.0.1" || m.Port != 2000 || !slices.Equal(m.Kinds, []string{"store"}) || !n.IsAlive() {
		t.Errorf("B's value as protoactor-go's provider reads it: %+v, alive %v", m, n.IsAlive())
	}
}

// TestShutdownDeletesTheKey: a member that stops deletes its key, and the
// others see it leave.
func TestShutdownDeletesTheKey(t *testing.T) {
	e := harness.EtcdForTest(t)
	_, a := member(t, e, "A", 1)
	pb, _ := member(t, e, "B", 2)
	a.waitFor(t, "kassa@A", "kassa@B")
	if err := pb.Shutdown(true); err != nil {
		t.Fatal(err)
	}
	a.waitFor(t, "kassa@A")
	res, err := client(t, e).Get(context.Background(), Key("/kassa", "kassa", "B"))
	if err != nil || len(res.Kvs) != 0 {
		t.Errorf("B's key after its shutdown: %v, %v", res.Kvs, err)
	}
	if err := pb.Shutdown(true); err != nil {
		t.Errorf("a second shutdown: %v", err)
	}
}

// TestALostLeaseEndsTheMembership: when a member's lease is gone (it
// expired while the node was stalled or cut off), its key stays gone:
// the member does not come back under the same id. protoactor-go's
// provider put the key back under a new lease. The member's own
// topology keeps itself (noticing the loss is the node's: cmd/kassa).
func TestALostLeaseEndsTheMembership(t *testing.T) {
	e := harness.EtcdForTest(t)
	pa, a := member(t, e, "A", 1)
	_, b := member(t, e, "B", 2)
	b.waitFor(t, "kassa@A", "kassa@B")
	c := client(t, e)
	if _, err := c.Revoke(context.Background(), pa.lease); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "kassa@B")
	time.Sleep(testTTL + time.Second) // several renewals and retries
	res, err := c.Get(context.Background(), Key("/kassa", "kassa", "A"))
	if err != nil || len(res.Kvs) != 0 {
		t.Errorf("A's key came back: %v, %v", res.Kvs, err)
	}
	if got := a.ids(); !slices.Equal(got, []string{"kassa@A", "kassa@B"}) {
		t.Errorf("A's own topology: %v", got)
	}
}

// TestWatchOutlivesAnOutage: etcd stops for less than the lease and comes
// back; the members are still there, and a member that joins afterwards
// is seen. Then a member stopping while etcd is away returns within
// stopTimeout.
func TestWatchOutlivesAnOutage(t *testing.T) {
	e := harness.EtcdForTest(t)
	pa, a := member(t, e, "A", 1)
	a.waitFor(t, "kassa@A")
	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	if err := e.Up(); err != nil {
		t.Fatal(err)
	}
	_, b := member(t, e, "B", 2)
	b.waitFor(t, "kassa@A", "kassa@B")
	a.waitFor(t, "kassa@A", "kassa@B")

	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := pa.Shutdown(true); err == nil {
		t.Error("a shutdown without etcd revoked the lease")
	}
	if took := time.Since(start); took > stopTimeout+time.Second {
		t.Errorf("a shutdown without etcd took %v", took)
	}
}

// TestStartWithoutEtcdFails: no etcd, no membership, within the start's
// bound, and nothing left running.
func TestStartWithoutEtcdFails(t *testing.T) {
	e := harness.EtcdForTest(t)
	c := client(t, e)
	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	p := New(c, "/kassa", testTTL, 100*time.Millisecond, nil)
	p.startTimeout = time.Second
	start := time.Now()
	if err := p.Start(Self{Cluster: "kassa", ID: "A", Address: "127.0.0.1:1000"}, func(cluster.Members) {}); err == nil {
		t.Error("started without etcd")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the start took %v", took)
	}
	if err := p.Shutdown(true); err != nil {
		t.Errorf("shutdown of a provider that never started: %v", err)
	}
}

// TestMembershipOutlivesAnOutageLongerThanTheLease: etcd stops for longer
// than the lease, so the client gives the renewal up (it closes the
// keep-alive channel a lease after etcd's last answer); a restarted etcd
// extends the leases it holds, and the member renews its lease again: its
// key stays, under the same lease. Before, the renewal ended for good,
// the key ran out a lease after etcd came back, and every node joined
// again under a new id.
func TestMembershipOutlivesAnOutageLongerThanTheLease(t *testing.T) {
	e := harness.EtcdForTest(t)
	pa, a := member(t, e, "A", 1)
	a.waitFor(t, "kassa@A")
	// A renewal first: until etcd's first answer the client waits its
	// dial timeout and a second before it gives up, not a lease.
	time.Sleep(testTTL)
	if err := e.Down(); err != nil {
		t.Fatal(err)
	}
	// The client checks each second whether a lease has passed since
	// etcd's last answer.
	time.Sleep(2*testTTL + time.Second)
	if err := e.Up(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * testTTL)
	c := client(t, e)
	res, err := c.Get(context.Background(), Key("/kassa", "kassa", "A"))
	if err != nil || len(res.Kvs) != 1 {
		t.Fatalf("A's key %v after the outage: %v, %v", 3*testTTL, res, err)
	}
	if lease := clientv3.LeaseID(res.Kvs[0].Lease); lease != pa.lease {
		t.Errorf("A's key is under lease %x, want its own %x", lease, pa.lease)
	}
}
