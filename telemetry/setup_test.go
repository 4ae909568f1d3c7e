package telemetry_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"

	"github.com/kassapay/kassa/telemetry"
)

// setup runs telemetry.Setup with o and puts the global tracer provider
// and propagator back when the test ends.
func setup(t *testing.T, o telemetry.Options) {
	t.Helper()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
	tp, prop := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	shutdown, err := telemetry.Setup(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		shutdown(context.Background())
		otel.SetTracerProvider(tp)
		otel.SetTextMapPropagator(prop)
	})
}

// TestNothingRecordedWithoutAnExporter: with no endpoint and no file, a
// new trace's spans record nothing but still have ids (the logs, the
// journal and webhook deliveries carry them), and a trace a caller
// samples stays sampled. A trace file records every span (the positive
// control).
func TestNothingRecordedWithoutAnExporter(t *testing.T) {
	t.Run("no exporter", func(t *testing.T) {
		setup(t, telemetry.Options{SampleRatio: -1})
		ctx, span := otel.Tracer("test").Start(context.Background(), "root")
		defer span.End()
		if span.IsRecording() {
			t.Error("a new trace is recorded with nowhere to send it")
		}
		if !span.SpanContext().IsValid() {
			t.Fatal("a span without an exporter has no ids")
		}
		if tp := telemetry.TraceParent(ctx); !strings.HasPrefix(tp, "00-"+span.SpanContext().TraceID().String()) {
			t.Errorf("traceparent %q, want the span's trace", tp)
		}
		caller := propagation.MapCarrier{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
		ctx = otel.GetTextMapPropagator().Extract(context.Background(), caller)
		ctx, child := otel.Tracer("test").Start(ctx, "continued")
		defer child.End()
		if !child.SpanContext().IsSampled() || !strings.HasSuffix(telemetry.TraceParent(ctx), "-01") {
			t.Errorf("a trace the caller samples is not sampled any more: %q", telemetry.TraceParent(ctx))
		}
	})
	t.Run("trace file", func(t *testing.T) {
		setup(t, telemetry.Options{File: filepath.Join(t.TempDir(), "spans.jsonl"), SampleRatio: -1})
		_, span := otel.Tracer("test").Start(context.Background(), "root")
		defer span.End()
		if !span.IsRecording() || !span.SpanContext().IsSampled() {
			t.Error("a trace file does not record a new trace")
		}
	})
}
