package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa/kassatest/harness"
)

// pgStats turns on the cluster part's account of where a create's time
// goes (-pg-stats): PostgreSQL runs with pg_stat_statements, and after
// the measured turns one more closed loop on the one-node cluster is
// measured from PostgreSQL's side: statements per create and their
// cost, rows written per table, WAL bytes and flushes, commits, the CPU
// of the server's processes, of Kassa and of etcd, and etcd requests.
// It is a diagnosis, not a figure with a goal: the extension and its
// timing cost the server a little.
var pgStats bool

// pgStatsOptions are the server options -pg-stats adds.
const pgStatsOptions = " -c shared_preload_libraries=pg_stat_statements -c pg_stat_statements.track=all -c track_wal_io_timing=on"

// pgSample is what the server and the processes had done at one time.
type pgSample struct {
	at        time.Time
	stmts     map[string]pgStmt
	tables    map[string]pgTable
	indexes   map[string]int // indexes per table
	walBytes  int64
	walRecs   int64
	walFPI    int64
	walWrite  int64
	walSync   int64
	walSyncMs float64
	commits   int64
	rollbacks int64
	pgCPU     time.Duration
	kassaCPU  time.Duration
	etcdCPU   float64
	etcdMsgs  float64
}

type pgStmt struct {
	calls int64
	ms    float64
	rows  int64
}

type pgTable struct{ ins, upd, hot, del int64 }

// pgTake samples the server at dsn (database and schema of the bench
// node), its processes (data directory dataDir), Kassa's process pid
// and etcd at etcdURL.
func pgTake(ctx context.Context, conn *pgx.Conn, dataDir string, kassaPID int, etcdURL string) (pgSample, error) {
	s := pgSample{at: time.Now(), stmts: map[string]pgStmt{}, tables: map[string]pgTable{}, indexes: map[string]int{}}
	rows, err := conn.Query(ctx, `SELECT query, calls, total_exec_time, rows FROM pg_stat_statements`)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var q string
		var st pgStmt
		if err := rows.Scan(&q, &st.calls, &st.ms, &st.rows); err != nil {
			rows.Close()
			return s, err
		}
		q = strings.Join(strings.Fields(q), " ")
		old := s.stmts[q]
		s.stmts[q] = pgStmt{old.calls + st.calls, old.ms + st.ms, old.rows + st.rows}
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT schemaname || '.' || relname, n_tup_ins, n_tup_upd, n_tup_hot_upd, n_tup_del FROM pg_stat_user_tables`)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var name string
		var t pgTable
		if err := rows.Scan(&name, &t.ins, &t.upd, &t.hot, &t.del); err != nil {
			rows.Close()
			return s, err
		}
		s.tables[name] = t
	}
	rows.Close()
	rows, err = conn.Query(ctx, `SELECT schemaname || '.' || tablename, count(*) FROM pg_indexes GROUP BY 1`)
	if err != nil {
		return s, err
	}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			rows.Close()
			return s, err
		}
		s.indexes[name] = n
	}
	rows.Close()
	err = conn.QueryRow(ctx, `SELECT wal_records, wal_fpi, wal_bytes::bigint, wal_write, wal_sync, wal_sync_time FROM pg_stat_wal`).
		Scan(&s.walRecs, &s.walFPI, &s.walBytes, &s.walWrite, &s.walSync, &s.walSyncMs)
	if err != nil {
		return s, err
	}
	if err := conn.QueryRow(ctx, `SELECT sum(xact_commit)::bigint, sum(xact_rollback)::bigint FROM pg_stat_database`).Scan(&s.commits, &s.rollbacks); err != nil {
		return s, err
	}
	s.pgCPU = postgresCPU(dataDir)
	s.kassaCPU = cpuTime(kassaPID)
	s.etcdCPU, s.etcdMsgs = etcdMetrics(etcdURL)
	return s, nil
}

// perfRecord records, when KASSA_BENCH_PERF names a file, a perf
// profile (with call graphs) of the server's processes for d; the
// returned stop waits for it.
func perfRecord(dataDir string, d time.Duration) (stop func()) {
	out := os.Getenv("KASSA_BENCH_PERF")
	if out == "" {
		return func() {}
	}
	var pids []string
	master, children := postgresPIDs(dataDir)
	for _, p := range append(children, master) {
		pids = append(pids, strconv.Itoa(p))
	}
	cmd := exec.Command("perf", "record", "-g", "-o", out, "-p", strings.Join(pids, ","), "--", "sleep", strconv.Itoa(max(int(d/time.Second), 1)))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "perf:", err)
		return func() {}
	}
	return func() { cmd.Wait() }
}

// postgresPIDs returns the postmaster of the server whose data
// directory is dataDir, and its children.
func postgresPIDs(dataDir string) (master int, children []int) {
	pidFile, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, nil
	}
	master, _ = strconv.Atoi(strings.TrimSpace(strings.SplitN(string(pidFile), "\n", 2)[0]))
	procs, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range procs {
		stat, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(stat)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(fields) > 1 && fields[1] == strconv.Itoa(master) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			children = append(children, pid)
		}
	}
	return master, children
}

// postgresCPU is the CPU time used so far by the PostgreSQL server whose
// data directory is dataDir: the postmaster and its children (backends
// of the pool stay up, so their time is kept).
func postgresCPU(dataDir string) time.Duration {
	master, children := postgresPIDs(dataDir)
	if master == 0 {
		return 0
	}
	total := cpuTime(master)
	for _, pid := range children {
		total += cpuTime(pid)
	}
	return total
}

// etcdMetrics returns etcd's CPU seconds and the gRPC messages it
// received so far, from its /metrics.
func etcdMetrics(url string) (cpu, msgs float64) {
	res, err := http.Get(url + "/metrics")
	if err != nil {
		return 0, 0
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, value, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "process_cpu_seconds_total":
			cpu = v
		case strings.HasPrefix(name, "grpc_server_msg_received_total{"):
			msgs += v
		}
	}
	return cpu, msgs
}

// pgSettle waits (15 s at most) until the server's counters of rows
// and WAL stand still for 2 s: an idle backend reports its counters up
// to 10 s late (PostgreSQL's PGSTAT_IDLE_INTERVAL), and the nodes of
// the turns before (KASSA_BENCH_BASE_BIN's) would otherwise count in
// this one's rows and WAL.
func pgSettle(ctx context.Context, conn *pgx.Conn) error {
	const q = `SELECT (SELECT coalesce(sum(n_tup_ins + n_tup_upd + n_tup_del), 0)::bigint FROM pg_stat_user_tables),
		(SELECT wal_records FROM pg_stat_wal)`
	var last [2]int64
	still := time.Now()
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); {
		var now [2]int64
		if err := conn.QueryRow(ctx, q).Scan(&now[0], &now[1]); err != nil {
			return err
		}
		if now != last {
			last, still = now, time.Now()
		} else if time.Since(still) >= 2*time.Second {
			return nil
		}
		time.Sleep(250 * time.Millisecond)
	}
	return nil
}

// pgStatsRun measures one more closed loop of workers for d on the
// cluster node and prints, per create, where the time went, biggest
// first.
// Its figures' names end in suffix.
func pgStatsRun(ctx context.Context, pg *harness.Postgres, dsn string, node *target, etcdURL string, workers int, d time.Duration, suffix string) error {
	conn, err := pgx.Connect(ctx, pg.DSN())
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`); err != nil {
		return err
	}
	var dataDir string
	if err := conn.QueryRow(ctx, `SELECT current_setting('data_directory')`).Scan(&dataDir); err != nil {
		return err
	}
	c := newClient(workers)
	for i := 0; i < workers; i++ { // warm
		if err := node.create(c); err != nil {
			return err
		}
	}
	if err := pgSettle(ctx, conn); err != nil {
		return err
	}
	if _, err := conn.Exec(ctx, `SELECT pg_stat_statements_reset()`); err != nil {
		return err
	}
	before, err := pgTake(ctx, conn, dataDir, node.pid, etcdURL)
	if err != nil {
		return err
	}
	stopPerf := perfRecord(dataDir, d)
	n, err := node.count(workers, d)
	stopPerf()
	if err != nil {
		return err
	}
	after, err := pgTake(ctx, conn, dataDir, node.pid, etcdURL)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("pg-stats: no create")
	}
	per := func(x float64) float64 { return x / float64(n) }
	secs := after.at.Sub(before.at).Seconds()
	w := os.Stderr
	fmt.Fprintf(w, "pg-stats: %d creates in %.1f s (%.0f/s)\n", n, secs, float64(n)/secs)
	fmt.Fprintf(w, "  CPU per create: PostgreSQL %.0f µs, Kassa %.0f µs, etcd %.1f µs; etcd messages per create %.3f\n",
		per(float64((after.pgCPU - before.pgCPU).Microseconds())), per(float64((after.kassaCPU - before.kassaCPU).Microseconds())),
		per((after.etcdCPU-before.etcdCPU)*1e6), per(after.etcdMsgs-before.etcdMsgs))
	fmt.Fprintf(w, "  WAL per create: %.0f B in %.1f records (%.2f full pages); commits per create %.3f, rollbacks %.3f; WAL writes %.0f/s, flushes %.0f/s (%.2f ms each)\n",
		per(float64(after.walBytes-before.walBytes)), per(float64(after.walRecs-before.walRecs)), per(float64(after.walFPI-before.walFPI)),
		per(float64(after.commits-before.commits)), per(float64(after.rollbacks-before.rollbacks)), float64(after.walWrite-before.walWrite)/secs, float64(after.walSync-before.walSync)/secs,
		(after.walSyncMs-before.walSyncMs)/max(float64(after.walSync-before.walSync), 1))
	type line struct {
		q     string
		calls float64
		ms    float64
		rows  float64
	}
	var lines []line
	var calls, total float64
	for q, a := range after.stmts {
		b := before.stmts[q]
		if a.calls-b.calls == 0 {
			continue
		}
		l := line{q, per(float64(a.calls - b.calls)), per(a.ms-b.ms) * 1000, per(float64(a.rows - b.rows))}
		lines = append(lines, l)
		calls += l.calls
		total += l.ms
	}
	sort.Slice(lines, func(i, j int) bool { return lines[i].ms > lines[j].ms })
	fmt.Fprintf(w, "  statements per create %.2f, server time %.0f µs (execution, pg_stat_statements):\n", calls, total)
	for _, l := range lines {
		if l.calls < 0.001 {
			continue
		}
		q := l.q
		if len(q) > 110 {
			q = q[:110] + "…"
		}
		fmt.Fprintf(w, "    %7.1f µs %6.3f calls %6.3f rows  %s\n", l.ms, l.calls, l.rows, q)
	}
	fmt.Fprintf(w, "  rows written per create (inserted, updated, of them HOT, deleted; indexes of the table):\n")
	var names []string
	for t := range after.tables {
		names = append(names, t)
	}
	sort.Strings(names)
	var entries float64
	for _, t := range names {
		a, b := after.tables[t], before.tables[t]
		ins, upd, hot, del := per(float64(a.ins-b.ins)), per(float64(a.upd-b.upd)), per(float64(a.hot-b.hot)), per(float64(a.del-b.del))
		if ins+upd+del == 0 {
			continue
		}
		entries += (ins + upd - hot) * float64(after.indexes[t])
		fmt.Fprintf(w, "    %-32s ins %.3f upd %.3f hot %.3f del %.3f  (%d indexes)\n", t, ins, upd, hot, del, after.indexes[t])
	}
	fmt.Fprintf(w, "  index entries written per create ≈ %.2f\n", entries)
	if sc, err := pgx.Connect(ctx, dsn); err == nil {
		var inv, invStored, ev, evStored float64
		err := sc.QueryRow(ctx, `SELECT (SELECT avg(length(doc)) FROM invoices), (SELECT avg(pg_column_size(doc)) FROM invoices),
			(SELECT avg(length(data)) FROM events), (SELECT avg(pg_column_size(data)) FROM events)`).Scan(&inv, &invStored, &ev, &evStored)
		sc.Close(ctx)
		if err == nil {
			fmt.Fprintf(w, "  invoice document %.0f B (stored %.0f B), event %.0f B (stored %.0f B)\n", inv, invStored, ev, evStored)
		}
	}
	bench("cluster_pg_statements_per_create"+suffix, calls, "stmts")
	bench("cluster_pg_wal_bytes_per_create"+suffix, per(float64(after.walBytes-before.walBytes)), "B")
	bench("cluster_pg_server_cpu_us_per_create"+suffix, per(float64((after.pgCPU - before.pgCPU).Microseconds())), "µs")
	bench("cluster_kassa_cpu_us_per_create"+suffix, per(float64((after.kassaCPU - before.kassaCPU).Microseconds())), "µs")
	return nil
}

// count runs a closed loop of workers for d, without warm-up, and
// returns how many creates succeeded.
func (t *target) count(workers int, d time.Duration) (int, error) {
	c := newClient(workers)
	var done atomic.Int64
	var firstErr atomic.Value
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if err := t.create(c); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	return int(done.Load()), nil
}
