package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
)

func heapInUse() uint64 {
	runtime.GC()
	debug.FreeOSMemory()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse
}

// settledHeap is the heap in use once it stops shrinking: actors that
// passivate stop after their create has answered, and the store actor
// may still be working through their stops.
func settledHeap() uint64 {
	h := heapInUse()
	for range 40 {
		time.Sleep(250 * time.Millisecond)
		next := heapInUse()
		if next+next/100 >= h {
			return min(h, next)
		}
		h = next
	}
	return h
}

// benchMemory reports the heap an open invoice takes, per invoice: n
// invoices due within two minutes, each a resident actor with its expiry
// timer (bytes_per_open_invoice), then n invoices due in an hour, whose
// actors passivate at once until the sweeper wakes them
// (bytes_per_open_invoice_far).
func benchMemory(ctx context.Context, n int) error {
	if err := benchOpenInvoices(ctx, n, time.Minute, "bytes_per_open_invoice"); err != nil {
		return err
	}
	return benchOpenInvoices(ctx, n, time.Hour, "bytes_per_open_invoice_far")
}

// benchOpenInvoices opens n invoices expiring after expiry on a clock
// that does not move (none expires while they are made), and reports
// the heap they take, per invoice, as figure.
func benchOpenInvoices(ctx context.Context, n int, expiry time.Duration, figure string) error {
	dir, err := os.MkdirTemp("", "kassa-bench-mem")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	// Durability is not what this measures: skip fsync so 100 000
	// creates take seconds.
	db, err := persistence.Open(dir, persistence.Options{NoSync: true})
	if err != nil {
		return err
	}
	defer db.Close()
	clock := kassatest.NewTestClock(time.Now())
	node, err := lnsim.New(clock)
	if err != nil {
		return err
	}
	sys := actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: chainsim.New(clock), Lightning: node, Rates: rates.Fixed{},
		Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), InvoiceExpiry: expiry,
	})
	defer sys.Runtime.Shutdown()
	st, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Mem", Currency: kassa.EUR})
	if err != nil {
		return err
	}
	req := func(i int) *kassa.InvoiceRequest {
		return &kassa.InvoiceRequest{Amount: decimal.New(int64(1000+i), -2), HasAmount: true, Currency: kassa.EUR,
			OrderID: fmt.Sprint(i), EnabledMethods: []kassa.PaymentMethod{kassa.MethodOnchain, kassa.MethodLightning}}
	}
	// Warm up everything that is allocated once.
	for i := 0; i < 1000; i++ {
		if _, err := sys.Service.CreateInvoice(ctx, st.ID, req(i)); err != nil {
			return err
		}
	}
	before := settledHeap()
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				if _, err := sys.Service.CreateInvoice(ctx, st.ID, req(i)); err != nil {
					errs <- err
					return
				}
			}
		}(w)
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	after := settledHeap()
	fmt.Fprintf(os.Stderr, "opened %d invoices expiring in %v in %v\n", n, expiry, time.Since(start).Round(time.Millisecond))
	bench(figure, float64(after-before)/float64(n), "B")
	return nil
}
