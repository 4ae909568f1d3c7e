package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/apitest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// TestClusterSigtermWithoutEtcd: SIGTERM stops a cluster's node within
// --shutdown-timeout (and the few seconds of closeGrace) while etcd does
// not answer, and while PostgreSQL does not either. Before, the node
// waited for etcd to leave the membership and was still running 20 to
// 45 s after SIGTERM.
func TestClusterSigtermWithoutEtcd(t *testing.T) {
	const timeout = 3 * time.Second
	nodes, _, pg, et := startClusterInfra(t, 2, nil, "--dev", "--shutdown-timeout", timeout.String())
	if err := et.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nodes[0].sigterm()
	if took := time.Since(start); took > timeout+closeGrace+time.Second {
		t.Errorf("node 0 took %v to stop after SIGTERM without etcd, bound %v", took.Round(time.Millisecond), timeout+closeGrace)
	} else {
		t.Logf("node 0 stopped %v after SIGTERM without etcd", took.Round(time.Millisecond))
	}
	if err := pg.Down(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	nodes[1].sigterm()
	if took := time.Since(start); took > timeout+closeGrace+time.Second {
		t.Errorf("node 1 took %v to stop after SIGTERM without etcd and PostgreSQL, bound %v", took.Round(time.Millisecond), timeout+closeGrace)
	} else {
		t.Logf("node 1 stopped %v after SIGTERM without etcd and PostgreSQL", took.Round(time.Millisecond))
	}
}

// cutProxy forwards TCP connections to an address until cut: then it
// closes every connection and refuses new ones (a network partition
// between one node and etcd).
type cutProxy struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
	cut   bool
}

func newCutProxy(t *testing.T, to string) *cutProxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{l: l}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			if p.cut {
				p.mu.Unlock()
				c.Close()
				continue
			}
			up, err := net.Dial("tcp", to)
			if err != nil {
				p.mu.Unlock()
				c.Close()
				continue
			}
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
	return p
}

func (p *cutProxy) addr() string { return p.l.Addr().String() }

// heal ends a partition: new connections go through again.
func (p *cutProxy) heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut, p.conns = false, nil
}

// partition cuts every connection and refuses new ones.
func (p *cutProxy) partition() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cut = true
	for _, c := range p.conns {
		c.Close()
	}
}

// TestClusterNodeCutOffFromEtcd: one node of three loses etcd (a
// partition: the others still reach it and etcd). It stops serving as
// its stores' owner within its lease, before the others take them over,
// and says so in health (owning false); a create for one of its stores
// through it answers 503, through the others 200 from the new owner:
// never two owners. Before, the cut-off node kept listing three members
// and served its stores as owner for the whole partition.
func TestClusterNodeCutOffFromEtcd(t *testing.T) {
	var proxy *cutProxy
	nodes, _, _, _ := startClusterInfra(t, 3, func(i int, et *harness.Etcd) string {
		if i != 0 {
			return et.ClusterURL()
		}
		proxy = newCutProxy(t, et.Endpoint())
		return "etcd://" + proxy.addr()
	}, "--dev")
	var shops []storeCreds
	for i := 0; i < 6; i++ {
		shops = append(shops, nodes[i%3].createStore("--name", fmt.Sprintf("Shop %d", i)))
	}
	if h := clusterHealth(nodes[0]); !h.Owning {
		t.Fatalf("node 0 does not serve as owner before the cut: %+v", h)
	}
	// Node 0's address as the others know it, read before the cut: once
	// fenced it may leave the cluster and name another address, or none,
	// while it tries to join again.
	addr0 := clusterHealth(nodes[0]).Address
	if addr0 == "" {
		t.Fatal("node 0 names no address before the cut")
	}
	// Which node owns a store follows from its id: six stores miss node
	// 0 one time in eleven ((2/3)^6), so add stores until it owns one,
	// in its own view and node 1's, and runs it. (Its count of running
	// stores alone is not enough: a store another node asked for with
	// an older view of the members runs there for a few seconds too.)
	ownedBy0 := map[string]bool{}
	waitFor(t, 60*time.Second, "node 0 runs a store", func() bool {
		for _, sh := range shops {
			post(nodes[1], "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey, map[string]any{"amount": "1000", "currency": "SATS"})
		}
		owns := false
		for _, sh := range shops {
			ownedBy0[sh.StoreID] = adminStoreOwner(t, nodes[0], sh.StoreID).Self && adminStoreOwner(t, nodes[1], sh.StoreID).Owner == addr0
			owns = owns || ownedBy0[sh.StoreID]
		}
		if owns && clusterHealth(nodes[0]).Stores > 0 {
			return true
		}
		shops = append(shops, nodes[len(shops)%3].createStore("--name", fmt.Sprintf("Shop %d", len(shops))))
		return false
	})
	cutAt := time.Now()
	proxy.partition()
	var fencedAt, takenAt time.Time
	for fencedAt.IsZero() || takenAt.IsZero() {
		if time.Since(cutAt) > 30*time.Second {
			t.Fatalf("30 s after the cut: node 0 fenced at %v, the others took over at %v", fencedAt, takenAt)
		}
		if h := clusterHealth(nodes[0]); fencedAt.IsZero() && !h.Owning && h.Address != "" {
			fencedAt = time.Now()
			t.Logf("node 0 stopped owning %v after the cut: %s", fencedAt.Sub(cutAt).Round(time.Millisecond), h.Fenced)
		}
		if takenAt.IsZero() && len(clusterHealth(nodes[1]).Members) == 2 && len(clusterHealth(nodes[2]).Members) == 2 {
			takenAt = time.Now()
			t.Logf("the others dropped node 0 %v after the cut", takenAt.Sub(cutAt).Round(time.Millisecond))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if fencedAt.After(takenAt) {
		t.Errorf("node 0 stopped owning %v after the others took its stores over: two owners", fencedAt.Sub(takenAt))
	}
	if late := fencedAt.Sub(cutAt); late > clusterLease {
		t.Errorf("node 0 stopped owning %v after the cut, beyond its %v lease", late, clusterLease)
	}
	// The others name the new owner of the cut-off node's stores, and
	// the hand-over from it (GET /admin/v1/stores/{id}).
	moved := 0
	for _, sh := range shops {
		o := adminStoreOwner(t, nodes[1], sh.StoreID)
		if len(o.Handovers) == 0 || o.Handovers[0].From != addr0 || o.Handovers[0].At.Before(cutAt) {
			continue // not one of node 0's stores at the cut
		}
		moved++
		if h := o.Handovers[0]; h.To != o.Owner || h.At.After(takenAt.Add(time.Second)) || o.Owner == h.From {
			t.Errorf("store %s: owner %s, last hand-over %+v", sh.StoreID, o.Owner, h)
		}
		t.Logf("store %s moved from node 0 to %s at %s", sh.StoreID, o.Owner, o.Handovers[0].At.Format(time.RFC3339Nano))
	}
	if moved == 0 {
		t.Errorf("node 1 names no hand-over of a store from the cut-off node (%s)", addr0)
		for _, sh := range shops {
			t.Logf("store %s: node 0 owned it before the cut: %v; node 1 says %+v", sh.StoreID, ownedBy0[sh.StoreID], adminStoreOwner(t, nodes[1], sh.StoreID))
		}
	}
	// Creates through the cut-off node that need it as owner answer
	// 503; through the others every store is served.
	for _, sh := range shops {
		waitFor(t, 20*time.Second, "a create through a live node for store "+sh.StoreID, func() bool {
			status, _, err := post(nodes[2], "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey,
				map[string]any{"amount": "1000", "currency": "SATS"})
			return err == nil && status == 200
		})
		if status, _, err := post(nodes[0], "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey,
			map[string]any{"amount": "1000", "currency": "SATS"}); err == nil && status == 200 {
			t.Errorf("the cut-off node created an invoice for store %s", sh.StoreID)
		}
	}
}

// TestClusterRidesOutEtcd: etcd goes away for three times the
// membership lease and comes back, twice: first etcd itself stops (its
// leases may survive its restart), then every node is cut off from it
// (a partition: etcd stays up and every node's lease expires). No node
// exits: each one that lost its membership steps down and joins again
// under a new member id. While etcd is away, reads are answered from
// PostgreSQL and creates answer 503 with Retry-After; afterwards every
// node sees three members and serves as owner, each store runs on
// exactly one node, and creates for every store succeed through every
// node. Before, nodes logged "cluster membership lost" when etcd
// returned and exited.
func TestClusterRidesOutEtcd(t *testing.T) {
	sc := &etcdOutage{t: t}
	sc.nodes, _, _, sc.et = startClusterInfra(t, 3, func(i int, et *harness.Etcd) string {
		p := newCutProxy(t, et.Endpoint())
		sc.proxies = append(sc.proxies, p)
		return "etcd://" + p.addr()
	}, "--dev")
	step(t, "create six stores, each with an invoice", sc.createShops)
	for _, fault := range []etcdFault{
		{"etcd stopped", sc.et.Down, sc.et.Up, false},
		{"every node cut off from etcd", sc.partition, sc.heal, true},
	} {
		before := sc.rejoins()
		var upAt time.Time
		step(t, fault.name+": without etcd, creates answer 503 with Retry-After and reads answer", func() { upAt = sc.rideOut(fault) })
		step(t, fault.name+": every node sees three members and owns again, and serves every store", func() { sc.inAgain(fault, upAt) })
		step(t, fault.name+": each store has exactly one owner", func() { sc.oneOwner(fault) })
		step(t, fault.name+": no node exited, and each that lost its membership joined again", func() { sc.joinedAgain(fault, before) })
	}
}

// etcdOutage is TestClusterRidesOutEtcd's scenario: the nodes, etcd and
// each node's proxy to it, the stores and an invoice of each.
type etcdOutage struct {
	t        *testing.T
	nodes    []*server
	et       *harness.Etcd
	proxies  []*cutProxy
	shops    []storeCreds
	invoices []string
}

// etcdFault takes etcd away from the nodes (down) and gives it back (up);
// mustRejoin says every node loses its membership and joins again.
type etcdFault struct {
	name       string
	down, up   func() error
	mustRejoin bool
}

func (sc *etcdOutage) createShops() {
	for i := 0; i < 6; i++ {
		sh := sc.nodes[i%3].createStore("--name", fmt.Sprintf("Shop %d", i))
		sc.shops = append(sc.shops, sh)
		waitFor(sc.t, 30*time.Second, "an invoice of store "+sh.StoreID, func() bool {
			status, body, err := post(sc.nodes[(i+1)%3], "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey,
				map[string]any{"amount": "1000", "currency": "SATS"})
			var inv struct{ ID string }
			if err != nil || status != 200 || json.Unmarshal(body, &inv) != nil {
				return false
			}
			sc.invoices = append(sc.invoices, inv.ID)
			return true
		})
	}
}

// partition cuts every node off from etcd; heal ends it.
func (sc *etcdOutage) partition() error {
	for _, p := range sc.proxies {
		p.partition()
	}
	return nil
}

func (sc *etcdOutage) heal() error {
	for _, p := range sc.proxies {
		p.heal()
	}
	return nil
}

// exited fails the test when a node exited.
func (sc *etcdOutage) exited() {
	sc.t.Helper()
	for n, s := range sc.nodes {
		select {
		case <-s.done:
			sc.t.Fatalf("node %d exited:\n%s", n, s.ownLogs())
		default:
		}
	}
}

// rejoins is how many times each node joined the cluster again.
func (sc *etcdOutage) rejoins() []int {
	var out []int
	for _, s := range sc.nodes {
		out = append(out, strings.Count(s.ownLogs(), `msg="joined the cluster again" `))
	}
	return out
}

// rideOut takes etcd away for three leases and gives it back, and
// returns when it came back. While etcd is away: once a node stops
// owning, a create through it answers 503 with Retry-After, and reads
// still answer.
func (sc *etcdOutage) rideOut(fault etcdFault) (upAt time.Time) {
	t := sc.t
	outage := 3 * clusterLease
	downAt := time.Now()
	if err := fault.down(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s for %v", fault.name, outage)
	for n, s := range sc.nodes {
		waitFor(t, 2*clusterLease, fmt.Sprintf("node %d stops owning without etcd", n), func() bool {
			h := clusterHealth(s)
			return h.Address != "" && !h.Owning
		})
		sh := sc.shops[n]
		status, body, header := s.do("POST", "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey,
			map[string]any{"amount": "1000", "currency": "SATS"})
		if status != 503 || header.Get("Retry-After") == "" {
			t.Errorf("node %d answered a create without etcd with %d (Retry-After %q): %s", n, status, header.Get("Retry-After"), body)
		}
		for i, id := range sc.invoices {
			if status, body, _ := s.do("GET", "/api/v1/stores/"+sc.shops[i].StoreID+"/invoices/"+id, sc.shops[i].APIKey, nil); status != 200 {
				t.Errorf("node %d answered a read of invoice %s without etcd with %d: %s", n, id, status, body)
			}
		}
	}
	time.Sleep(time.Until(downAt.Add(outage)))
	if err := fault.up(); err != nil {
		t.Fatal(err)
	}
	upAt = time.Now()
	t.Logf("%s: etcd back after %v", fault.name, upAt.Sub(downAt).Round(time.Millisecond))
	return upAt
}

// inAgain waits until every node is in again: three members, serving as
// owner, and a create for every store through every node answers 200.
func (sc *etcdOutage) inAgain(fault etcdFault, upAt time.Time) {
	t := sc.t
	for n, s := range sc.nodes {
		waitFor(t, 60*time.Second, fmt.Sprintf("node %d sees three members and owns again", n), func() bool {
			sc.exited()
			h := clusterHealth(s)
			return len(h.Members) == 3 && h.Owning
		})
	}
	t.Logf("%s: every node sees three members and owns again %v after etcd came back", fault.name, time.Since(upAt).Round(time.Millisecond))
	for _, sh := range sc.shops {
		for n, s := range sc.nodes {
			waitFor(t, 30*time.Second, fmt.Sprintf("a create for store %s through node %d", sh.StoreID, n), func() bool {
				status, _, err := post(s, "/api/v1/stores/"+sh.StoreID+"/invoices", sh.APIKey,
					map[string]any{"amount": "1000", "currency": "SATS"})
				return err == nil && status == 200
			})
		}
	}
	t.Logf("%s: creates for every store through every node succeed %v after etcd came back", fault.name, time.Since(upAt).Round(time.Millisecond))
}

// oneOwner checks that each store has exactly one owner: the nodes agree
// on the members, which decide every store's owner (rendezvous hashing),
// and every one of them serves as owner.
func (sc *etcdOutage) oneOwner(fault etcdFault) {
	t, nodes := sc.t, sc.nodes
	var views []string
	grains := 0
	for n, s := range nodes {
		h := clusterHealth(s)
		members := slices.Clone(h.Members)
		slices.Sort(members)
		views = append(views, strings.Join(members, ","))
		grains += h.Stores
		t.Logf("node %d: %s, %d stores, members %v, owning %v", n, h.Address, h.Stores, members, h.Owning)
	}
	// Each store runs on one node at most: the counts add up to no
	// more than the stores there are (the six and --dev's demo
	// store, whose grain runs from the start unless a node joined
	// again).
	if stores := len(strings.Split(strings.TrimSpace(nodes[0].mustCLI("store", "list")), "\n")); grains > stores {
		t.Errorf("%s: the nodes run %d store grains for %d stores", fault.name, grains, stores)
	}
	if views[0] != views[1] || views[1] != views[2] {
		t.Errorf("%s: the nodes see different members: %q", fault.name, views)
	}
	// And each node names that owner (GET /admin/v1/stores/{id}):
	// the same one, which alone says it is itself.
	for _, sh := range sc.shops {
		owners, selves := map[string]bool{}, 0
		var last storeOwnership
		for _, s := range nodes {
			o := adminStoreOwner(t, s, sh.StoreID)
			owners[o.Owner] = true
			if o.Self {
				selves++
				if o.Owner != clusterHealth(s).Address {
					t.Errorf("%s: node %s says it owns store %s as %s", fault.name, clusterHealth(s).Address, sh.StoreID, o.Owner)
				}
			}
			last = o
		}
		if len(owners) != 1 || selves != 1 {
			t.Errorf("%s: store %s: owners named %v, %d nodes say they own it", fault.name, sh.StoreID, owners, selves)
		}
		if fault.mustRejoin {
			t.Logf("store %s: owner %s, hand-overs %+v", sh.StoreID, last.Owner, last.Handovers)
		}
	}
}

// joinedAgain checks that no node exited, that each node joined again as
// many times as it lost its membership, and, for a fault that must make
// every node join again, that each did during it (before: each node's
// rejoins before the fault).
func (sc *etcdOutage) joinedAgain(fault etcdFault, before []int) {
	t := sc.t
	sc.exited()
	after := sc.rejoins()
	t.Logf("%s: nodes that joined again: %v", fault.name, after)
	for n := range sc.nodes {
		if lost := strings.Count(sc.nodes[n].ownLogs(), `msg="cluster membership lost (`); lost != after[n] {
			t.Errorf("node %d lost its membership %d times and joined again %d times", n, lost, after[n])
		}
		if fault.mustRejoin && after[n] == before[n] {
			t.Errorf("%s: node %d did not join again under a new member id", fault.name, n)
		}
	}
}

// TestHealthSaysStorageUnavailable: while PostgreSQL is down, health
// answers 503 with status degraded and storage unavailable (the reason
// for the admin token only), and ok again once it is back. Before, it
// said storage ok through the whole outage.
func TestHealthSaysStorageUnavailable(t *testing.T) {
	needBinary(t)
	pg, dsn := harness.PostgresForTest(t)
	s := launchServer(t, t.TempDir(), "--store", dsn, "--dev")
	type health struct {
		Status  string `json:"status"`
		Storage struct {
			Status string `json:"status"`
			Error  string `json:"error"`
		} `json:"storage"`
	}
	read := func(admin bool) (int, health) {
		key := ""
		if admin {
			token, err := os.ReadFile(filepath.Join(s.data, "admin.token"))
			if err != nil {
				t.Fatal(err)
			}
			key = strings.TrimSpace(string(token))
		}
		req, _ := http.NewRequest("GET", s.url+"/api/v1/health", nil)
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := apitest.Do(t, httpClient, req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var h health
		if err := json.NewDecoder(res.Body).Decode(&h); err != nil {
			t.Fatal(err)
		}
		return res.StatusCode, h
	}
	if code, h := read(false); code != 200 || h.Storage.Status != "ok" {
		t.Fatalf("health before the outage: %d %+v", code, h)
	}
	if err := pg.Down(); err != nil {
		t.Fatal(err)
	}
	var got health
	waitFor(t, 10*time.Second, "health says storage unavailable", func() bool {
		code, h := read(false)
		got = h
		return code == 503 && h.Status == "degraded" && h.Storage.Status == "unavailable"
	})
	if got.Storage.Error != "" {
		t.Errorf("public health names the storage error: %q", got.Storage.Error)
	}
	if _, h := read(true); h.Storage.Status != "unavailable" || h.Storage.Error == "" {
		t.Errorf("admin health while PostgreSQL is down: %+v", h)
	}
	if err := pg.Up(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "health says storage ok again", func() bool {
		code, h := read(false)
		return code == 200 && h.Status == "ok" && h.Storage.Status == "ok"
	})
}

// storeOwnership is the cluster part of GET /admin/v1/stores/{id}.
type storeOwnership struct {
	Owner     string `json:"owner"`
	Self      bool   `json:"self"`
	Owning    bool   `json:"owning"`
	Handovers []struct {
		At       time.Time `json:"at"`
		From, To string
	} `json:"handovers"`
}

// adminStoreOwner asks node s which node runs store id.
func adminStoreOwner(t *testing.T, s *server, id string) storeOwnership {
	t.Helper()
	token, err := os.ReadFile(filepath.Join(s.data, "admin.token"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest("GET", s.url+"/admin/v1/stores/"+id, nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	res, err := apitest.Do(t, httpClient, req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var out struct {
		Cluster *storeOwnership `json:"cluster"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil || res.StatusCode != 200 || out.Cluster == nil {
		t.Fatalf("GET /admin/v1/stores/%s: %d, %v, %+v", id, res.StatusCode, err, out)
	}
	return *out.Cluster
}

// TestClusterInFlightAtNodeLoss: creates sent through one node to a
// store another node runs, while that node stalls (SIGSTOP: it holds
// the calls and never answers), are sent again to the store's new node
// once the others drop the stalled node; each is answered 200, before
// the 10 s call timeout, with exactly one invoice. Before the resend
// they waited out the timeout (10.04 s, 2 of 5 with 503); before the
// new owner was placed by the forwarding node's own view, a loaded
// machine made them wait out a 5 s activation timeout (7.3-8.8 s, or
// 503 "could not be placed"). How fast they are answered (lease + 1 s
// on a quiet machine) is logged, a figure, not asserted.
func TestClusterInFlightAtNodeLoss(t *testing.T) {
	const callTimeout = 10 * time.Second // a forwarded call's (actors.Config.RequestTimeout)
	nodes, _ := startCluster(t, 3, "--dev")
	var shop *storeCreds
	for i := 0; i < 12 && shop == nil; i++ {
		sh := nodes[0].createStore("--name", fmt.Sprintf("Shop %d", i))
		if o := adminStoreOwner(t, nodes[0], sh.StoreID); o.Owner == clusterHealth(nodes[1]).Address {
			shop = &sh
		}
	}
	if shop == nil {
		t.Fatal("none of 12 stores runs on node 1")
	}
	// The store runs on node 1: a create through node 0 is forwarded.
	waitFor(t, 30*time.Second, "a create through node 0", func() bool {
		status, _, err := post(nodes[0], "/api/v1/stores/"+shop.StoreID+"/invoices", shop.APIKey, map[string]any{"amount": "1000", "currency": "SATS"})
		return err == nil && status == 200
	})
	if err := nodes[1].cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	t.Cleanup(func() { nodes[1].cmd.Process.Signal(syscall.SIGCONT) })
	const n = 5
	type answer struct {
		order  string
		status int
		took   time.Duration
	}
	answers := make(chan answer, n)
	ok := map[string]bool{}
	for i := 0; i < n; i++ {
		go func() {
			order := fmt.Sprintf("inflight-%d", i)
			status, body, err := post(nodes[0], "/api/v1/stores/"+shop.StoreID+"/invoices", shop.APIKey,
				map[string]any{"amount": "1000", "currency": "SATS", "orderId": order})
			if err != nil || status != 200 {
				t.Logf("create %d: %d %v %s", i, status, err, body)
			}
			answers <- answer{order, status, time.Since(stoppedAt)}
		}()
	}
	// How fast they are answered is a figure, logged here (on a quiet
	// machine p50 2.25 s, within the lease + 1 s); what must hold under
	// any load is that each is answered 200, by the new owner, without
	// waiting out the call timeout, and made exactly one invoice.
	var took []time.Duration
	status := map[int]int{}
	for i := 0; i < n; i++ {
		a := <-answers
		took = append(took, a.took)
		status[a.status]++
		ok[a.order] = a.status == 200
		if a.status != 200 {
			t.Errorf("create %s in flight at the node loss answered %d", a.order, a.status)
		}
		if a.took >= callTimeout {
			t.Errorf("create %s in flight at the node loss answered %v after the stop: it waited out the %v call timeout", a.order, a.took.Round(time.Millisecond), callTimeout)
		}
	}
	slices.Sort(took)
	t.Logf("creates in flight at the node loss answered in p50 %v, max %v (lease + 1 s = %v); statuses %v",
		took[n/2].Round(time.Millisecond), took[n-1].Round(time.Millisecond), clusterLease+time.Second, status)
	perOrder := map[string]int{}
	for _, inv := range nodes[2].list("/api/v1/stores/"+shop.StoreID+"/invoices", shop.APIKey) {
		if o, _ := inv["orderId"].(string); strings.HasPrefix(o, "inflight-") {
			perOrder[o]++
		}
	}
	for i := 0; i < n; i++ {
		order := fmt.Sprintf("inflight-%d", i)
		if c := perOrder[order]; c > 1 || (ok[order] && c != 1) {
			t.Errorf("create %s (answered 200: %v) made %d invoices", order, ok[order], c)
		}
	}
}
