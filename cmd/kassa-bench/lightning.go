package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/measure"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// benchLightning prints the figures of Kassa on a real lnd (regtest,
// btcd, the service's lnd and a customer's with a channel to it):
//
//   - ln_invoice_create_vs_lnd: Kassa's Lightning invoice creation over
//     HTTP against lnd's own AddInvoice rate, both closed loops at the
//     same concurrency, alternated in the same run (target ≥ 0.9);
//   - ln_machine_cpu_per_lnd_call_us and ln_machine_cpu_per_kassa_create_us:
//     the whole machine's busy time per call of each loop. Both loops
//     keep the machine about equally busy (about three quarters of its
//     cores here: lnd's serial step leaves the rest idle), so the ratio
//     above follows the ratio of these two;
//   - ln_settle_to_webhook_p99_ms: from the customer's payment to the
//     Settled webhook at a local receiver;
//   - with -compare-kassa BIN, ln_invoice_create_compare_vs_kassa: a
//     second server from BIN (another build) on the same lnd, its loop
//     in the same rounds: its rate over this build's, so that a change
//     is measured before and after in one run on a shared machine.
func benchLightning(d time.Duration, workers, rounds, payments int) (err error) {
	t := &harness.Process{}
	defer t.Close()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("lightning bench: %v", r)
		}
	}()
	w := harness.NewWallet(t, harness.ParamsOf("regtest"))
	node := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address(), TxIndex: true})
	node.Mine(103)
	service := harness.StartLnd(t, node, "service")
	customer := harness.StartLnd(t, node, "customer")
	w.Pay(t, node, harness.Output{Address: customer.NewAddress(), Amount: 20_000_000})
	node.Mine(1)
	customer.WaitBalance(20_000_000)
	customer.OpenChannel(service, 16_000_000)
	args := []string{"--chain", node.URL(), "--lightning", service.URL(), "--log-level", "info"}
	debug := os.Getenv("KASSA_BENCH_DEBUG_LISTEN")
	if debug == "" && profileDir != "" {
		if debug, err = harness.FreeAddr(); err != nil {
			return err
		}
	}
	if debug != "" {
		args = append(args, "--debug-listen", debug)
	}
	k := harness.StartKassa(t, "", args...)
	store := k.CreateStore("--name", "Bench")
	// Fees are charged against the store's prepaid balance: credit it
	// enough for any run's invoices, as the create part does, so that
	// a longer -duration does not reach the credit limit (402).
	if _, err := k.CLI("store", "topup", store.StoreID, "--amount", "100000000000", "--reference", "bench"); err != nil {
		return fmt.Errorf("top up the bench store: %w", err)
	}

	kassaCreate := kassaInvoiceCreator(k.URL+"/api/v1/stores/"+store.StoreID+"/invoices", store.APIKey, workers)
	var compareCreate func(context.Context) error
	var compareRatios, compareVsLnd, compareCPU []float64
	// The machine's busy time too: both loops keep it about equally busy
	// (lnd's serial step leaves the rest idle), so the ratio follows
	// the machine's CPU per call of each loop.
	pids := []int{lndCPU: service.Pid(), kassaCPU: k.Pid(), benchLnCPU: 0, machineCPU: machine}
	if compareKassa != "" {
		// The other build, started the same way; both servers watch
		// the same lnd, so each hears of the other's invoices too, alike.
		other := harness.KassaProcess{Bin: compareKassa, Args: append([]string{"--dev"}, args...)}.Start(t)
		otherStore := other.CreateStore("--name", "Bench")
		if _, err := other.CLI("store", "topup", otherStore.StoreID, "--amount", "100000000000", "--reference", "bench"); err != nil {
			return fmt.Errorf("top up the compared server's bench store: %w", err)
		}
		compareCreate = kassaInvoiceCreator(other.URL+"/api/v1/stores/"+otherStore.StoreID+"/invoices", otherStore.APIKey, workers)
		pids = append(pids, other.Pid())
	}
	lndCreate := func(ctx context.Context) error {
		_, err := service.Client.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1_000_000, Memo: "Bench order 42", Expiry: 900})
		return err
	}
	// Each figure is the median of its rounds, the ratio the median of
	// the rounds' ratios (a round's two loops see the same machine).
	// The CPU time per call of lnd, of kassa and of this process (the
	// load generator) tells whose share a gap is: on 2 cores the three
	// compete for the same CPU.
	var kassaRates, lndRates, ratios, lndCPUs, kassaCPUs, lndMachine, kassaMachine []float64
	// As in the create part, each loop's time in a round is cut into
	// createSlices turns taken in turn with the others' (the machine's
	// speed changes from one second to the next); a loop's figures are
	// its turns added up.
	slice := d / createSlices
	// Before each turn the servers settle: Kassa hears of every invoice
	// lnd adds, lnd's own loop's included, and what it has not yet
	// handled must not fall into the next turn.
	var servers []*target
	for _, pid := range pids {
		if pid > 0 {
			servers = append(servers, &target{pid: pid})
		}
	}
	var waited time.Duration
	// turn is closedLoop for one turn, added to a with the work its
	// processes left behind, charged while they settle (loopCharges):
	// Kassa hears of every invoice lnd adds, lnd's own loop's included,
	// and Pebble flushes after Kassa's turn.
	turn := func(fn func(context.Context) error, a *tally) error {
		l, err := closedLoop(fn, workers, slice, pids)
		if err != nil {
			return err
		}
		a.Add(l)
		w, _ := settleCharging(servers, measure.LoopCharges(a, pids))
		waited += w
		return nil
	}
	// runRound runs one round's turns: lnd's loop, this build's and the
	// compared build's (which goes after this build's in odd turns and
	// before it in even ones), with -profile a profile over all of them.
	runRound := func(round int, l, c, o *tally) error {
		wait := profileDuring(debug, fmt.Sprintf("lightning-kassa-%d.pprof", round+1), 3*d+createSlices*time.Second)
		defer wait()
		w, _ := settled(servers...)
		waited += w
		compare := func() error {
			if compareCreate == nil {
				return nil
			}
			if err := turn(compareCreate, o); err != nil {
				return fmt.Errorf("compared kassa's invoice creation: %w", err)
			}
			return nil
		}
		for i := range createSlices {
			if err := turn(lndCreate, l); err != nil {
				return fmt.Errorf("lnd AddInvoice: %w", err)
			}
			if i%2 == 0 {
				if err := compare(); err != nil {
					return err
				}
			}
			if err := turn(kassaCreate, c); err != nil {
				return fmt.Errorf("kassa invoice creation: %w", err)
			}
			if i%2 == 1 {
				if err := compare(); err != nil {
					return err
				}
			}
		}
		return nil
	}
	// us is process i's CPU per call of a, to the microsecond.
	us := func(a tally, i int) time.Duration { return a.Per(i).Round(time.Microsecond) }
	for round := range max(rounds, 1) {
		waited = 0
		var l, c, o tally
		if err := runRound(round, &l, &c, &o); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "round %d (%d turns each, %v waiting for quiet; time charged for the work left behind: lnd's loop %v of %v, kassa's %v of %v)\n",
			round+1, createSlices, waited.Round(time.Millisecond), l.Charged.Round(time.Millisecond), l.Elapsed.Round(time.Millisecond),
			c.Charged.Round(time.Millisecond), c.Elapsed.Round(time.Millisecond))
		fmt.Fprintf(os.Stderr, "round %d: machine busy per call: lnd's loop %v (%.0f%% of the cores), kassa's %v (%.0f%%)\n",
			round+1, us(l, machineCPU), busyShare(l), us(c, machineCPU), busyShare(c))
		fmt.Fprintf(os.Stderr, "round %d: lnd AddInvoice %.0f/s (CPU per call: lnd %v, kassa watching %v, bench %v), "+
			"kassa %.0f/s (CPU per call: lnd %v, kassa %v, bench %v)\n", round+1,
			l.Rate(), us(l, lndCPU), us(l, kassaCPU), us(l, benchLnCPU), c.Rate(), us(c, lndCPU), us(c, kassaCPU), us(c, benchLnCPU))
		if compareCreate != nil {
			fmt.Fprintf(os.Stderr, "round %d: compared kassa %.0f/s (CPU per call: lnd %v, it %v, bench %v; it watching lnd's loop %v), %.3f of lnd's, %.3f of this build's\n",
				round+1, o.Rate(), us(o, lndCPU), us(o, comparedCPU), us(o, benchLnCPU), us(l, comparedCPU), o.Rate()/l.Rate(), o.Rate()/c.Rate())
			compareRatios = append(compareRatios, o.Rate()/c.Rate())
			compareVsLnd = append(compareVsLnd, o.Rate()/l.Rate())
			compareCPU = append(compareCPU, float64(us(o, comparedCPU).Microseconds()))
		}
		lndRates, kassaRates = append(lndRates, l.Rate()), append(kassaRates, c.Rate())
		ratios = append(ratios, c.Rate()/l.Rate())
		lndCPUs = append(lndCPUs, float64(us(l, lndCPU).Microseconds()))
		kassaCPUs = append(kassaCPUs, float64(us(c, kassaCPU).Microseconds()))
		lndMachine = append(lndMachine, float64(us(l, machineCPU).Microseconds()))
		kassaMachine = append(kassaMachine, float64(us(c, machineCPU).Microseconds()))
	}
	bench("ln_invoice_create_kassa_per_s", median(kassaRates), "req/s")
	bench("ln_invoice_create_lnd_per_s", median(lndRates), "req/s")
	bench("ln_invoice_create_vs_lnd", median(ratios), "ratio")
	bench("ln_invoice_create_lnd_cpu_us", median(lndCPUs), "µs/call")
	bench("ln_invoice_create_kassa_cpu_us", median(kassaCPUs), "µs/call")
	bench("ln_machine_cpu_per_lnd_call_us", median(lndMachine), "µs/call")
	bench("ln_machine_cpu_per_kassa_create_us", median(kassaMachine), "µs/call")
	if compareCreate != nil {
		bench("ln_invoice_create_compare_vs_lnd", median(compareVsLnd), "ratio")
		bench("ln_invoice_create_compare_cpu_us", median(compareCPU), "µs/call")
		bench("ln_invoice_create_compare_vs_kassa", median(compareRatios), "ratio")
	}

	hooks := k.ListenWebhooks(store)
	var times []float64
	for i := range payments + 1 {
		var inv struct {
			ID               string `json:"id"`
			LightningInvoice string `json:"lightningInvoice"`
		}
		k.Do("POST", "/api/v1/stores/"+store.StoreID+"/invoices", store.APIKey, map[string]any{
			"amount": 1000 + i, "currency": "SATS", "enabledPaymentMethods": []string{"Lightning"},
		}, &inv)
		k.Do("GET", "/api/v1/stores/"+store.StoreID+"/invoices/"+inv.ID, store.APIKey, nil, &inv)
		start := time.Now()
		if _, err := customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
			return fmt.Errorf("customer pays: %w", err)
		}
		ev := hooks.Wait(inv.ID, "Settled")
		if i == 0 {
			continue // the first payment over a new channel warms it up
		}
		times = append(times, float64(ev.At.Sub(start).Microseconds())/1000)
	}
	slices.Sort(times)
	bench("ln_settle_to_webhook_p50_ms", times[len(times)/2], "ms")
	bench("ln_settle_to_webhook_p99_ms", times[min(len(times)-1, len(times)*99/100)], "ms")
	return nil
}

// compareKassa is -compare-kassa: a second kassa binary for the create
// and lightning parts to measure beside this build (off when empty).
var compareKassa string

// kassaInvoiceCreator creates a Lightning-only invoice of 1,000 sat per
// call over HTTP.
func kassaInvoiceCreator(url, key string, workers int) func(context.Context) error {
	c := newClient(workers)
	body, _ := json.Marshal(map[string]any{"amount": 1000, "currency": "SATS", "orderId": "42", "enabledPaymentMethods": []string{"Lightning"}})
	return func(ctx context.Context) error {
		req, _ := http.NewRequestWithContext(ctx, "POST", url, bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("x-api-key", key)
		res, err := c.Do(req)
		if err != nil {
			return err
		}
		data, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d: %s", res.StatusCode, data)
		}
		return nil
	}
}

// The lightning part's processes in a tally: lnd, this build's Kassa,
// this process (the load generator), the whole machine, and with
// -compare-kassa the other build's Kassa.
const (
	lndCPU = iota
	kassaCPU
	benchLnCPU
	machineCPU
	comparedCPU
)

// busyShare is the share of the machine's cores that a loop kept busy.
func busyShare(a tally) float64 {
	if a.Elapsed <= 0 || len(a.CPU) <= machineCPU {
		return 0
	}
	return 100 * a.CPU[machineCPU].Seconds() / a.Elapsed.Seconds() / float64(runtime.NumCPU())
}

// closedLoop runs fn from workers goroutines for d, after one warm-up
// call each, and returns the calls and the CPU time of each of pids (0:
// this process, machine: the machine) during the measured time.
func closedLoop(fn func(context.Context) error, workers int, d time.Duration, pids []int) (tally, error) {
	ctx := context.Background()
	for range workers {
		if err := fn(ctx); err != nil {
			return tally{}, fmt.Errorf("warm-up: %w", err)
		}
	}
	var done atomic.Int64
	var firstErr atomic.Value
	cpu0 := make([]time.Duration, len(pids))
	for i, pid := range pids {
		cpu0[i] = cpuTime(pid)
	}
	end := time.Now().Add(d)
	start := time.Now()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(end) {
				if err := fn(ctx); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				done.Add(1)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, ok := firstErr.Load().(error); ok {
		return tally{}, err
	}
	l := tally{Done: done.Load(), Answered: done.Load(), Elapsed: elapsed, CPU: make([]time.Duration, len(pids))}
	for i, pid := range pids {
		l.CPU[i] = cpuTime(pid) - cpu0[i]
	}
	return l, nil
}
