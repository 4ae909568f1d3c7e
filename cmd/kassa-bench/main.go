// Command kassa-bench measures Kassa against a floor measured in the same
// run and prints each figure as `BENCH <name> <value> <unit>`.
//
// The floor is the same chi router and Pebble with one synced write per
// request and nothing else; Kassa is the real `kassa serve` binary with
// durable writes. Both run as separate processes on loopback and are
// driven by the same load generator: a closed loop at fixed concurrency
// for the peak rate, then an open loop at half the peak rate for latency.
//
// Beside the bare floor, a work floor does in the same process shape what
// every invoice creation must do (sign a BOLT11 request, make an address,
// draw two QR codes, encode the JSON): invoice_create_vs_work_floor is
// Kassa's own overhead. The memory figures run the real binary too: its
// resident memory after creating and closing many invoices, and the time
// and memory of a restart with many open invoices. The Lightning figures
// run on real lnd nodes (lightning.go). The cluster figures (cluster.go)
// run a one-node cluster over PostgreSQL and etcd against the single node
// on Pebble, and time a failover in a three-node cluster.
//
// The sign-in figures (signin.go) flood the dashboard's sign-in with
// wrong passwords from 400 client networks while a merchant signs in
// with the device cookie of an earlier sign-in.
//
// The search figures (search.go) time searches by order id and by buyer
// e-mail and the first page of the list on a store of a million
// invoices written in bulk through the storage port.
//
// The expiry figures (expiry.go) are how late the Expired webhooks of
// 2,000 invoices of one store falling due together arrive, on one node
// over Pebble and on a one-node cluster over PostgreSQL.
//
// The scale figures (scale.go) are the create rate of a cluster of one,
// two and three nodes over one PostgreSQL and etcd, each node held to a
// quarter of a core by a cgroup, the load sent to the stores' owners.
//
// The run is made of parts (create, disk, tracing, webhooks, closed, restart,
// chain, cluster, lightning, memory, signin, search, expiry, scale), each runnable alone with -only
// (a comma-separated list runs several). A part that fails does not stop
// the others. At the end every figure is printed again, one line each,
// as `SUMMARY <part> <name> <value> <unit> (goal <op> <target>) MET|MISS`
// (the goal table is measure.Goals), with each part's wall time and the
// whole run's. The defaults fit the whole run in 20 minutes on a quiet
// 2-core machine.
//
//	kassa-bench [-duration 3s] [-rounds 3] [-concurrency 32] [-endpoints 1000] [-open-invoices 100000]
//	            [-closed-invoices 300000] [-restart-invoices 100000] [-chain-payments 10] [-ln-payments 20]
//	            [-disk-invoices 10000] [-search-invoices 1000000]
//	            [-expiring-invoices 2000] [-only PART[,PART...]] [-profile DIR] [-compare-kassa BIN]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/measure"
)

// options are the sizes of the parts, from the flags.
type options struct {
	duration      time.Duration
	concurrency   int
	rounds        int
	openInvoices  int
	endpoints     int
	closed        int
	restart       int
	lnPayments    int
	chainPayments int
	diskInvoices  int
	// searchInvoices is the size of the search part's store.
	searchInvoices int
	// expiring is how many invoices of one store the expiry part lets
	// expire in one burst.
	expiring int
}

// part is one section of the run.
type part struct {
	name string
	run  func(context.Context, *options) error
}

// parts in the order of a whole run.
var parts = []part{
	{"create", func(ctx context.Context, o *options) error {
		return benchCreate(ctx, o.duration, o.concurrency, o.rounds)
	}},
	{"disk", func(ctx context.Context, o *options) error { return benchDisk(ctx, o.diskInvoices, o.concurrency) }},
	{"tracing", func(ctx context.Context, o *options) error { return benchTracing(o.duration, o.concurrency, o.rounds) }},
	{"webhooks", func(ctx context.Context, o *options) error { return benchWebhooks(ctx, o.endpoints) }},
	{"closed", func(ctx context.Context, o *options) error { return benchClosed(ctx, o.closed, o.concurrency) }},
	{"restart", func(ctx context.Context, o *options) error { return benchRestart(ctx, o.restart, o.concurrency) }},
	{"chain", func(ctx context.Context, o *options) error { return benchChain(ctx, o.chainPayments) }},
	{"cluster", func(ctx context.Context, o *options) error { return benchCluster(ctx, o.duration, o.concurrency) }},
	{"lightning", func(ctx context.Context, o *options) error {
		return benchLightning(o.duration, o.concurrency, o.rounds, o.lnPayments)
	}},
	{"memory", func(ctx context.Context, o *options) error { return benchMemory(ctx, o.openInvoices) }},
	{"signin", func(ctx context.Context, o *options) error { return benchSignin(ctx) }},
	{"search", func(ctx context.Context, o *options) error { return benchSearch(ctx, o.searchInvoices) }},
	{"expiry", func(ctx context.Context, o *options) error { return benchExpiry(ctx, o.expiring, o.concurrency) }},
	{"scale", func(ctx context.Context, o *options) error { return benchScale(ctx, o.duration) }},
}

// wholeRunGoal is the wall time a whole run (every part) must stay under.
const wholeRunGoal = 20 * time.Minute

// figure is one BENCH line of a part.
type figure struct {
	part, name, unit string
	value            float64
}

var (
	mu      sync.Mutex
	current string   // the part running
	results []figure // every figure printed so far
)

// bench prints a figure and keeps it for the summary.
func bench(name string, value float64, unit string) {
	fmt.Printf("BENCH %s %.4g %s\n", name, value, unit)
	mu.Lock()
	results = append(results, figure{part: current, name: name, unit: unit, value: value})
	mu.Unlock()
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == "floor" {
		if err := runFloor(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "floor:", err)
			os.Exit(1)
		}
		return
	}
	var o options
	flag.DurationVar(&o.duration, "duration", 3*time.Second, "length of each measured phase")
	flag.IntVar(&o.concurrency, "concurrency", 32, "requests in flight in the closed loop")
	flag.IntVar(&o.openInvoices, "open-invoices", 100_000, "open invoices for the memory figures")
	flag.IntVar(&o.endpoints, "endpoints", 1000, "webhook endpoints for the fan-out figure")
	flag.IntVar(&o.rounds, "rounds", 3, "turns of the compared servers in the create, tracing and lightning figures")
	flag.IntVar(&o.closed, "closed-invoices", 300_000, "invoices created and closed for the resident-memory figures (measured at a third of them and at all)")
	flag.IntVar(&o.restart, "restart-invoices", 100_000, "open invoices for the restart figures")
	flag.IntVar(&o.lnPayments, "ln-payments", 20, "payments on real lnd for ln_settle_to_webhook_p99_ms")
	flag.IntVar(&o.chainPayments, "chain-payments", 10, "payments on a real btcd for chain_block_to_settled_ms")
	flag.IntVar(&o.diskInvoices, "disk-invoices", 10_000, "invoices created for disk_per_invoice_bytes")
	flag.IntVar(&o.searchInvoices, "search-invoices", 1_000_000, "invoices of the search part's store")
	flag.IntVar(&o.expiring, "expiring-invoices", 2_000, "invoices of one store that the expiry part lets expire in one burst")
	flag.StringVar(&compareKassa, "compare-kassa", "", "a second kassa binary (another build, say main's) that the create and lightning parts measure in the same rounds as this build: invoice_create_compare_vs_kassa and ln_invoice_create_compare_vs_kassa")
	flag.StringVar(&profileDir, "profile", "", "write CPU profiles of the kassa server under test during each measured phase of the create, lightning, closed and cluster parts into this directory")
	flag.BoolVar(&pgStats, "pg-stats", false, "cluster part: PostgreSQL runs with pg_stat_statements, and one more turn of the one-node cluster prints where a create's time goes on the server's side (statements, rows, WAL, CPU of PostgreSQL, Kassa and etcd)")
	var names []string
	for _, p := range parts {
		names = append(names, p.name)
	}
	only := flag.String("only", "", "run only these parts, comma-separated: "+strings.Join(names, ", "))
	flag.Parse()
	run := parts
	if *only != "" {
		run = nil
		for _, name := range strings.Split(*only, ",") {
			i := slices.IndexFunc(parts, func(p part) bool { return p.name == strings.TrimSpace(name) })
			if i < 0 {
				fmt.Fprintf(os.Stderr, "kassa-bench: no part %q (parts: %s)\n", name, strings.Join(names, ", "))
				os.Exit(2)
			}
			run = append(run, parts[i])
		}
	}
	if profileDir != "" {
		// Made here, so that a part does not run for minutes and then
		// fail to write its profiles.
		if err := os.MkdirAll(profileDir, 0o755); err != nil {
			fmt.Fprintf(os.Stderr, "kassa-bench: -profile: %v\n", err)
			os.Exit(2)
		}
	}
	failed := runParts(context.Background(), run, &o, len(run) == len(parts))
	cleanupBuild()
	if failed {
		os.Exit(1)
	}
}

// runParts runs each part, then prints the summary; it reports whether
// a part failed. whole says every part ran, so the run's wall time has
// a goal.
func runParts(ctx context.Context, run []part, o *options, whole bool) (failed bool) {
	start := time.Now()
	walls := map[string]time.Duration{}
	errs := map[string]error{}
	for _, p := range run {
		mu.Lock()
		current = p.name
		mu.Unlock()
		fmt.Fprintf(os.Stderr, "kassa-bench: part %s (load average %s at its start; quiet is below 0.3)\n", p.name, loadAverage())
		began := time.Now()
		err := runPart(ctx, p, o)
		walls[p.name] = time.Since(began)
		logs := takeLogTails()
		if err != nil {
			errs[p.name] = err
			failed = true
			for _, l := range logs {
				fmt.Fprintln(os.Stderr, l)
			}
			fmt.Fprintf(os.Stderr, "kassa-bench: %s: %v\n", p.name, err)
		}
		fmt.Fprintf(os.Stderr, "kassa-bench: part %s took %v\n", p.name, walls[p.name].Round(time.Second))
	}
	printSummary(run, walls, errs, time.Since(start), whole)
	return failed
}

// runPart runs p, turning a panic (the harness of the real-daemon parts
// panics on a failure) into its error.
func runPart(ctx context.Context, p part, o *options) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	return p.run(ctx, o)
}

func printSummary(run []part, walls map[string]time.Duration, errs map[string]error, total time.Duration, whole bool) {
	mu.Lock()
	defer mu.Unlock()
	figures := map[string]float64{}
	for _, f := range results {
		figures[f.name] = f.value
	}
	missed, goalsSeen := 0, 0
	fmt.Println()
	for _, p := range run {
		for _, f := range results {
			if f.part != p.name {
				continue
			}
			line := fmt.Sprintf("SUMMARY %s %s %.4g %s", f.part, f.name, f.value, f.unit)
			if g, ok := measure.Goals[f.name]; ok {
				met, known := g.Met(f.value, figures)
				switch {
				case !known:
					line += fmt.Sprintf(" (%s) UNKNOWN", g)
				case met:
					line += fmt.Sprintf(" (%s) MET", g)
					goalsSeen++
				default:
					line += fmt.Sprintf(" (%s) MISS", g)
					goalsSeen++
					missed++
				}
			}
			fmt.Println(line)
		}
		if err := errs[p.name]; err != nil {
			fmt.Printf("SUMMARY %s FAILED %s\n", p.name, strings.ReplaceAll(err.Error(), "\n", " "))
		}
		fmt.Printf("SUMMARY %s wall %v\n", p.name, walls[p.name].Round(time.Second))
	}
	line := fmt.Sprintf("SUMMARY all wall %v", total.Round(time.Second))
	if whole {
		verdict := "MET"
		if total > wholeRunGoal {
			verdict = "MISS"
		}
		line += fmt.Sprintf(" (goal <= %v) %s", wholeRunGoal, verdict)
	}
	fmt.Printf("%s; %d of %d goals missed, %d of %d parts failed\n", line, missed, goalsSeen, len(errs), len(run))
}

// loadAverage is the one-minute load average, or "unknown".
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) > 0 {
		return f[0]
	}
	return "unknown"
}
