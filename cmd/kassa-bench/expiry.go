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
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"
)

// The expiry part measures how late the Expired webhooks of a burst of
// expiries arrive: a store's invoices, made as fast as the server takes
// them so that they fall due within a second or two of each other, and
// one webhook endpoint (answering at once) that takes only Expired
// events; each delivery's lateness is its arrival less its invoice's
// expiry time.

// expiryInvoiceLife is the invoices' expiry: long enough to make them
// all before the first falls due.
const expiryInvoiceLife = 40 * time.Second

func benchExpiry(ctx context.Context, n, workers int) error {
	tmp, bin, cleanup, err := workspace("expiry")
	if err != nil {
		return err
	}
	defer cleanup()
	flags := []string{"--dev", "--invoice-expiry", expiryInvoiceLife.String()}
	k, err := startKassa(bin, filepath.Join(tmp, "single"), flags...)
	if err != nil {
		return err
	}
	err = expireBurst(k, "", n, workers)
	k.stop()
	if err != nil {
		return err
	}

	// The same on a one-node cluster over PostgreSQL, where each
	// delivery is claimed before it is sent.
	pg, et, stop, err := startShared(ctx)
	if err != nil {
		return err
	}
	defer stop()
	dsn, err := pg.NewSchema(ctx)
	if err != nil {
		return err
	}
	if k, err = startClusterNode(bin, filepath.Join(tmp, "cluster"), dsn, et.ClusterURL(), flags...); err != nil {
		return err
	}
	defer k.stop()
	return expireBurst(k, "cluster_", n, workers)
}

// expireBurst makes n invoices on k as fast as it takes them, with a
// webhook for their Expired events, and prints the figures of their
// lateness, named with prefix.
func expireBurst(k *target, prefix string, n, workers int) error {
	storeID, key, err := k.createStore()
	if err != nil {
		return err
	}
	rec, stop, err := newExpiryReceiver()
	if err != nil {
		return err
	}
	defer stop()
	body, _ := json.Marshal(map[string]any{"url": rec.url, "events": []string{"Expired"}})
	req, _ := http.NewRequest("POST", k.base+"/api/v1/stores/"+storeID+"/webhooks", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", key)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		return fmt.Errorf("create webhook: status %d", res.StatusCode)
	}

	var mu sync.Mutex
	due := make(map[string]time.Time, n)
	c := newClient(workers)
	var next atomic.Int64
	var firstErr atomic.Value
	var wg sync.WaitGroup
	start := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for int(next.Add(1)) <= n && firstErr.Load() == nil {
				id, expires, err := createExpiring(c, k)
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
				mu.Lock()
				due[id] = expires
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return err
	}
	made := time.Since(start)
	fmt.Fprintf(os.Stderr, "expiry: %s%d invoices made in %v, all due within %v of each other\n", prefix, n, made.Round(time.Millisecond), made.Round(time.Millisecond))
	if made > expiryInvoiceLife/2 {
		return fmt.Errorf("making %d invoices took %v: they do not expire in one burst", n, made)
	}

	deadline := time.Now().Add(expiryInvoiceLife + 3*time.Minute)
	for rec.count() < n && time.Now().Before(deadline) {
		time.Sleep(200 * time.Millisecond)
	}
	var late []time.Duration
	missing := 0
	for id, at := range due {
		got, ok := rec.at(id)
		if !ok {
			missing++
			continue
		}
		late = append(late, got.Sub(at))
	}
	if missing > 0 {
		return fmt.Errorf("%d of %d Expired webhooks did not arrive within %v of the deadlines", missing, n, 3*time.Minute)
	}
	s := func(d time.Duration) float64 { return d.Seconds() }
	bench(prefix+"expired_webhook_late_p50_s", s(percentile(late, 0.5)), "s")
	bench(prefix+"expired_webhook_late_p99_s", s(percentile(late, 0.99)), "s")
	bench(prefix+"expired_webhook_late_max_s", s(percentile(late, 1)), "s")
	return nil
}

// createExpiring creates one invoice and returns its id and expiry: no
// later than expiryInvoiceLife after the request was sent (the server
// stamps its creation between the request and the answer), so a
// lateness read from it is never less than the real one.
func createExpiring(c *http.Client, k *target) (string, time.Time, error) {
	sent := time.Now()
	req, _ := http.NewRequest("POST", k.url, bytes.NewReader(invoiceBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-api-key", k.key)
	res, err := c.Do(req)
	if err != nil {
		return "", time.Time{}, err
	}
	defer res.Body.Close()
	var inv struct {
		ID string `json:"id"`
	}
	if err := json.NewDecoder(res.Body).Decode(&inv); err != nil || res.StatusCode != 200 || inv.ID == "" {
		return "", time.Time{}, fmt.Errorf("create: status %d, %v", res.StatusCode, err)
	}
	io.Copy(io.Discard, res.Body)
	return inv.ID, sent.Add(expiryInvoiceLife), nil
}

// expiryReceiver is a webhook endpoint that notes when each invoice's
// first Expired event arrived and answers at once.
type expiryReceiver struct {
	url     string
	mu      sync.Mutex
	arrived map[string]time.Time
}

func newExpiryReceiver() (*expiryReceiver, func(), error) {
	r := &expiryReceiver{arrived: map[string]time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		now := time.Now()
		body, _ := io.ReadAll(req.Body)
		var e struct{ Type, InvoiceID string }
		if json.Unmarshal(body, &e) == nil && e.Type == "Expired" {
			r.mu.Lock()
			if _, seen := r.arrived[e.InvoiceID]; !seen {
				r.arrived[e.InvoiceID] = now
			}
			r.mu.Unlock()
		}
	})}
	go srv.Serve(ln)
	r.url = "http://" + ln.Addr().String() + "/hook"
	return r, func() { srv.Close() }, nil
}

func (r *expiryReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.arrived)
}

func (r *expiryReceiver) at(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.arrived[id]
	return t, ok
}
