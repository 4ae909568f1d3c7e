package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/measure"
	"github.com/kassapay/kassa/kassatest/harness"
)

// target is a server under load: its create-invoice URL and API key.
type target struct {
	name, url, key string
	stop           func()
	// For a kassa process: its base URL, admin token, process id and the
	// pprof address (to force a collection before reading its RSS).
	base, token, debug string
	pid                int
	// client is the load generator's client of the closed loops,
	// kept from one turn to the next.
	client *http.Client
	// body, when set, makes each create's body (invoiceBody otherwise).
	body func() []byte
}

func waitHTTP(url string) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		res, err := http.Get(url)
		if err == nil {
			res.Body.Close()
			return nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("%s did not come up", url)
}

func startProcess(name string, args ...string) (func(), int, error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout = io.Discard
	// The server's log goes to a file, not among the BENCH lines (a
	// cluster's nodes log their reconnects to a killed peer by the
	// dozen); its tail is kept when it stops and printed if the part
	// fails (printLogTails).
	log, err := os.CreateTemp("", "kassa-bench-*.log")
	if err != nil {
		return nil, 0, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		log.Close()
		os.Remove(log.Name())
		return nil, 0, err
	}
	label := fmt.Sprintf("%s (pid %d)", filepath.Base(name), cmd.Process.Pid)
	return func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
		keepLogTail(label, log)
	}, cmd.Process.Pid, nil
}

// logTailBytes is how much of a stopped server's log a failed part
// prints.
const logTailBytes = 4 << 10

var (
	tailsMu sync.Mutex
	tails   []string // the log tails of the servers the current part stopped
)

// keepLogTail keeps the end of a stopped server's log for
// printLogTails, then removes the file.
func keepLogTail(label string, f *os.File) {
	defer os.Remove(f.Name())
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil || end == 0 {
		return
	}
	from := max(end-logTailBytes, 0)
	buf := make([]byte, end-from)
	if _, err := f.ReadAt(buf, from); err != nil && err != io.EOF {
		return
	}
	tailsMu.Lock()
	tails = append(tails, fmt.Sprintf("--- %s, last %d bytes of its log:\n%s", label, len(buf), buf))
	tailsMu.Unlock()
}

// takeLogTails returns and forgets the log tails kept so far.
func takeLogTails() []string {
	tailsMu.Lock()
	defer tailsMu.Unlock()
	t := tails
	tails = nil
	return t
}

// startFloor starts a floor process: bare, or with -work the required
// work of an invoice creation.
func startFloor(tmp string, work bool) (*target, error) {
	addr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	debug, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	name, args := "floor", []string{"floor", "-data", filepath.Join(tmp, "floor"), "-listen", addr, "-debug-listen", debug}
	if work {
		name, args = "work floor", []string{"floor", "-work", "-data", filepath.Join(tmp, "work-floor"), "-listen", addr, "-debug-listen", debug}
	}
	stop, pid, err := startProcess(self, args...)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP("http://" + addr + "/"); err != nil {
		stop()
		return nil, err
	}
	return &target{name: name, url: "http://" + addr + "/api/v1/stores/floor/invoices", stop: stop, debug: debug, pid: pid}, nil
}

var (
	buildMu  sync.Mutex
	buildDir string // holds the kassa binary once built
)

// workspace is every part's preamble: a temporary directory named
// after the part, which cleanup removes, and the kassa binary, built once
// per run into a directory of its own (cleanupBuild removes it): every
// part runs the same binary.
func workspace(part string) (tmp, bin string, cleanup func(), err error) {
	tmp, err = os.MkdirTemp("", "kassa-bench-"+part)
	if err != nil {
		return "", "", nil, err
	}
	cleanup = func() { os.RemoveAll(tmp) }
	if bin, err = buildKassa(); err != nil {
		cleanup()
		return "", "", nil, err
	}
	return tmp, bin, cleanup, nil
}

// buildKassa builds the kassa binary once per run and returns its path.
func buildKassa() (string, error) {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		return filepath.Join(buildDir, "kassa"), nil
	}
	dir, err := os.MkdirTemp("", "kassa-bench-bin")
	if err != nil {
		return "", err
	}
	bin, err := harness.BuildKassa(dir, false)
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("build kassa: %w", err)
	}
	buildDir = dir
	return bin, nil
}

// cleanupBuild removes the binary buildKassa built.
func cleanupBuild() {
	buildMu.Lock()
	defer buildMu.Unlock()
	if buildDir != "" {
		os.RemoveAll(buildDir)
		buildDir = ""
	}
}

// startKassa starts `kassa serve` on data with extra flags and waits
// until its health check answers. The target has no store yet.
func startKassa(bin, data string, extra ...string) (*target, error) {
	addr, err := harness.FreeAddr()
	if err != nil {
		return nil, err
	}
	debugAddr := os.Getenv("KASSA_BENCH_DEBUG_LISTEN")
	if debugAddr == "" {
		if debugAddr, err = harness.FreeAddr(); err != nil {
			return nil, err
		}
	}
	args := append([]string{"serve", "--data", data, "--listen", addr, "--rate-limit", "0", "--log-level", "warn",
		"--debug-listen", debugAddr}, extra...)
	if !slices.Contains(extra, "--dev") {
		// Outside --dev kassa serve simulates only when told to.
		args = append(args, "--chain", "sim", "--lightning", "sim")
	}
	stop, pid, err := startProcess(bin, args...)
	if err != nil {
		return nil, err
	}
	base := "http://" + addr
	if err := waitHTTP(base + "/api/v1/health"); err != nil {
		stop()
		return nil, err
	}
	token, err := os.ReadFile(filepath.Join(data, "admin.token"))
	if err != nil {
		stop()
		return nil, err
	}
	return &target{name: "kassa", stop: stop, base: base, token: strings.TrimSpace(string(token)), debug: debugAddr, pid: pid}, nil
}

// admin calls the admin API of a kassa target and decodes the answer
// into out (nil: discard).
func (t *target) admin(c *http.Client, path string, body string, out any) error {
	req, _ := http.NewRequest("POST", t.base+path, strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Content-Type", "application/json")
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return err
	}
	if res.StatusCode != 200 {
		return &statusError{path: path, status: res.StatusCode, body: string(data)}
	}
	if out == nil {
		return nil
	}
	return json.Unmarshal(data, out)
}

// useStore points the target's creates at store id with key.
func (t *target) useStore(id, key string) {
	t.url, t.key = t.base+"/api/v1/stores/"+id+"/invoices", key
}

// createStore creates the bench store and points the target at it.
func (t *target) createStore() (id, key string, err error) {
	var creds struct{ StoreID, APIKey string }
	if err := t.admin(http.DefaultClient, "/admin/v1/stores", `{"name":"Bench","currency":"EUR","percentFee":1}`, &creds); err != nil || creds.APIKey == "" {
		return "", "", fmt.Errorf("create bench store: %v", err)
	}
	// A million invoices at a 1% fee need a prepaid balance.
	if err := t.admin(http.DefaultClient, "/admin/v1/stores/"+creds.StoreID+"/topup", `{"amount":100000000000}`, nil); err != nil {
		return "", "", fmt.Errorf("top up bench store: %v", err)
	}
	t.useStore(creds.StoreID, creds.APIKey)
	return creds.StoreID, creds.APIKey, nil
}

var invoiceBody = []byte(`{"amount":"12.50","currency":"EUR","orderId":"bench","metadata":{"sku":"A1"}}`)

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute,
	}}
}

func (t *target) create(c *http.Client) error {
	_, err := t.createID(c)
	return err
}

// createID creates an invoice and returns its id (empty from a floor
// that answers none).
func (t *target) createID(c *http.Client) (string, error) {
	body := invoiceBody
	if t.body != nil {
		body = t.body()
	}
	req, _ := http.NewRequest("POST", t.url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if t.key != "" {
		req.Header.Set("x-api-key", t.key)
	}
	res, err := c.Do(req)
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	if res.StatusCode != 200 {
		io.Copy(io.Discard, res.Body)
		return "", fmt.Errorf("status %d", res.StatusCode)
	}
	var created struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&created); err != nil {
		return "", err
	}
	io.Copy(io.Discard, res.Body)
	return created.ID, nil
}

// peak runs a closed loop of workers for d and returns requests per second.
func (t *target) peak(workers int, d time.Duration) (float64, error) {
	r, _, err := t.peakCount(workers, d)
	return r, err
}

// The closed loops' tallies and the work charged to them are measure's;
// serverCPU and benchCPU are the create part's processes in a tally.
type (
	tally  = measure.Tally
	charge = measure.Charge
)

const (
	serverCPU = measure.ServerCPU
	benchCPU  = measure.BenchCPU
)

// slot is a server's place in a round: the server and its tally.
type slot struct {
	t *target
	a *tally
}

// turn runs a closed loop of workers on t for d and adds it to a.
func (t *target) turn(workers int, d time.Duration, a *tally) error {
	server, bench := t.cpu(), cpuTime(0)
	done, elapsed, err := t.run(workers, d)
	if err != nil {
		return err
	}
	a.Add(tally{Done: int64(done), Answered: int64(done + workers), Elapsed: elapsed,
		CPU: []time.Duration{serverCPU: t.cpu() - server, benchCPU: cpuTime(0) - bench}})
	return nil
}

// peakCount is peak that also returns how many requests were answered,
// the warm-up's included, for the CPU per request.
func (t *target) peakCount(workers int, d time.Duration) (float64, int, error) {
	done, elapsed, err := t.run(workers, d)
	if err != nil {
		return 0, 0, err
	}
	return float64(done) / elapsed.Seconds(), done + workers, nil
}

// run warms t up with one create per worker, then runs a closed loop of
// workers for d: the creates answered in it and its time.
func (t *target) run(workers int, d time.Duration) (int, time.Duration, error) {
	if t.client == nil {
		t.client = newClient(workers)
	}
	c := t.client
	// Warm up connections and caches.
	for i := 0; i < workers; i++ {
		if err := t.create(c); err != nil {
			return 0, 0, fmt.Errorf("%s warm-up: %w", t.name, err)
		}
	}
	var done atomic.Int64
	var firstErr atomic.Value
	end := time.Now().Add(d)
	start := time.Now()
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
		return 0, 0, fmt.Errorf("%s: %w", t.name, err)
	}
	return int(done.Load()), time.Since(start), nil
}

// latency sends requests at rate per second for d (an open loop) and
// returns the 99th percentile latency.
func (t *target) latency(rate float64, d time.Duration) (time.Duration, error) {
	c := newClient(256)
	interval := time.Duration(float64(time.Second) / rate)
	var mu sync.Mutex
	var lat []time.Duration
	var failures atomic.Int64
	var wg sync.WaitGroup
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	tick := time.NewTicker(interval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			wg.Add(1)
			go func() {
				defer wg.Done()
				start := time.Now()
				if err := t.create(c); err != nil {
					failures.Add(1)
					return
				}
				mu.Lock()
				lat = append(lat, time.Since(start))
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if failures.Load() > 0 {
		return 0, fmt.Errorf("%s: %d failed requests in the open loop", t.name, failures.Load())
	}
	if len(lat) == 0 {
		return 0, fmt.Errorf("%s: no request completed", t.name)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	return lat[len(lat)*99/100], nil
}

// benchCreate measures the peak create rate of the bare floor, the work
// floor and Kassa. The three processes run side by side; in each round
// every one takes createSlices turns of d/createSlices, in turn with the
// others, after they are all quiet, so that a machine whose speed
// changes during the run weighs on all three alike. Each figure is the
// median of its rounds, and each ratio the median of the rounds' ratios.
func benchCreate(ctx context.Context, d time.Duration, workers, rounds int) error {
	tmp, bin, cleanup, err := workspace("create")
	if err != nil {
		return err
	}
	defer cleanup()
	floor, err := startFloor(tmp, false)
	if err != nil {
		return err
	}
	defer floor.stop()
	work, err := startFloor(tmp, true)
	if err != nil {
		return err
	}
	defer work.stop()
	kassa, err := startKassa(bin, filepath.Join(tmp, "kassa-data"))
	if err != nil {
		return err
	}
	defer kassa.stop()
	if _, _, err := kassa.createStore(); err != nil {
		return err
	}
	// With -compare-kassa, the other build beside this one, measured
	// in the same rounds: its rate over this build's.
	var other *target
	if compareKassa != "" {
		if other, err = startKassa(compareKassa, filepath.Join(tmp, "compared-kassa-data")); err != nil {
			return fmt.Errorf("compared kassa: %w", err)
		}
		defer other.stop()
		if _, _, err := other.createStore(); err != nil {
			return fmt.Errorf("compared kassa: %w", err)
		}
	}
	var floorRates, workRates, rates, vsFloor, vsWork, vsCompared []float64
	slice := d / createSlices
	for r := 0; r < max(rounds, 1); r++ {
		var f, w, k, o tally
		turns := []slot{{floor, &f}, {work, &w}, {kassa, &k}}
		// The servers that settle between turns, each charged its work.
		settling := turns
		if other != nil {
			settling = append(turns[:len(turns):len(turns)], slot{other, &o})
		}
		// With -profile, each of the two servers compared is profiled
		// over the whole round, its turns and the others'.
		roundLen := time.Duration(len(turns)+1)*(d+createSlices*2*quietWindow) + time.Second
		var waited, used time.Duration
		runRound := func() error {
			defer profileDuring(work.debug, fmt.Sprintf("create-work-floor-%d.pprof", r+1), roundLen)()
			defer profileDuring(kassa.debug, fmt.Sprintf("create-kassa-%d.pprof", r+1), roundLen)()
			for i := range createSlices {
				order := turns
				if other != nil {
					// The compared build runs before this one in
					// even turns and after it in odd ones.
					order = append(order[:2:2], turns[2], turns[2])
					order[2+i%2].t, order[2+i%2].a = other, &o
				}
				for _, t := range order {
					wt, u := settleCharged(settling)
					waited, used = waited+wt, used+u
					if err := t.t.turn(workers, slice, t.a); err != nil {
						return err
					}
				}
			}
			return nil
		}
		if err := runRound(); err != nil {
			return err
		}
		fp, wp, kp := f.Phase(), w.Phase(), k.Phase()
		fmt.Fprintf(os.Stderr, "round %d (%d turns each, %v waiting for quiet, %v CPU meanwhile): floor %v\n  work floor %v\n  kassa %v: %.3f of the work floor's\n",
			r+1, createSlices, waited.Round(time.Millisecond), used, fp, wp, kp, kp.Rate/wp.Rate)
		if other != nil {
			op := o.Phase()
			fmt.Fprintf(os.Stderr, "  compared kassa %v: %.3f of this build's\n", op, op.Rate/kp.Rate)
			vsCompared = append(vsCompared, op.Rate/kp.Rate)
		}
		floorRates, workRates, rates = append(floorRates, fp.Rate), append(workRates, wp.Rate), append(rates, kp.Rate)
		vsFloor, vsWork = append(vsFloor, kp.Rate/fp.Rate), append(vsWork, kp.Rate/wp.Rate)
	}
	rate := median(rates)
	// With -profile, a runtime trace of each server over its latency
	// phase (go tool trace: GC, scheduling, blocking on the disk).
	wait := traceDuring(kassa.debug, "create-kassa-latency.trace", d)
	p99, err := kassa.latency(rate/2, d)
	wait()
	if err != nil {
		return err
	}
	// The work floor at the same rate: the tail that the machine and
	// the load generator give any server doing a create's required work
	// (a synced write, a signature, two QR codes), against which
	// Kassa's own share of the tail shows.
	wait = traceDuring(work.debug, "create-work-floor-latency.trace", d)
	workP99, err := work.latency(rate/2, d)
	wait()
	if err != nil {
		return err
	}
	bench("invoice_create_per_s", rate, "req/s")
	bench("floor_per_s", median(floorRates), "req/s")
	bench("work_floor_per_s", median(workRates), "req/s")
	bench("invoice_create_vs_floor", median(vsFloor), "ratio")
	bench("invoice_create_vs_work_floor", median(vsWork), "ratio")
	bench("invoice_create_p99_ms", float64(p99.Microseconds())/1000, "ms")
	if other != nil {
		bench("invoice_create_compare_vs_kassa", median(vsCompared), "ratio")
	}
	bench("work_floor_p99_ms", float64(workP99.Microseconds())/1000, "ms")
	return nil
}

// createSlices is how many turns each server takes in a round of the
// create part: its time d is cut into that many turns, taken one after
// the other with the other servers'. On a shared machine whose speed
// changes from one second to the next (the load generator's own CPU per
// create moved by a third between two phases a few seconds apart), a
// server measured for d at once could see another machine than the one
// it is compared with; turns of d/createSlices see nearly the same.
const createSlices = 6

// Between two measured phases the servers settle: a server keeps
// working after its load stops (Pebble flushes and compacts what the
// phase wrote), and that work must not fall into the next server's
// phase. settled waits until the servers together use less than
// quietShare of a core over a quietWindow, at most quietMax.
const (
	quietWindow = 300 * time.Millisecond
	quietShare  = 0.1
	quietMax    = 20 * time.Second
)

// settled waits until the processes of ts are quiet and returns how long
// it waited and the CPU time they used meanwhile.
func settled(ts ...*target) (waited, used time.Duration) {
	sum := func() (d time.Duration) {
		for _, t := range ts {
			if t != nil && t.pid != 0 {
				d += t.cpu()
			}
		}
		return d
	}
	start, first := time.Now(), sum()
	last := first
	for time.Since(start) < quietMax {
		time.Sleep(quietWindow)
		now := sum()
		if float64(now-last) < quietShare*float64(quietWindow) {
			return time.Since(start), now - first
		}
		last = now
	}
	return time.Since(start), last - first
}

// settleCharged waits for the servers of slots to be quiet, and charges
// each the work it did meanwhile: what a server defers after its turn
// (flushes, compactions) is its own cost.
func settleCharged(slots []slot) (waited, used time.Duration) {
	cs, ts := slotCharges(slots)
	return settleCharging(ts, cs)
}

// slotCharges are the charges of the servers of slots, each to its own
// tally (measure.ServerCharge), and the servers.
func slotCharges(slots []slot) (cs []charge, ts []*target) {
	for _, t := range slots {
		cs = append(cs, measure.ServerCharge(t.t.pid, t.a))
		ts = append(ts, t.t)
	}
	return cs, ts
}

// settleCharging waits for servers to be quiet (settled) and charges
// each of cs with what its process did meanwhile.
func settleCharging(servers []*target, cs []charge) (waited, used time.Duration) {
	return measure.Charging(cs, func() (time.Duration, time.Duration) { return settled(servers...) })
}

// median returns the middle value of xs (the mean of the middle two of
// an even count).
func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func jsonDecode(r io.Reader, v any) error { return json.NewDecoder(r).Decode(v) }

// statusError is an admin call answered with another status than 200.
type statusError struct {
	path   string
	status int
	body   string
}

func (e *statusError) Error() string { return fmt.Sprintf("%s: %d %s", e.path, e.status, e.body) }
