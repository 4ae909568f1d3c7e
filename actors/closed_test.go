package actors

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"weak"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestClosedInvoicesLeaveNothingBehind creates many invoices over
// in-memory Pebble, all open at once, and closes them (one in ten
// settled over Lightning, the others expired and their monitoring
// ended). Then nothing may hold them: no invoice actor instance is still
// reachable (a weak pointer to each one made), the store actor keeps no
// entry for them, and neither protoactor's process registry nor the
// store's children do.
func TestClosedInvoicesLeaveNothingBehind(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Monitoring = time.Minute })
	h.runSweeper()
	// Record every invoice actor instance the system makes.
	var mu sync.Mutex
	var made []weak.Pointer[invoiceActor]
	h.sys.Runtime.storeP.invoiceProps = actor.PropsFromProducer(func() actor.Actor {
		a := &invoiceActor{p: h.sys.Runtime.invoicePorts()}
		mu.Lock()
		made = append(made, weak.Make(a))
		mu.Unlock()
		return a
	}, h.sys.Runtime.stats.invoice.props()...)
	h.createStore("1", "0")
	if _, err := h.sys.Service.TopUp(context.Background(), h.store.ID, 100_000_000, ""); err != nil {
		t.Fatal(err)
	}

	// The fast tier (-short) checks the same with fewer invoices; make
	// test runs all 1000, eight creators at once.
	n := 1000
	if testing.Short() {
		n = 200
	}
	ids := make([]string, n)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 8 {
				inv, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
					Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS,
				})
				if err != nil {
					t.Error(err)
					return
				}
				if i%10 == 0 {
					h.payLightning(inv, 1000)
				}
				ids[i] = inv.ID
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Expire the rest, then end monitoring: every invoice is closed and
	// its actor stopped. (A New invoice's actor passivates too, so no
	// live actor alone does not mean closed.)
	closed := func() bool {
		for _, id := range ids {
			if inv := h.get(id); inv.Status != kassa.InvoiceSettled && !inv.MonitoringDone {
				return false
			}
		}
		return true
	}
	deadline := time.Now().Add(time.Minute)
	for h.sys.Runtime.stats.invoice.live.Load() != 0 || !closed() {
		if time.Now().After(deadline) {
			t.Fatalf("%d invoice actors still live", h.sys.Runtime.stats.invoice.live.Load())
		}
		clock.Advance(time.Minute)
		time.Sleep(10 * time.Millisecond)
	}
	for i, id := range ids {
		got := h.get(id)
		if want := kassa.InvoiceExpired; i%10 == 0 {
			want = kassa.InvoiceSettled
			if got.Status != want {
				t.Fatalf("invoice %d is %s, want %s", i, got.Status, want)
			}
		} else if got.Status != want || !got.MonitoringDone {
			t.Fatalf("invoice %d is %s (monitoring done %v), want %s and done", i, got.Status, got.MonitoringDone, want)
		}
	}
	// The test clock drops cancelled timers (and what their functions
	// hold) when it next moves.
	clock.Advance(time.Minute)

	mu.Lock()
	if len(made) < n {
		t.Fatalf("%d invoice actors made for %d invoices", len(made), n)
	}
	mu.Unlock()
	var reachable int
	for range 50 {
		runtime.GC()
		reachable = 0
		mu.Lock()
		for _, p := range made {
			if p.Value() != nil {
				reachable++
			}
		}
		mu.Unlock()
		if reachable == 0 {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if reachable != 0 {
		t.Errorf("%d of %d invoice actor instances still reachable after their invoices closed", reachable, len(made))
	}

	// The store actor keeps nothing for them, and neither does
	// protoactor: its registry and the store's children.
	type counts struct{ invoices, stopping, reserved, sessions, children int }
	res, err := h.sys.Runtime.actorSystem().Root.RequestFuture(h.sys.Runtime.store(h.store.ID), inspectStore{func(a *storeActor, ctx actor.Context) any {
		return counts{len(a.invoices), len(a.stopping), len(a.reserved), len(a.sessions), len(ctx.Children())}
	}}, 5*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if c := res.(counts); c != (counts{}) {
		t.Errorf("store actor keeps entries for closed invoices: %+v", c)
	}
	registered := 0
	h.sys.Runtime.actorSystem().ProcessRegistry.LocalPIDs.EachID(func(id string) {
		if strings.Contains(id, "/inv/") {
			registered++
		}
	})
	if registered != 0 {
		t.Errorf("%d invoice actors still in the process registry", registered)
	}
}
