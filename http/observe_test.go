package http

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kassapay/kassa/metrics"
)

// spans records every span the tests make.
var spans = tracetest.NewSpanRecorder()

func TestMain(m *testing.M) {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	os.Exit(m.Run())
}

// newTraceID returns a trace id no earlier run of the test used: the
// recorder keeps every run's spans (go test -count=2).
func newTraceID(t *testing.T) string {
	var id [16]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(id[:])
}

// spansOfTrace returns the ended spans of one trace, by hex trace id,
// that the tracer named scope made.
func spansOfTrace(traceID, scope string) []sdktrace.ReadOnlySpan {
	var out []sdktrace.ReadOnlySpan
	for _, s := range spans.Ended() {
		if s.SpanContext().TraceID().String() == traceID && s.InstrumentationScope().Name == scope {
			out = append(out, s)
		}
	}
	return out
}

func TestTracing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	tests := []struct {
		method, path, body string
		name               string
		status             int64
	}{
		{"POST", "/api/v1/stores/store_a/invoices", `{"amount": 1}`, "POST /api/v1/stores/{storeId}/invoices", 200},
		{"GET", "/api/v1/stores/store_a/invoices/inv_404", "", "GET /api/v1/stores/{storeId}/invoices/{invoiceId}", 404},
		{"GET", "/api/v1/health", "", "GET /api/v1/health", 200},
		{"GET", "/no/such/route", "", "GET", 404},
	}
	traceIDs := make([]string, len(tests))
	for i, tt := range tests {
		traceIDs[i] = newTraceID(t)
		w := e.do(tt.method, tt.path, tt.body, header{"Traceparent", "00-" + traceIDs[i] + "-b7ad6b7169203331-01"})
		expectStatus(t, w, int(tt.status))
		got := spansOfTrace(traceIDs[i], tracerName)
		if len(got) != 1 {
			t.Fatalf("%s: %d spans, want 1", tt.path, len(got))
		}
		s := got[0]
		if s.Name() != tt.name {
			t.Errorf("span name %q, want %q", s.Name(), tt.name)
		}
		if s.Parent().SpanID().String() != "b7ad6b7169203331" {
			t.Errorf("span parent %s: the incoming trace context was not used", s.Parent().SpanID())
		}
		attrs := map[attribute.Key]attribute.Value{}
		for _, a := range s.Attributes() {
			attrs[a.Key] = a.Value
		}
		if attrs["http.method"].AsString() != tt.method || attrs["http.status_code"].AsInt64() != tt.status {
			t.Errorf("attributes %v", s.Attributes())
		}
		if route := strings.TrimPrefix(tt.name, tt.method+" "); route != tt.name && attrs["http.route"].AsString() != route {
			t.Errorf("http.route %q, want %q", attrs["http.route"].AsString(), route)
		}
	}
	// The actors ran the create in the request's trace.
	var names []string
	for _, s := range spansOfTrace(traceIDs[0], "github.com/kassapay/kassa/actors") {
		names = append(names, s.Name())
	}
	if !slices.Contains(names, "actors.CreateInvoice") {
		t.Errorf("actor spans of the request's trace: %v, want actors.CreateInvoice", names)
	}
}

func TestAccessLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	e.do("GET", "/api/v1/stores/store_a/invoices/"+inv.ID, "")
	e.do("GET", "/api/v1/stores/store_a", "", header{"X-Api-Key", "wrong-key-123"})
	logs := e.logs.String()
	for _, want := range []string{
		// A success is a debug line (a create logs its invoice event at
		// info, once); a refusal stays at info.
		`level=DEBUG msg="http request" method=GET route=/api/v1/stores/{storeId}/invoices/{invoiceId} status=200 duration=`,
		`level=INFO msg="http request" method=GET route=/api/v1/stores/{storeId} status=401`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{keyA, "wrong-key-123", inv.ID} {
		if strings.Contains(logs, secret) {
			t.Errorf("log contains %q", secret)
		}
	}
}

// TestRequestsCountedInTheHandlersMetrics checks that a handler counts
// its requests in the Set it is given, not in one shared by the
// process: two services side by side count apart.
func TestRequestsCountedInTheHandlersMetrics(t *testing.T) {
	t.Parallel()
	a, b := newEnv(t), newEnv(t)
	a.deps.Metrics, b.deps.Metrics = metrics.New(), metrics.New()
	a.rebuild()
	b.rebuild()
	a.do("GET", "/api/v1/stores/store_a", "")
	a.do("GET", "/api/v1/stores/store_a", "")
	b.do("GET", "/api/v1/stores/store_a", "", header{"X-Api-Key", "wrong-key-123"})
	const route = "/api/v1/stores/{storeId}"
	for _, c := range []struct {
		env    *env
		status string
		want   float64
	}{{a, "200", 2}, {a, "401", 0}, {b, "200", 0}, {b, "401", 1}} {
		var m dto.Metric
		if err := c.env.deps.Metrics.HTTPRequests.WithLabelValues("GET", route, c.status).Write(&m); err != nil {
			t.Fatal(err)
		}
		if got := m.GetCounter().GetValue(); got != c.want {
			t.Errorf("%s answered %s: counted %v, want %v", map[*env]string{a: "a", b: "b"}[c.env], c.status, got, c.want)
		}
	}
}
