package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// target is a server under load: its create-invoice URL and API key.
type target struct {
	name, url, key string
	stop           func()
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
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

func startProcess(name string, args ...string) (func(), error) {
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = io.Discard, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }, nil
}

func startFloor(tmp string) (*target, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	stop, err := startProcess(self, "floor", "-data", filepath.Join(tmp, "floor"), "-listen", addr)
	if err != nil {
		return nil, err
	}
	if err := waitHTTP("http://" + addr + "/"); err != nil {
		stop()
		return nil, err
	}
	return &target{name: "floor", url: "http://" + addr + "/api/v1/stores/floor/invoices", stop: stop}, nil
}

func startKassa(tmp string) (*target, error) {
	bin := filepath.Join(tmp, "kassa")
	build := exec.Command("go", "build", "-o", bin, "./cmd/kassa")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return nil, fmt.Errorf("build kassa: %w", err)
	}
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	data := filepath.Join(tmp, "kassa-data")
	args := []string{"serve", "--data", data, "--listen", addr, "--rate-limit", "0", "--log-level", "warn"}
	if debug := os.Getenv("KASSA_BENCH_DEBUG_LISTEN"); debug != "" {
		args = append(args, "--debug-listen", debug)
	}
	stop, err := startProcess(bin, args...)
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
	req, _ := http.NewRequest("POST", base+"/admin/v1/stores", strings.NewReader(`{"name":"Bench","currency":"EUR","percentFee":1}`))
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		stop()
		return nil, err
	}
	defer res.Body.Close()
	var creds struct{ StoreID, APIKey string }
	if err := json.NewDecoder(res.Body).Decode(&creds); err != nil || creds.APIKey == "" {
		stop()
		return nil, fmt.Errorf("create bench store: %d %v", res.StatusCode, err)
	}
	return &target{name: "kassa", url: base + "/api/v1/stores/" + creds.StoreID + "/invoices", key: creds.APIKey, stop: stop}, nil
}

var invoiceBody = []byte(`{"amount":"12.50","currency":"EUR","orderId":"bench","metadata":{"sku":"A1"}}`)

func newClient(conns int) *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		MaxIdleConns: conns * 2, MaxIdleConnsPerHost: conns * 2, IdleConnTimeout: time.Minute,
	}}
}

func (t *target) create(c *http.Client) error {
	req, _ := http.NewRequest("POST", t.url, bytes.NewReader(invoiceBody))
	req.Header.Set("Content-Type", "application/json")
	if t.key != "" {
		req.Header.Set("x-api-key", t.key)
	}
	res, err := c.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("status %d", res.StatusCode)
	}
	return nil
}

// peak runs a closed loop of workers for d and returns requests per second.
func (t *target) peak(workers int, d time.Duration) (float64, error) {
	c := newClient(workers)
	// Warm up connections and caches.
	for i := 0; i < workers; i++ {
		if err := t.create(c); err != nil {
			return 0, fmt.Errorf("%s warm-up: %w", t.name, err)
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
		return 0, fmt.Errorf("%s: %w", t.name, err)
	}
	return float64(done.Load()) / time.Since(start).Seconds(), nil
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

func benchCreate(ctx context.Context, d time.Duration, workers int) error {
	tmp, err := os.MkdirTemp("", "kassa-bench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	floor, err := startFloor(tmp)
	if err != nil {
		return err
	}
	floorRate, err := floor.peak(workers, d)
	floor.stop()
	if err != nil {
		return err
	}
	kassa, err := startKassa(tmp)
	if err != nil {
		return err
	}
	defer kassa.stop()
	rate, err := kassa.peak(workers, d)
	if err != nil {
		return err
	}
	p99, err := kassa.latency(rate/2, d)
	if err != nil {
		return err
	}
	bench("invoice_create_per_s", rate, "req/s")
	bench("floor_per_s", floorRate, "req/s")
	bench("invoice_create_vs_floor", rate/floorRate, "ratio")
	bench("invoice_create_p99_ms", float64(p99.Microseconds())/1000, "ms")
	return nil
}
