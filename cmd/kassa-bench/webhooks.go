package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/egress"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
)

// receiver is a local webhook endpoint that counts deliveries and notes
// when each invoice's Settled event arrived.
type receiver struct {
	url       string
	delivered atomic.Int64
	mu        sync.Mutex
	settled   map[string]time.Time
}

func newReceiver() (*receiver, func(), error) {
	r := &receiver{settled: map[string]time.Time{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var e struct{ Type, InvoiceID string }
		if json.Unmarshal(body, &e) == nil && e.Type == "Settled" {
			r.mu.Lock()
			r.settled[e.InvoiceID] = time.Now()
			r.mu.Unlock()
		}
		r.delivered.Add(1)
	})}
	go srv.Serve(ln)
	r.url = "http://" + ln.Addr().String()
	return r, func() { srv.Close() }, nil
}

func (r *receiver) settledAt(id string) (time.Time, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.settled[id]
	return t, ok
}

// benchWebhooks measures fan-out to endpoints webhooks and the time from
// a Lightning settle to its Settled webhook arriving, with durable writes.
func benchWebhooks(ctx context.Context, endpoints int) error {
	dir, err := os.MkdirTemp("", "kassa-bench-webhooks")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		return err
	}
	defer db.Close()
	clock := kassa.SystemClock{}
	node, err := lnsim.New(clock)
	if err != nil {
		return err
	}
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate, cfg.RequireHTTPS = true, false
	sys := actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: chainsim.New(clock), Lightning: node, Rates: rates.Fixed{},
		Webhooks: egress.WebhookClient{Client: egress.New(cfg), App: "Kassa bench"}, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	defer sys.Runtime.Shutdown()
	if err := node.Start(ctx, sys.Service.HandleLightningEvent); err != nil {
		return err
	}
	recv, stop, err := newReceiver()
	if err != nil {
		return err
	}
	defer stop()
	invoice := func(storeID string) (*kassa.Invoice, error) {
		return sys.Service.CreateInvoice(ctx, storeID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true,
			Currency: kassa.SATS, EnabledMethods: []kassa.PaymentMethod{kassa.MethodLightning}})
	}

	// Fan-out: the endpoints are spread over stores of
	// kassa.MaxWebhooksPerStore each; every invoice event of a store goes
	// to each of its endpoints.
	var stores []string
	newOnly := []kassa.EventType{kassa.EventNew}
	for i := 0; i < endpoints; i++ {
		if i%kassa.MaxWebhooksPerStore == 0 {
			st, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: fmt.Sprint("Fan-out ", i), Currency: kassa.EUR})
			if err != nil {
				return err
			}
			stores = append(stores, st.ID)
		}
		url := fmt.Sprintf("%s/fan/%d", recv.url, i)
		if _, err := sys.Service.CreateWebhook(ctx, stores[len(stores)-1], &kassa.WebhookInput{URL: url, Events: newOnly, EventsGiven: true}); err != nil {
			return fmt.Errorf("register webhook %d: %w", i, err)
		}
	}
	recv.delivered.Store(0)
	const perStore = 10
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, len(stores))
	for _, st := range stores {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < perStore; i++ {
				if _, err := invoice(st); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	want := int64(perStore * endpoints)
	deadline := time.Now().Add(5 * time.Minute)
	for recv.delivered.Load() < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("fan-out: %d of %d deliveries arrived", recv.delivered.Load(), want)
		}
		time.Sleep(5 * time.Millisecond)
	}
	bench("webhook_deliveries_per_s", float64(want)/time.Since(start).Seconds(), "deliveries/s")

	// Settle to delivery: one endpoint, Settled only.
	one, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Latency", Currency: kassa.EUR})
	if err != nil {
		return err
	}
	if _, err := sys.Service.CreateWebhook(ctx, one.ID, &kassa.WebhookInput{URL: recv.url + "/settled", Events: []kassa.EventType{kassa.EventSettled}, EventsGiven: true}); err != nil {
		return err
	}
	var lat []time.Duration
	for i := 0; i < 300; i++ {
		inv, err := invoice(one.ID)
		if err != nil {
			return err
		}
		t0 := time.Now()
		if _, err := node.Pay(ctx, inv.LightningInvoice, 0); err != nil {
			return err
		}
		for {
			if at, ok := recv.settledAt(inv.ID); ok {
				lat = append(lat, at.Sub(t0))
				break
			}
			if time.Since(t0) > 10*time.Second {
				return fmt.Errorf("settled webhook of %s never arrived", inv.ID)
			}
			time.Sleep(100 * time.Microsecond)
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	bench("webhook_settle_to_delivery_p50_ms", float64(lat[len(lat)/2].Microseconds())/1000, "ms")
	bench("webhook_settle_to_delivery_p99_ms", float64(lat[len(lat)*99/100].Microseconds())/1000, "ms")
	return nil
}
