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
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
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
// ten settled over Lightning, the rest expired, with a short expiry and
// monitoring window) and reports its resident memory afterwards: memory
// must follow open invoices, not every invoice ever made.
func benchClosed(ctx context.Context, n, workers int) error {
	tmp, err := os.MkdirTemp("", "kassa-bench-closed")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := buildKassa(tmp)
	if err != nil {
		return err
	}
	const expiry, monitoring = 5 * time.Second, time.Second
	k, err := startKassa(bin, filepath.Join(tmp, "data"), "--dev", "--invoice-expiry", expiry.String(), "--monitoring", monitoring.String())
	if err != nil {
		return err
	}
	defer k.stop()
	if _, _, err := k.createStore(); err != nil {
		return err
	}
	start := time.Now()
	var last atomic.Value
	var paid, late atomic.Int64
	err = k.createMany(n, workers, func(c *http.Client, i int, id string) error {
		last.Store(id)
		if i%10 != 0 {
			return nil
		}
		err := k.admin(c, "/admin/v1/sim/pay", `{"invoiceId":"`+id+`","method":"lightning"}`, nil)
		var status *statusError
		if errors.As(err, &status) && status.status == http.StatusConflict {
			// On a loaded machine the invoice may expire before its
			// payment: it is closed either way.
			late.Add(1)
			return nil
		}
		if err == nil {
			paid.Add(1)
		}
		return err
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "created %d invoices (%d paid, %d expired before their payment) in %v\n",
		n, paid.Load(), late.Load(), time.Since(start).Round(time.Second))
	// Wait until the last invoice closed, then for its monitoring window
	// and a sweep to pass.
	lastID := last.Load().(string)
	deadline := time.Now().Add(5 * time.Minute)
	for {
		st, err := k.status(lastID)
		if err != nil {
			return err
		}
		if st == "Expired" || st == "Settled" {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("invoice %s still %s five minutes after the last create", lastID, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	time.Sleep(monitoring + 5*time.Second)
	rss, heap, err := k.memory()
	if err != nil {
		return err
	}
	bench("rss_after_"+countName(n)+"_closed_invoices_mb", float64(rss)/(1<<20), "MB")
	bench("heap_after_"+countName(n)+"_closed_invoices_mb", float64(heap)/(1<<20), "MB")
	return nil
}

// benchRestart opens n invoices, restarts kassa, and reports how long
// the restarted process takes to answer, and its resident memory per
// open invoice before and after the restart (over an empty server's).
func benchRestart(ctx context.Context, n, workers int) error {
	tmp, err := os.MkdirTemp("", "kassa-bench-restart")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	bin, err := buildKassa(tmp)
	if err != nil {
		return err
	}
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
