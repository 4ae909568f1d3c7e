package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/measure"
)

// The scale part measures how a cluster's create rate grows with its
// nodes: one PostgreSQL and one etcd (startShared, unlimited), and one,
// two, then three `kassa serve` nodes, each held to the same share of a
// core by its own cgroup (the kernel's cpu controller), so that a node's
// CPU, not the machine's, is what a node adds. The load generator sends
// each create to the node that owns its store (the owner GET
// /admin/v1/stores/{id} names): a create sent elsewhere takes a hop to
// the owner, which measures routing, not scale-out. Each node gets the
// same number of requests in flight, spread over stores it owns.
//
// The cluster grows 1, 2, 3 and shrinks 3, 2, 1 (the last node stopped
// each time, its stores going back to the nodes that had them), one
// measured turn a visit, so a machine whose load drifts during the part
// weighs on every size alike; a size's figure is the mean of its turns.

const (
	// scaleQuota of every scalePeriod is each node's CPU: a quarter of a
	// core.
	scaleQuota  = 25 * time.Millisecond
	scalePeriod = 100 * time.Millisecond
	// scaleStoresPerNode stores owned by each node take its load, so
	// that no store's own serial work is the limit.
	scaleStoresPerNode = 4
	// scaleWorkersPerNode is each node's requests in flight.
	scaleWorkersPerNode = 16
	// scaleWeight is the CPU weight of the part's cgroups (the nodes',
	// and the one of the load generator, PostgreSQL and etcd) in times
	// the default: on a machine busy with other work, each node still
	// gets its quota and the shared services what they need.
	scaleWeight = 50
	// scaleMaxStores bounds the stores made to give every node its
	// share.
	scaleMaxStores = 64
)

// scaleVisits are the cluster's sizes in the order measured.
var scaleVisits = []int{1, 2, 3, 3, 2, 1}

func benchScale(ctx context.Context, d time.Duration) error {
	cgs, err := newCPUCgroups()
	if err != nil {
		fmt.Fprintf(os.Stderr, "scale: skipped: no writable cgroup cpu controller to limit each node's CPU (%v)\n", err)
		return nil
	}
	defer cgs.removeAll()
	load := loadAverage()
	fmt.Fprintf(os.Stderr, "scale: load average %s at the start (quiet is below 0.3); each node limited to %v of CPU every %v by %s, "+
		"the nodes, PostgreSQL, etcd and the load generator at %d times the default CPU weight\n",
		load, scaleQuota, scalePeriod, cgs, scaleWeight)
	if v, err := strconv.ParseFloat(load, 64); err == nil {
		bench("cluster_scale_start_load_average", v, "load")
	}
	tmp, bin, cleanup, err := workspace("scale")
	if err != nil {
		return err
	}
	defer cleanup()
	// This process (the load generator), then PostgreSQL and etcd that
	// it starts, run in a cgroup of the same weight as the nodes' and
	// no quota; removing it moves this process back.
	shared, err := cgs.make("shared", false)
	if err != nil {
		return err
	}
	if err := cgs.add(shared, os.Getpid()); err != nil {
		return err
	}
	pg, et, stop, err := startShared(ctx)
	if err != nil {
		return err
	}
	defer stop()
	dsn, err := pg.NewSchema(ctx)
	if err != nil {
		return err
	}
	dataDir, err := pgDataDir(ctx, pg)
	if err != nil {
		return err
	}
	s := &scaleCluster{bin: bin, tmp: tmp, dsn: dsn, etcd: et.ClusterURL(), etcdClient: et.ClientURL(), pgDataDir: dataDir, cgs: cgs}
	defer s.stopAll()
	rates := map[int][]float64{}
	for _, k := range scaleVisits {
		if err := s.resize(k); err != nil {
			return err
		}
		r, err := s.turn(d)
		if err != nil {
			return err
		}
		rates[k] = append(rates[k], r)
	}
	mean := func(xs []float64) float64 {
		var sum float64
		for _, x := range xs {
			sum += x
		}
		return sum / float64(max(len(xs), 1))
	}
	one := mean(rates[1])
	for k := 1; k <= 3; k++ {
		fmt.Fprintf(os.Stderr, "scale: %d node(s): turns %.0f/s, mean %.0f/s\n", k, rates[k], mean(rates[k]))
		bench(fmt.Sprintf("cluster_scale_%d_creates_per_s", k), mean(rates[k]), "req/s")
	}
	bench("cluster_scale_2_vs_1", mean(rates[2])/one, "ratio")
	bench("cluster_scale_3_vs_1", mean(rates[3])/one, "ratio")
	return nil
}

// scaleCluster is the cluster of the scale part: its nodes in the order
// started, and the stores made so far.
type scaleCluster struct {
	bin, tmp, dsn, etcd, etcdClient, pgDataDir string
	cgs                                        *cpuCgroups
	nodes                                      []*scaleNode
	started                                    int
	turns                                      int // measured so far, to name profiles
	stores                                     []scaleStore
	// routes are, per node, the stores whose creates it takes.
	routes [][]scaleStore
}

// scaleNode is a node of the cluster: the server, its address among the
// members, and its cgroup.
type scaleNode struct {
	t      *target
	addr   string
	cgroup string
}

type scaleStore struct{ id, key string }

// resize starts or stops nodes (the last started first) until the
// cluster has k, waits until every node sees k members, and spreads the
// load: scaleStoresPerNode stores owned by each node.
func (s *scaleCluster) resize(k int) error {
	for len(s.nodes) > k {
		n := s.nodes[len(s.nodes)-1]
		s.nodes = s.nodes[:len(s.nodes)-1]
		n.t.stop()
		if err := s.cgs.remove(n.cgroup); err != nil {
			return err
		}
	}
	for len(s.nodes) < k {
		s.started++
		name := fmt.Sprintf("node%d", s.started)
		cg, err := s.cgs.make(name, true)
		if err != nil {
			return err
		}
		t, err := startClusterNode(s.bin, filepath.Join(s.tmp, name), s.dsn, s.etcd)
		if err != nil {
			return err
		}
		n := &scaleNode{t: t, cgroup: cg}
		s.nodes = append(s.nodes, n)
		if err := s.cgs.add(cg, t.pid); err != nil {
			return err
		}
	}
	var ts []*target
	for _, n := range s.nodes {
		ts = append(ts, n.t)
	}
	if err := waitMembers(ts, k); err != nil {
		return err
	}
	for _, n := range s.nodes {
		v, err := n.t.cluster()
		if err != nil {
			return err
		}
		n.addr = v.Address
	}
	return s.spread()
}

// spread makes stores until each node owns scaleStoresPerNode, and
// routes each node's load to those.
func (s *scaleCluster) spread() error {
	owned := make([][]scaleStore, len(s.nodes))
	for _, st := range s.stores {
		i, err := s.owner(st.id)
		if err != nil {
			return err
		}
		owned[i] = append(owned[i], st)
	}
	for slices.ContainsFunc(owned, func(o []scaleStore) bool { return len(o) < scaleStoresPerNode }) {
		if len(s.stores) >= scaleMaxStores {
			return fmt.Errorf("scale: %d stores made and a node still owns fewer than %d", len(s.stores), scaleStoresPerNode)
		}
		probe := *s.nodes[0].t
		id, key, err := probe.createStore()
		if err != nil {
			return err
		}
		st := scaleStore{id, key}
		s.stores = append(s.stores, st)
		i, err := s.owner(id)
		if err != nil {
			return err
		}
		owned[i] = append(owned[i], st)
	}
	s.routes = make([][]scaleStore, len(s.nodes))
	for i, o := range owned {
		s.routes[i] = o[:scaleStoresPerNode]
	}
	return nil
}

// owner returns the index of the node that runs store id: the one node
// that says it is the owner and serves as one, once they all agree
// (within 10 s).
func (s *scaleCluster) owner(id string) (int, error) {
	end := time.Now().Add(10 * time.Second)
	for {
		owners := 0
		at := -1
		for i, n := range s.nodes {
			o, err := n.t.storeOwner(id)
			if err != nil {
				return 0, err
			}
			if o.Self && o.Owning {
				owners++
				at = i
			}
		}
		if owners == 1 {
			return at, nil
		}
		if time.Now().After(end) {
			return 0, fmt.Errorf("scale: %d nodes say they own store %s", owners, id)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// storeOwnership is which node runs a store, as a node sees it: the
// owner's address, whether that is the node asked, and whether it
// serves as its stores' owner now.
type storeOwnership struct {
	Owner        string
	Self, Owning bool
}

// storeOwner asks t which node runs store id.
func (t *target) storeOwner(id string) (own storeOwnership, err error) {
	req, err := http.NewRequest("GET", t.base+"/admin/v1/stores/"+id, nil)
	if err != nil {
		return own, err
	}
	req.Header.Set("Authorization", "Bearer "+t.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return own, err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		body, _ := io.ReadAll(res.Body)
		return own, &statusError{path: "/admin/v1/stores/" + id, status: res.StatusCode, body: string(body)}
	}
	var out struct {
		Cluster *struct {
			Owner  string `json:"owner"`
			Self   bool   `json:"self"`
			Owning bool   `json:"owning"`
		} `json:"cluster"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return own, err
	}
	if out.Cluster == nil {
		return own, fmt.Errorf("GET /admin/v1/stores/%s: no cluster ownership in the answer", id)
	}
	own.Owner, own.Self, own.Owning = out.Cluster.Owner, out.Cluster.Self, out.Cluster.Owning
	return own, nil
}

// turn warms the routes up, waits for the nodes to be quiet, then runs
// scaleWorkersPerNode closed loops per node for d, each sending its
// creates to its node, and returns the cluster's creates per second. It
// prints what each process used meanwhile: a node near its quota is
// the limit; the generator, PostgreSQL and etcd are not limited.
func (s *scaleCluster) turn(d time.Duration) (float64, error) {
	c := newClient(scaleWorkersPerNode * len(s.nodes))
	create := func(node int, st scaleStore) error {
		req, _ := http.NewRequest("POST", s.nodes[node].t.base+"/api/v1/stores/"+st.id+"/invoices", bytes.NewReader(invoiceBody))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", st.key)
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("create on node %d for store %s: status %d", node+1, st.id, res.StatusCode)
		}
		return nil
	}
	// Warm up: each worker's connection and each store's grain on its
	// owner (a store moved by the last resize wakes on its new node).
	var firstErr atomic.Value
	var wg sync.WaitGroup
	for i := range s.nodes {
		for w := range scaleWorkersPerNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := create(i, s.routes[i][w%scaleStoresPerNode]); err != nil {
					firstErr.CompareAndSwap(nil, err)
				}
			}()
		}
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, fmt.Errorf("scale warm-up: %w", err)
	}
	var ts []*target
	for _, n := range s.nodes {
		ts = append(ts, n.t)
	}
	settled(ts...)

	type use struct {
		cpu                time.Duration
		periods, throttled int64
	}
	nodeUse := func() []use {
		u := make([]use, len(s.nodes))
		for i, n := range s.nodes {
			u[i].cpu = n.t.cpu()
			u[i].periods, u[i].throttled = measure.Throttled(n.cgroup)
		}
		return u
	}
	before := nodeUse()
	gen, genWait, pgCPU := cpuTime(0), runQueueWait(os.Getpid()), postgresCPU(s.pgDataDir)
	etcdCPU, _ := etcdMetrics(s.etcdClient)
	machineCPU := cpuTime(machine)
	done := make([]atomic.Int64, len(s.nodes))
	// With -profile, the first node's CPU over the turn.
	s.turns++
	wait := profileDuring(s.nodes[0].t.debug, fmt.Sprintf("scale-%d-nodes-node1-turn%d.pprof", len(s.nodes), s.turns), d)
	start := time.Now()
	end := start.Add(d)
	for i := range s.nodes {
		for w := range scaleWorkersPerNode {
			wg.Add(1)
			go func() {
				defer wg.Done()
				st := s.routes[i][w%scaleStoresPerNode]
				for time.Now().Before(end) && firstErr.Load() == nil {
					if err := create(i, st); err != nil {
						firstErr.CompareAndSwap(nil, err)
						return
					}
					done[i].Add(1)
				}
			}()
		}
	}
	wg.Wait()
	elapsed := time.Since(start)
	wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, fmt.Errorf("scale: %w", err)
	}
	after := nodeUse()
	cores := func(t time.Duration) float64 { return t.Seconds() / elapsed.Seconds() }
	genCores, genWaited := cores(cpuTime(0)-gen), cores(runQueueWait(os.Getpid())-genWait)
	pgCores := cores(postgresCPU(s.pgDataDir) - pgCPU)
	etcdNow, _ := etcdMetrics(s.etcdClient)
	machineCores := cores(cpuTime(machine) - machineCPU)
	var total int64
	var per, shares []string
	for i := range s.nodes {
		n := done[i].Load()
		total += n
		per = append(per, fmt.Sprintf("%.0f", float64(n)/elapsed.Seconds()))
		used := after[i].cpu - before[i].cpu
		share := cores(used) / (scaleQuota.Seconds() / scalePeriod.Seconds())
		line := fmt.Sprintf("node %d: %.0f%% of its quota", i+1, 100*share)
		if p := after[i].periods - before[i].periods; p > 0 {
			line += fmt.Sprintf(" (throttled in %.0f%% of periods)", 100*float64(after[i].throttled-before[i].throttled)/float64(p))
		}
		line += fmt.Sprintf(", %.0f µs a create", float64(used.Microseconds())/float64(max(n, 1)))
		if roles := s.nodes[i].t.roles(); len(roles) > 0 {
			line += ", holds " + strings.Join(roles, " ")
		}
		shares = append(shares, line)
	}
	rate := float64(total) / elapsed.Seconds()
	fmt.Fprintf(os.Stderr, "scale: %d node(s): %.0f/s (per node %s); %s; "+
		"unlimited: generator %.2f cores (waited %.2f s/s for a CPU), PostgreSQL %.2f, etcd %.2f, machine %.2f of %d; load average %s\n",
		len(s.nodes), rate, strings.Join(per, ", "), strings.Join(shares, "; "),
		genCores, genWaited, pgCores, (etcdNow-etcdCPU)/elapsed.Seconds(), machineCores, runtime.NumCPU(), loadAverage())
	return rate, nil
}

// roles are the lease roles t holds (chain watcher, Lightning watcher,
// forwarder): work of the whole cluster that runs on one node.
func (t *target) roles() []string {
	var h struct {
		Cluster struct {
			Leases []struct {
				Role string `json:"role"`
				Held bool   `json:"held"`
			} `json:"leases"`
		} `json:"cluster"`
	}
	req, _ := http.NewRequest("GET", t.base+"/api/v1/health", nil)
	req.Header.Set("Authorization", "Bearer "+t.token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil
	}
	defer res.Body.Close()
	if json.NewDecoder(res.Body).Decode(&h) != nil {
		return nil
	}
	var held []string
	for _, l := range h.Cluster.Leases {
		if l.Held {
			held = append(held, l.Role)
		}
	}
	return held
}

// stopAll stops the nodes still running.
func (s *scaleCluster) stopAll() {
	for _, n := range s.nodes {
		n.t.stop()
	}
	s.nodes = nil
}

// runQueueWait is the time the threads of process pid have waited for a
// CPU so far (the second field of each /proc/PID/task/TID/schedstat): a
// load generator that waits long is held back by the machine.
func runQueueWait(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0
	}
	var total time.Duration
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if f := strings.Fields(string(data)); err == nil && len(f) >= 2 {
			if ns, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				total += time.Duration(ns)
			}
		}
	}
	return total
}

// cpuCgroups makes a child cgroup per node under the cpu controller's
// hierarchy, each limited to scaleQuota every scalePeriod: cgroup v1's
// cpu.cfs_quota_us and cpu.cfs_period_us, or v2's cpu.max.
type cpuCgroups struct {
	root string // the hierarchy the children are made in
	v2   bool
	made []string
}

// cgroupV1CPU and cgroupV2 are where the two kinds are mounted.
const (
	cgroupV1CPU = "/sys/fs/cgroup/cpu"
	cgroupV2    = "/sys/fs/cgroup"
)

// newCPUCgroups finds a cpu controller this process can make limited
// cgroups in (it makes and removes one to be sure), or says why there
// is none.
func newCPUCgroups() (*cpuCgroups, error) {
	var why []string
	if _, err := os.Stat(filepath.Join(cgroupV1CPU, "cpu.cfs_quota_us")); err == nil {
		c := &cpuCgroups{root: cgroupV1CPU}
		if err := c.probe(); err == nil {
			return c, nil
		} else {
			why = append(why, fmt.Sprintf("cgroup v1 at %s: %v", cgroupV1CPU, err))
		}
	} else {
		why = append(why, fmt.Sprintf("no cgroup v1 cpu controller at %s", cgroupV1CPU))
	}
	controllers, err := os.ReadFile(filepath.Join(cgroupV2, "cgroup.controllers"))
	if err == nil && slices.Contains(strings.Fields(string(controllers)), "cpu") {
		c := &cpuCgroups{root: cgroupV2, v2: true}
		if err := c.probe(); err == nil {
			return c, nil
		} else {
			why = append(why, fmt.Sprintf("cgroup v2 at %s: %v", cgroupV2, err))
		}
	} else {
		why = append(why, fmt.Sprintf("no cgroup v2 with the cpu controller at %s", cgroupV2))
	}
	return nil, errors.New(strings.Join(why, "; "))
}

func (c *cpuCgroups) String() string {
	if c.v2 {
		return "cgroup v2 cpu.max under " + c.root
	}
	return "cgroup v1 cpu.cfs_quota_us under " + c.root
}

// probe makes a limited cgroup and removes it again.
func (c *cpuCgroups) probe() error {
	dir, err := c.make("probe", true)
	if err != nil {
		return err
	}
	return c.remove(dir)
}

// make makes the child cgroup name with scaleWeight times the default
// CPU weight and, when limited, scaleQuota every scalePeriod.
func (c *cpuCgroups) make(name string, limited bool) (string, error) {
	if c.v2 {
		// The children's cpu.max exists once the root hands the cpu
		// controller down.
		sub, err := os.ReadFile(filepath.Join(c.root, "cgroup.subtree_control"))
		if err != nil {
			return "", err
		}
		if !slices.Contains(strings.Fields(string(sub)), "cpu") {
			if err := os.WriteFile(filepath.Join(c.root, "cgroup.subtree_control"), []byte("+cpu"), 0); err != nil {
				return "", fmt.Errorf("enable the cpu controller for children: %w", err)
			}
		}
	}
	dir := filepath.Join(c.root, fmt.Sprintf("kassa-bench-%d-%s", os.Getpid(), name))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return "", err
	}
	c.made = append(c.made, dir)
	quota, period := scaleQuota.Microseconds(), scalePeriod.Microseconds()
	var err error
	switch {
	case c.v2:
		if err = os.WriteFile(filepath.Join(dir, "cpu.weight"), fmt.Appendf(nil, "%d", 100*scaleWeight), 0); err == nil && limited {
			err = os.WriteFile(filepath.Join(dir, "cpu.max"), fmt.Appendf(nil, "%d %d", quota, period), 0)
		}
	default:
		err = os.WriteFile(filepath.Join(dir, "cpu.shares"), fmt.Appendf(nil, "%d", 1024*scaleWeight), 0)
		if err == nil && limited {
			if err = os.WriteFile(filepath.Join(dir, "cpu.cfs_period_us"), fmt.Appendf(nil, "%d", period), 0); err == nil {
				err = os.WriteFile(filepath.Join(dir, "cpu.cfs_quota_us"), fmt.Appendf(nil, "%d", quota), 0)
			}
		}
	}
	if err != nil {
		c.remove(dir)
		return "", fmt.Errorf("limit %s: %w", dir, err)
	}
	return dir, nil
}

// add moves process pid (all its threads) into cgroup dir.
func (c *cpuCgroups) add(dir string, pid int) error {
	return os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0)
}

// remove moves what still runs in cgroup dir back to the root and
// removes dir.
func (c *cpuCgroups) remove(dir string) error {
	i := slices.Index(c.made, dir)
	if i < 0 {
		return nil
	}
	procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	for _, pid := range strings.Fields(string(procs)) {
		os.WriteFile(filepath.Join(c.root, "cgroup.procs"), []byte(pid), 0)
	}
	var err error
	for range 50 { // a process that just exited leaves its cgroup a moment later
		if err = os.Remove(dir); err == nil || os.IsNotExist(err) {
			c.made = slices.Delete(c.made, i, i+1)
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("remove cgroup %s: %w", dir, err)
}

// removeAll removes every cgroup made, reporting those it cannot.
func (c *cpuCgroups) removeAll() {
	for _, dir := range slices.Clone(c.made) {
		if err := c.remove(dir); err != nil {
			fmt.Fprintln(os.Stderr, "scale:", err)
		}
	}
}
