package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest/harness"
)

// benchCluster measures cluster mode: the create rate of a one-node
// cluster (PostgreSQL with its durable defaults, and etcd) against the
// single node (Pebble, synced writes), and
// the failover of a three-node cluster: from the SIGKILL of the node
// that runs a store to the first create for that store that succeeds
// through another node, and to the first of its open invoices expired
// by another node (their deadline passed while it was down).
func benchCluster(ctx context.Context, d time.Duration, workers int) error {
	tmp, bin, cleanup, err := workspace("cluster")
	if err != nil {
		return err
	}
	defer cleanup()
	pg, et, stop, err := startShared(ctx)
	if err != nil {
		return err
	}
	defer stop()

	single, err := startKassa(bin, filepath.Join(tmp, "single"))
	if err != nil {
		return err
	}
	defer single.stop()
	if _, _, err := single.createStore(); err != nil {
		return err
	}
	dsn, err := pg.NewSchema(ctx)
	if err != nil {
		return err
	}
	one, err := startClusterNode(bin, filepath.Join(tmp, "one"), dsn, et.ClusterURL())
	if err != nil {
		return err
	}
	defer one.stop()
	if _, _, err := one.createStore(); err != nil {
		return err
	}
	turns := []*clusterTurn{{name: "single node (Pebble)", t: single},
		{name: "one-node cluster (PostgreSQL)", t: one, pg: true, dsn: dsn, etcdURL: et.ClientURL()}}
	// KASSA_BENCH_BASE_BIN: one-node clusters of other kassa binaries
	// (comma-separated; an older commit's, say) take turns too, each on
	// its own schema and etcd, for a before-and-after in one run.
	for i, baseBin := range strings.FieldsFunc(os.Getenv("KASSA_BENCH_BASE_BIN"), func(r rune) bool { return r == ',' }) {
		et2, err := harness.StartEtcd()
		if err != nil {
			return err
		}
		defer et2.Stop()
		dsn2, err := pg.NewSchema(ctx)
		if err != nil {
			return err
		}
		base, err := startClusterNode(baseBin, filepath.Join(tmp, fmt.Sprintf("base%d", i)), dsn2, et2.ClusterURL())
		if err != nil {
			return err
		}
		defer base.stop()
		if _, _, err := base.createStore(); err != nil {
			return err
		}
		turns = append(turns, &clusterTurn{name: "one-node cluster (PostgreSQL) of " + baseBin, t: base, pg: true, dsn: dsn2, etcdURL: et2.ClientURL()})
	}
	dataDir, err := pgDataDir(ctx, pg)
	if err != nil {
		return err
	}
	// The nodes take turns, so that a change in the machine's load
	// weighs on every figure alike, and each figure is the median of its
	// turns; CPU per create is summed over the turns. Each round starts
	// with the next node, so that none always follows the same one.
	for round := range clusterRounds {
		for k := range turns {
			i := (round + k) % len(turns)
			c := turns[i]
			var wait func()
			switch i {
			case 0:
				wait = profileDuring(c.t.debug, fmt.Sprintf("cluster-pebble-%d.pprof", round+1), d)
			case 1:
				wait = profileDuring(c.t.debug, fmt.Sprintf("cluster-postgres-%d.pprof", round+1), d)
			}
			kassaCPU, pgCPU := cpuTime(c.t.pid), postgresCPU(dataDir)
			r, n, err := c.t.peakCount(workers, d)
			if wait != nil {
				wait()
			}
			if err != nil {
				return err
			}
			c.rates = append(c.rates, r)
			c.creates += n
			c.kassaCPU += cpuTime(c.t.pid) - kassaCPU
			if c.pg {
				c.pgCPU += postgresCPU(dataDir) - pgCPU
			}
		}
	}
	if pgStats {
		for i, c := range turns[1:] {
			suffix := ""
			if i > 0 {
				suffix = fmt.Sprintf("_base%d", i)
			}
			fmt.Fprintf(os.Stderr, "pg-stats of the %s:\n", c.name)
			if err := pgStatsRun(ctx, pg, c.dsn, c.t, c.etcdURL, workers, d, suffix); err != nil {
				return err
			}
		}
	}
	for _, c := range turns {
		c.t.stop()
		per := func(d time.Duration) float64 { return float64(d.Microseconds()) / float64(max(c.creates, 1)) }
		fmt.Fprintf(os.Stderr, "create: %s %.0f/s %.0f; CPU per create: Kassa %.0f µs, PostgreSQL %.0f µs\n",
			c.name, clusterMedian(c.rates), c.rates, per(c.kassaCPU), per(c.pgCPU))
	}
	pebbleRate, pgRate := clusterMedian(turns[0].rates), clusterMedian(turns[1].rates)
	bench("cluster_create_single_pebble_per_s", pebbleRate, "req/s")
	bench("cluster_create_one_node_postgres_per_s", pgRate, "req/s")
	bench("cluster_create_postgres_vs_pebble", pgRate/pebbleRate, "ratio")
	for i, c := range turns[2:] {
		bench(fmt.Sprintf("cluster_create_base%d_postgres_vs_pebble", i+1), clusterMedian(c.rates)/pebbleRate, "ratio")
	}

	return benchFailover(ctx, bin, tmp, pg, et)
}

// makeDurable restarts the throw-away PostgreSQL of kassatest/harness
// (started with fsync and synchronous commit off, for tests) with
// PostgreSQL's durable defaults, so that it commits like Pebble does: fsynced before the
// answer.
func makeDurable(ctx context.Context, pg *harness.Postgres) error {
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return err
	}
	var dataDir, port string
	err = conn.QueryRow(ctx, "SELECT current_setting('data_directory'), current_setting('port')").Scan(&dataDir, &port)
	conn.Close(ctx)
	if err != nil {
		return err
	}
	opts := fmt.Sprintf("-p %s -k %s -c listen_addresses=127.0.0.1 -c max_connections=200", port, filepath.Dir(dataDir))
	if pgStats {
		opts += pgStatsOptions
	}
	// -l: the server's output goes to its log file, not to this
	// process's pipe (which would then stay open as long as it runs).
	name, args := filepath.Join(harness.PostgresBinDir, "pg_ctl"), []string{"-D", dataDir, "-o", opts,
		"-l", filepath.Join(filepath.Dir(dataDir), "log"), "-w", "-t", "60", "-m", "fast", "restart"}
	if os.Geteuid() == 0 {
		name, args = "runuser", append([]string{"-u", "postgres", "--", name}, args...)
	}
	if out, err := exec.Command(name, args...).CombinedOutput(); err != nil {
		return fmt.Errorf("restart PostgreSQL with fsync on: %w\n%s", err, out)
	}
	conn, err = pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	var fsync, syncCommit string
	if err := conn.QueryRow(ctx, "SELECT current_setting('fsync'), current_setting('synchronous_commit')").Scan(&fsync, &syncCommit); err != nil {
		return err
	}
	if fsync != "on" || syncCommit != "on" {
		return fmt.Errorf("PostgreSQL still runs with fsync=%s synchronous_commit=%s", fsync, syncCommit)
	}
	return nil
}

// clusterTurn is a node of the create figure with its turns' rates and
// the CPU its creates took (Kassa's, and the PostgreSQL server's).
type clusterTurn struct {
	name            string
	t               *target
	pg              bool
	dsn, etcdURL    string // of a PostgreSQL turn, for -pg-stats
	rates           []float64
	creates         int
	kassaCPU, pgCPU time.Duration
}

// pgDataDir returns the data directory of the server.
func pgDataDir(ctx context.Context, pg *harness.Postgres) (string, error) {
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return "", err
	}
	defer conn.Close(ctx)
	var dir string
	err = conn.QueryRow(ctx, "SELECT current_setting('data_directory')").Scan(&dir)
	return dir, err
}

// clusterRounds is how many turns each node gets in the create figure.
const clusterRounds = 3

// clusterMedian returns the middle of rates (the mean of the two middle ones
// for an even count).
func clusterMedian(rates []float64) float64 {
	s := slices.Sorted(slices.Values(rates))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// startShared starts what cluster nodes share: a PostgreSQL whose
// commits are durable (makeDurable) and an etcd; stop stops both.
func startShared(ctx context.Context) (pg *harness.Postgres, et *harness.Etcd, stop func(), err error) {
	if pg, err = harness.StartPostgres(); err != nil {
		return nil, nil, nil, err
	}
	if err = makeDurable(ctx, pg); err == nil {
		et, err = harness.StartEtcd()
	}
	if err != nil {
		pg.Stop()
		return nil, nil, nil, err
	}
	return pg, et, func() { et.Stop(); pg.Stop() }, nil
}

// clusterNodes counts the cluster nodes started, to hand each its own
// node certificate.
var clusterNodes int

// startClusterNode starts a node of the cluster in etcd at etcdURL over
// the PostgreSQL database dsn. Its node port has mutual TLS, with the
// certificates `kassa cluster certs` would make (in the directory next
// to data, made by the first node).
func startClusterNode(bin, data, dsn, etcdURL string, extra ...string) (*target, error) {
	node, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	certs := filepath.Join(filepath.Dir(data), "cluster-certs")
	const certNodes = 3
	if _, err := os.Stat(certs); os.IsNotExist(err) {
		if err := nodetls.Generate(certs, certNodes, nil, time.Now()); err != nil {
			return nil, err
		}
	}
	clusterNodes++
	f := nodetls.NodeFiles(certs, (clusterNodes-1)%certNodes+1)
	t, err := startKassa(bin, data, append([]string{"--store", dsn, "--cluster", etcdURL, "--node-listen", node,
		"--node-tls-ca", f.CA, "--node-tls-cert", f.Cert, "--node-tls-key", f.Key}, extra...)...)
	if err != nil {
		return nil, err
	}
	return t, nil
}

// clusterView is the cluster part of a node's health.
type clusterView struct {
	// Address is the node's address among the members.
	Address string   `json:"address"`
	Members []string `json:"members"`
	Stores  int      `json:"stores"`
}

func (t *target) cluster() (clusterView, error) {
	var h struct {
		Cluster clusterView `json:"cluster"`
	}
	req, err := http.NewRequest("GET", t.base+"/api/v1/health", nil)
	if err != nil {
		return h.Cluster, err
	}
	req.Header.Set("Authorization", "Bearer "+t.token) // the cluster's details
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return h.Cluster, err
	}
	defer res.Body.Close()
	err = json.NewDecoder(res.Body).Decode(&h)
	return h.Cluster, err
}

func benchFailover(ctx context.Context, bin, tmp string, pg *harness.Postgres, et *harness.Etcd) error {
	dsn, err := pg.NewSchema(ctx)
	if err != nil {
		return err
	}
	const expiry = 8 * time.Second
	var nodes []*target
	defer func() {
		for _, n := range nodes {
			n.stop()
		}
	}()
	for i := 0; i < 3; i++ {
		n, err := startClusterNode(bin, filepath.Join(tmp, fmt.Sprintf("node%d", i)), dsn, et.ClusterURL(), "--invoice-expiry", expiry.String())
		if err != nil {
			return err
		}
		nodes = append(nodes, n)
	}
	if err := waitMembers(nodes, 3); err != nil {
		return err
	}
	id, key, err := nodes[0].createStore()
	if err != nil {
		return err
	}
	for _, n := range nodes {
		n.useStore(id, key)
	}
	// Open invoices of the store, on the node that runs it.
	c := newClient(4)
	var open []string
	for i := 0; i < 20; i++ {
		inv, err := nodes[i%3].createID(c)
		if err != nil {
			return err
		}
		open = append(open, inv)
	}
	deadline := time.Now().Add(expiry)
	victim := -1
	for i, n := range nodes {
		if v, err := n.cluster(); err == nil && v.Stores > 0 {
			victim = i
		}
	}
	if victim < 0 {
		return fmt.Errorf("failover: no node runs the bench store")
	}
	other := nodes[(victim+1)%3]
	// Kill the store's node one second before its invoices expire: it
	// stops (SIGSTOP) with creates sent through another node in flight
	// to it, which are answered by the store's new node (the goal: within
	// the etcd lease + 1 s), then dies (SIGKILL).
	time.Sleep(time.Until(deadline.Add(-time.Second)))
	killed := time.Now()
	if err := syscall.Kill(nodes[victim].pid, syscall.SIGSTOP); err != nil {
		return err
	}
	const inFlight = 5
	answers := make(chan time.Duration, inFlight)
	slow := &http.Client{Timeout: 30 * time.Second}
	for i := 0; i < inFlight; i++ {
		go func() {
			if _, err := other.createID(slow); err != nil {
				answers <- -1
				return
			}
			answers <- time.Since(killed)
		}()
	}
	time.Sleep(200 * time.Millisecond)
	if err := syscall.Kill(nodes[victim].pid, syscall.SIGKILL); err != nil {
		return err
	}
	quick := &http.Client{Timeout: 2 * time.Second}
	for {
		if _, err := other.createID(quick); err == nil {
			break
		}
		if time.Since(killed) > time.Minute {
			return fmt.Errorf("failover: no create succeeded within a minute of the kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	createAfter := time.Since(killed)
	var expiredAfter time.Duration
	for expiredAfter == 0 {
		for _, inv := range open {
			if st, err := other.status(inv); err == nil && st == "Expired" {
				expiredAfter = time.Since(killed)
				break
			}
		}
		if time.Since(killed) > time.Minute {
			return fmt.Errorf("failover: no invoice of the lost node expired within a minute of the kill")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var took []time.Duration
	for i := 0; i < inFlight; i++ {
		if d := <-answers; d >= 0 {
			took = append(took, d)
		}
	}
	if len(took) < inFlight {
		return fmt.Errorf("failover: %d of %d creates in flight at the kill were not answered 200", inFlight-len(took), inFlight)
	}
	slices.Sort(took)
	fmt.Fprintf(os.Stderr, "failover: kill → first create %v, → first expiry %v (deadline 1 s after the kill); creates in flight answered in p50 %v, max %v\n",
		createAfter.Round(time.Millisecond), expiredAfter.Round(time.Millisecond), took[inFlight/2].Round(time.Millisecond), took[inFlight-1].Round(time.Millisecond))
	bench("cluster_failover_inflight_p50_ms", float64(took[inFlight/2].Milliseconds()), "ms")
	bench("cluster_failover_inflight_max_ms", float64(took[inFlight-1].Milliseconds()), "ms")
	bench("cluster_failover_first_create_ms", float64(createAfter.Milliseconds()), "ms")
	bench("cluster_failover_first_expiry_ms", float64(expiredAfter.Milliseconds()), "ms")
	bench("cluster_failover_expiry_late_ms", float64((expiredAfter - time.Second).Milliseconds()), "ms")
	return nil
}

// waitMembers waits until every node sees n members.
func waitMembers(nodes []*target, n int) error {
	end := time.Now().Add(30 * time.Second)
	for _, t := range nodes {
		for {
			if v, err := t.cluster(); err == nil && len(v.Members) == n {
				break
			}
			if time.Now().After(end) {
				return fmt.Errorf("the cluster did not form: a node does not see %d members", n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}
