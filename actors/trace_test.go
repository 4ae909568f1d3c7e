package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/telemetry"
)

// TestCreateInvoiceSpans checks that an invoice creation is one trace: the
// caller's span, the actor request, the invoice actor's create and the
// Pebble commit, each the child of the one before.
func TestCreateInvoiceSpans(t *testing.T) {
	rec, tp := recordSpans(t)

	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	ctx, root := tp.Tracer("test").Start(context.Background(), "POST /invoices")
	if _, err := h.sys.Service.CreateInvoice(ctx, h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS}); err != nil {
		t.Fatal(err)
	}
	root.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == root.SpanContext().TraceID() {
			byName[s.Name()] = s
		}
	}
	chain := []string{"POST /invoices", "actors.CreateInvoice", "invoice.Create", "pebble.Commit"}
	for i := 1; i < len(chain); i++ {
		child, parent := byName[chain[i]], byName[chain[i-1]]
		if child == nil || parent == nil {
			t.Fatalf("missing span %q or %q in trace; have %v", chain[i], chain[i-1], names(byName))
		}
		if child.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", chain[i], chain[i-1])
		}
	}
}

// recordSpans makes a tracer provider that records every span the
// test's code ends, global until the test ends.
func recordSpans(t *testing.T) (*tracetest.SpanRecorder, *sdktrace.TracerProvider) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	return rec, tp
}

func names(m map[string]sdktrace.ReadOnlySpan) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	return out
}

// TestClusterCallSpans checks that a create sent to the node that runs
// the store is one trace across the two nodes: the caller's span, a
// client span of the hop on the sending node, then the store node's
// actor request, invoice create and commit, each the child of the one
// before.
func TestClusterCallSpans(t *testing.T) {
	rec, tp := recordSpans(t)
	// kassa serve's telemetry propagates W3C trace context.
	prevProp := otel.GetTextMapPropagator()
	otel.SetTextMapPropagator(propagation.TraceContext{})
	t.Cleanup(func() { otel.SetTextMapPropagator(prevProp) })

	nodes := clusterNodes(t, 2, openMem(t), kassatest.NewTestClock(time.Now()), 15*time.Minute)
	st, err := nodes[0].sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.Zero})
	if err != nil {
		t.Fatal(err)
	}
	sender := nodes[0]
	if sender.sys.Cluster.Health().Address == sender.sys.Cluster.ownerOf(st.ID) {
		sender = nodes[1]
	}
	ctx, root := tp.Tracer("test").Start(context.Background(), "POST /invoices")
	if _, err := sender.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS}); err != nil {
		t.Fatal(err)
	}
	root.End()

	byName := map[string]sdktrace.ReadOnlySpan{}
	for _, s := range rec.Ended() {
		if s.SpanContext().TraceID() == root.SpanContext().TraceID() {
			byName[s.Name()] = s
		}
	}
	chain := []string{"POST /invoices", "cluster.create_invoice", "actors.CreateInvoice", "invoice.Create", "pebble.Commit"}
	for i := 1; i < len(chain); i++ {
		child, parent := byName[chain[i]], byName[chain[i-1]]
		if child == nil || parent == nil {
			t.Fatalf("missing span %q or %q in trace; have %v", chain[i], chain[i-1], names(byName))
		}
		if child.Parent().SpanID() != parent.SpanContext().SpanID() {
			t.Errorf("%s is not a child of %s", chain[i], chain[i-1])
		}
	}
	if k := byName["cluster.create_invoice"].SpanKind(); k != trace.SpanKindClient {
		t.Errorf("the hop's span is of kind %v, want client", k)
	}
}

// TestWokenInvoiceDeliveryLinksItsCreation checks that an invoice read
// back from storage (here after a restart; a passivated one is woken the
// same way) still links its later webhook deliveries to the span of its
// creation: the link lives in the created event, which the snapshot
// loaded at activation comes after.
func TestWokenInvoiceDeliveryLinksItsCreation(t *testing.T) {
	rec, _ := recordSpans(t)

	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	hook := h.webhook("https://a.example/hook", kassa.EventSettled)
	inv := h.invoice("1000", kassa.SATS)
	var create trace.SpanContext
	for _, s := range rec.Ended() {
		if s.Name() == "invoice.Create" {
			create = s.SpanContext()
		}
	}
	if !create.IsValid() {
		t.Fatal("no invoice.Create span")
	}
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	h2.store = h.store
	h2.payLightning(inv, 1000)
	var links []string
	if _, err := db2.Deliveries(context.Background(), hook.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
		links = append(links, d.CreationTrace)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(links) != 1 {
		t.Fatalf("%d deliveries, want the Settled one", len(links))
	}
	if got := telemetry.SpanContext(links[0]); got.SpanID() != create.SpanID() || got.TraceID() != create.TraceID() {
		t.Errorf("the Settled delivery links %q, want the invoice.Create span %s", links[0], create.SpanID())
	}
}
