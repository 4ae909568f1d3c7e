package http

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
	"github.com/kassapay/kassa/telemetry"
)

// BenchmarkCreateInvoice is one invoice create through the whole stack
// as `kassa serve --chain sim --lightning sim` wires it: the handler with
// its middleware, the actors, Pebble on disk with synced commits, spans
// as kassa serve has them without an exporter, metrics counted; plain,
// and with an Idempotency-Key per create. Parallel, so that commits
// share their fsyncs as under the bench's load. -benchmem gives the
// allocations of a create; kassa-bench's create part gives the rate
// against the work floor.
func BenchmarkCreateInvoice(b *testing.B) {
	prev := otel.GetTracerProvider()
	shutdown, err := telemetry.Setup(b.Context(), telemetry.Options{SampleRatio: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		shutdown(context.Background())
		otel.SetTracerProvider(prev)
	})
	stats := metrics.New()
	db, err := persistence.Open(b.TempDir(), persistence.Options{Metrics: stats})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	node, err := lnsim.New(kassa.SystemClock{})
	if err != nil {
		b.Fatal(err)
	}
	log := slog.New(slog.DiscardHandler)
	sys := actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: chainsim.New(kassa.SystemClock{}), Lightning: node, Rates: rates.Fixed{},
		Clock: kassa.SystemClock{}, Logger: log, InvoiceExpiry: kassa.DefaultInvoiceExpiry, Metrics: stats,
	})
	b.Cleanup(sys.Runtime.Shutdown)
	st, err := sys.Service.CreateStore(b.Context(), kassa.StoreSettings{Name: "Bench", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1)})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sys.Service.TopUp(b.Context(), st.ID, 100_000_000_000, "bench"); err != nil {
		b.Fatal(err)
	}
	h := NewHandler(Deps{Reader: db, Stores: sys.Service, Invoices: sys.Service, PaymentRequests: sys.Service, Rates: rates.Fixed{},
		KV: db, Logger: log, Metrics: stats, PublicURL: "http://127.0.0.1:8080"})
	path := "/api/v1/stores/" + st.ID + "/invoices"
	body := []byte(`{"amount":"12.50","currency":"EUR","orderId":"bench","metadata":{"sku":"A1"}}`)
	for _, keyed := range []bool{false, true} {
		name := "plain"
		if keyed {
			// Each create with its own Idempotency-Key, as a shop
			// plugin retrying safely sends it.
			name = "idempotency-key"
		}
		b.Run(name, func(b *testing.B) {
			// Keys are new in every run (-count runs this function
			// again over the same store): a key used before is a
			// replay, not a create.
			prefix := kassa.NewID("bench-")
			var n atomic.Int64
			b.ReportAllocs()
			b.SetParallelism(16)
			b.ResetTimer()
			cpu := kassatest.ProcessCPU()
			defer func() { b.ReportMetric(float64(kassatest.ProcessCPU()-cpu)/float64(b.N)/1e3, "cpu-us/op") }()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					r := httptest.NewRequest("POST", path, bytes.NewReader(body))
					r.Header.Set("Content-Type", "application/json")
					r.Header.Set("X-Api-Key", st.APIKeys[0].Key)
					if keyed {
						r.Header.Set("Idempotency-Key", prefix+"-"+strconv.FormatInt(n.Add(1), 10))
					}
					w := httptest.NewRecorder()
					h.ServeHTTP(w, r)
					if w.Code != http.StatusOK {
						b.Errorf("status %d: %s", w.Code, w.Body)
						return
					}
				}
			})
		})
	}
}
