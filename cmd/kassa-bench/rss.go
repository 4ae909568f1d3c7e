package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa/kassatest/harness"
)

// createMany creates n invoices on t from workers goroutines and calls
// after (if not nil) with each invoice's number and id.
func (t *target) createMany(n, workers int, after func(c *http.Client, i int, id string) error) error {
	c := newClient(workers)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || firstErr.Load() != nil {
					return
				}
				id, err := t.createID(c)
				if err == nil && after != nil {
					err = after(c, i, id)
				}
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				if done := i + 1; done%100_000 == 0 {
					fmt.Fprintf(os.Stderr, "  %d invoices in %v\n", done, time.Since(start).Round(time.Second))
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return fmt.Errorf("%s: %w", t.name, err)
	}
	return nil
}

// memory forces a collection in the kassa process (its pprof heap
// profile with gc=1), then returns its resident set and its Go heap in
// use, in bytes.
func (t *target) memory() (rss, heap int64, err error) {
	res, err := http.Get("http://" + t.debug + "/debug/pprof/heap?gc=1&debug=1")
	if err != nil {
		return 0, 0, fmt.Errorf("pprof heap: %w", err)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapInuse = "); ok {
			heap, _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		}
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", t.pid))
	if err != nil {
		return 0, 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, heap, err
		}
	}
	return 0, 0, fmt.Errorf("no VmRSS in /proc/%d/status", t.pid)
}

// memoryDetail describes where the kassa process's memory is: its
// resident set by kind (anonymous, file-backed) and what the Go runtime
// holds from the OS (Sys less HeapReleased) besides the heap, so that
// the part outside Go (Pebble's block cache and memtables are allocated
// with C's malloc) shows as the rest.
func (t *target) memoryDetail() string {
	stats := map[string]int64{}
	if res, err := http.Get("http://" + t.debug + "/debug/pprof/heap?debug=1"); err == nil {
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = "); ok {
				stats[k], _ = strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			}
		}
		io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	kb := map[string]int64{}
	if status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", t.pid)); err == nil {
		for _, line := range strings.Split(string(status), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.HasPrefix(k, "Rss") {
				kb[k], _ = strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			}
		}
	}
	goHeld := stats["Sys"] - stats["HeapReleased"]
	return fmt.Sprintf("RssAnon %d MB, RssFile %d MB; Go holds %d MB (heap sys %d, idle %d, released %d, stacks %d MB)",
		kb["RssAnon"]>>10, kb["RssFile"]>>10, goHeld>>20, stats["HeapSys"]>>20, stats["HeapIdle"]>>20,
		stats["HeapReleased"]>>20, stats["StackSys"]>>20)
}

// cpu returns the CPU time (user and system) the process used so far
// (zero when it cannot be read).
func (t *target) cpu() time.Duration { return cpuTime(t.pid) }

// status returns an invoice's status.
func (t *target) status(id string) (string, error) {
	req, _ := http.NewRequest("GET", t.url+"/"+id, nil)
	req.Header.Set("x-api-key", t.key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	var inv struct{ Status string }
	if res.StatusCode != 200 {
		return "", fmt.Errorf("get invoice %s: %d", id, res.StatusCode)
	}
	err = jsonDecode(res.Body, &inv)
	return inv.Status, err
}

// countName spells n for a bench name: 1m, 200k, or the digits.
func countName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return fmt.Sprintf("%dm", n/1_000_000)
	case n >= 1000 && n%1000 == 0:
		return fmt.Sprintf("%dk", n/1000)
	}
	return strconv.Itoa(n)
}

// benchClosed creates and closes n invoices in one kassa process (one in
// ten settled over Lightning, the rest expired, with a one-second expiry
// and monitoring window) and reports how its resident memory grows with
// closed invoices: memory must follow open invoices, not every invoice
// ever made. It measures once a third of them closed and once all of
// them did; rss_per_closed_invoice_bytes is the slope between the two.
//
// Each measurement waits until no invoice actor is live (the
// kassa_actors gauge), forces a collection in the server (its pprof heap
// profile with gc=1), waits 10 s, and prints that resident set; then it
// has the server give its free pages back to the OS (debug.FreeOSMemory,
// POST /debug/free-os-memory on the --dev debug listener) and reads
// VmRSS and the Go heap in use for the figures: what the process holds,
// without the collector's slack, which follows the heap's recent peaks
// rather than closed invoices. With
// KASSA_BENCH_HEAP_DIR set, it saves the server's heap profile there at
// both points (closed-<count>.pb.gz, for go tool pprof -inuse_space).
//
// With KASSA_BENCH_BASE_BIN (comma-separated kassa binaries, an older
// commit's, say), each of them runs the same part after this build, in
// the same run, its figures named base<i>_… (and its profiles
// base<i>-closed-…): a before-and-after on the same machine.
func benchClosed(ctx context.Context, n, workers int) error {
	if n < 3 {
		return fmt.Errorf("-closed-invoices %d: need at least 3", n)
	}
	tmp, bin, cleanup, err := workspace("closed")
	if err != nil {
		return err
	}
	defer cleanup()
	if err := closedRun(filepath.Join(tmp, "this"), bin, "", n, workers); err != nil {
		return err
	}
	for i, baseBin := range strings.FieldsFunc(os.Getenv("KASSA_BENCH_BASE_BIN"), func(r rune) bool { return r == ',' }) {
		fmt.Fprintf(os.Stderr, "closed: base%d is %s\n", i+1, baseBin)
		if err := closedRun(filepath.Join(tmp, fmt.Sprintf("base%d", i+1)), baseBin, fmt.Sprintf("base%d_", i+1), n, workers); err != nil {
			return err
		}
	}
	return nil
}

// closedRun is benchClosed for the kassa binary bin, in dir, its figures
// named with prefix.
func closedRun(dir, bin, prefix string, n, workers int) error {
	defer os.RemoveAll(dir)
	metricsAddr, err := harness.FreeAddr()
	if err != nil {
		return err
	}
	// The shortest deadlines the flags take that still run the real
	// path: each invoice expires (or is paid) and ends its monitoring on
	// its own actor's timer within two seconds.
	const expiry, monitoring = time.Second, time.Second
	k, err := startKassa(bin, filepath.Join(dir, "data"), "--dev", "--invoice-expiry", expiry.String(),
		"--monitoring", monitoring.String(), "--metrics-listen", metricsAddr)
	if err != nil {
		return err
	}
	defer k.stop()
	if _, _, err := k.createStore(); err != nil {
		return err
	}
	// Three times the workers: most of a create's time is its synced
	// write, which concurrent creates share.
	workers *= 3
	start := time.Now()
	var paid, late atomic.Int64
	closeSome := func(from, to int) error {
		return k.createMany(to-from, workers, func(c *http.Client, i int, id string) error {
			if (from+i)%10 != 0 {
				return nil
			}
			err := k.admin(c, "/admin/v1/sim/pay", `{"invoiceId":"`+id+`","method":"lightning"}`, nil)
			var status *statusError
			var timeout interface{ Timeout() bool }
			if errors.As(err, &status) && status.status == http.StatusConflict || errors.As(err, &timeout) && timeout.Timeout() {
				// On a loaded machine the invoice may expire before its
				// payment, or the payment's answer may come too late: it
				// is closed either way (measure waits for every invoice
				// actor to stop).
				late.Add(1)
				return nil
			}
			if err == nil {
				paid.Add(1)
			}
			return err
		})
	}
	type point struct {
		n         int
		rss, heap int64
		pebble    int64 // block cache and memtables, outside Go's heap
		elapsed   time.Duration
		cpu       time.Duration // the server's, so far
	}
	measure := func(closed int) (point, error) {
		if err := k.waitNoInvoiceActors(metricsAddr, 5*time.Minute); err != nil {
			return point{}, err
		}
		elapsed := time.Since(start)
		if heapDir := os.Getenv("KASSA_BENCH_HEAP_DIR"); heapDir != "" {
			if err := k.saveHeap(filepath.Join(heapDir, strings.ReplaceAll(prefix, "_", "-")+"closed-"+countName(closed)+".pb.gz")); err != nil {
				return point{}, err
			}
		}
		if _, _, err := k.memory(); err != nil {
			return point{}, err
		}
		time.Sleep(10 * time.Second)
		slack, _, err := k.memory()
		if err != nil {
			return point{}, err
		}
		before := k.memoryDetail()
		// What the process holds: the collector's free pages go back to
		// the OS (a --dev endpoint of the debug listener).
		res, err := http.Post("http://"+k.debug+"/debug/free-os-memory", "", nil)
		if err != nil {
			return point{}, err
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNoContent {
			return point{}, fmt.Errorf("free-os-memory: %s", res.Status)
		}
		rss, heap, err := k.memory()
		if err != nil {
			return point{}, err
		}
		const cache, memtables = "kassa_pebble_block_cache_bytes", "kassa_pebble_memtable_bytes"
		g, err := gauges(metricsAddr, cache, memtables)
		if err != nil {
			return point{}, err
		}
		pebble := int64(g[cache] + g[memtables])
		fmt.Fprintf(os.Stderr, "%s%d invoices closed (%d paid, %d expired before their payment) in %v: RSS %d MB (%d MB before the free pages went back; %s), heap in use %d MB; %s; Pebble block cache %.1f MB, memtables %.1f MB\n",
			prefix, closed, paid.Load(), late.Load(), elapsed.Round(time.Second), rss>>20, slack>>20, before, heap>>20, k.memoryDetail(), g[cache]/(1<<20), g[memtables]/(1<<20))
		return point{n: closed, rss: rss, heap: heap, pebble: pebble, elapsed: elapsed, cpu: k.cpu()}, nil
	}
	first := n / 3
	if err := closeSome(0, first); err != nil {
		return err
	}
	a, err := measure(first)
	if err != nil {
		return err
	}
	// With -profile, a CPU profile of the server over 30 s of the
	// second phase.
	wait := profileDuring(k.debug, strings.ReplaceAll(prefix, "_", "-")+"closed-cpu.pb.gz", 30*time.Second)
	if err := closeSome(first, n); err != nil {
		return err
	}
	wait()
	b, err := measure(n)
	if err != nil {
		return err
	}
	span := float64(b.n - a.n)
	bench(prefix+"rss_per_closed_invoice_bytes", float64(b.rss-a.rss)/span, "B")
	bench(prefix+"heap_per_closed_invoice_bytes", float64(b.heap-a.heap)/span, "B")
	// Pebble's block cache and memtables are bounded by configuration
	// (they fill, then stay), and outside Go's heap: their growth
	// between the two points is part of the RSS slope above.
	bench(prefix+"pebble_cache_per_closed_invoice_bytes", float64(b.pebble-a.pebble)/span, "B")
	bench(prefix+"rss_after_"+countName(n)+"_closed_invoices_mb", float64(b.rss)/(1<<20), "MB")
	bench(prefix+"heap_after_"+countName(n)+"_closed_invoices_mb", float64(b.heap)/(1<<20), "MB")
	bench(prefix+"closed_invoices_per_s", float64(n)/b.elapsed.Seconds(), "1/s")
	// What a closed invoice costs the server, whatever else the machine
	// runs: its CPU time per invoice between the two points.
	bench(prefix+"closed_invoice_server_cpu_ms", float64((b.cpu-a.cpu).Microseconds())/1000/span, "ms")
	return nil
}

// gauges reads the samples of the server's metrics listener at addr
// whose series (name and labels) are in names.
func gauges(addr string, names ...string) (map[string]float64, error) {
	res, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	defer res.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		series, v, ok := strings.Cut(sc.Text(), " ")
		if ok && slices.Contains(names, series) {
			if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
				out[series] = f
			}
		}
	}
	return out, sc.Err()
}

// waitNoInvoiceActors polls the kassa_actors gauge of the server's
// metrics listener at addr until no invoice actor is live.
func (t *target) waitNoInvoiceActors(addr string, within time.Duration) error {
	const live = `kassa_actors{kind="invoice"}`
	deadline := time.Now().Add(within)
	last := "no kassa_actors gauge"
	for {
		g, err := gauges(addr, live)
		if err != nil {
			return err
		}
		if v, ok := g[live]; ok {
			last = fmt.Sprintf("invoice actors live: %v", v)
			if v == 0 {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("invoices still open %v after the last create (%s)", within, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// saveHeap writes the server's heap profile (after a collection) to path.
func (t *target) saveHeap(path string) error {
	res, err := http.Get("http://" + t.debug + "/debug/pprof/heap?gc=1")
	if err != nil {
		return fmt.Errorf("pprof heap: %w", err)
	}
	defer res.Body.Close()
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, res.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// benchRestart opens n invoices, restarts kassa, and reports how long
// the restarted process takes to answer, and its resident memory per
// open invoice before and after the restart (over an empty server's).
func benchRestart(ctx context.Context, n, workers int) error {
	tmp, bin, cleanup, err := workspace("restart")
	if err != nil {
		return err
	}
	defer cleanup()
	// An empty server's memory is the baseline of both per-invoice
	// figures.
	empty, err := startKassa(bin, filepath.Join(tmp, "empty"))
	if err != nil {
		return err
	}
	baseRSS, _, err := empty.memory()
	empty.stop()
	if err != nil {
		return err
	}

	data := filepath.Join(tmp, "data")
	open := []string{"--invoice-expiry", "2h"}
	k, err := startKassa(bin, data, open...)
	if err != nil {
		return err
	}
	storeID, key, err := k.createStore()
	if err != nil {
		k.stop()
		return err
	}
	start := time.Now()
	var one atomic.Value
	if err := k.createMany(n, workers, func(c *http.Client, i int, id string) error { one.Store(id); return nil }); err != nil {
		k.stop()
		return err
	}
	fmt.Fprintf(os.Stderr, "opened %d invoices in %v\n", n, time.Since(start).Round(time.Second))
	steadyRSS, _, err := k.memory()
	k.stop()
	if err != nil {
		return err
	}

	began := time.Now()
	k, err = startKassa(bin, data, open...)
	if err != nil {
		return err
	}
	defer k.stop()
	k.useStore(storeID, key)
	// Ready: health answers (startKassa waited for it) and so does a
	// request that reads an open invoice.
	if _, err := k.status(one.Load().(string)); err != nil {
		return err
	}
	ready := time.Since(began)
	afterRSS, _, err := k.memory()
	if err != nil {
		return err
	}
	name := countName(n)
	bench("restart_ready_s", ready.Seconds(), "s")
	bench("rss_steady_per_open_invoice_bytes", float64(steadyRSS-baseRSS)/float64(n), "B")
	bench("rss_after_restart_per_open_invoice_bytes", float64(afterRSS-baseRSS)/float64(n), "B")
	fmt.Fprintf(os.Stderr, "restart with %s open invoices: RSS empty %d MB, steady %d MB, after restart %d MB\n",
		name, baseRSS>>20, steadyRSS>>20, afterRSS>>20)
	return nil
}
