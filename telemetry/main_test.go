package telemetry_test

import (
	"os"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// spans records every span of the tests in this package.
var spans = tracetest.NewSpanRecorder()

// TestMain records the tests' spans, so that their spans have ids. The
// whole service's metrics and traces are tested end to end in package
// http's test binary (stack_e2e_test.go there), which links the service.
func TestMain(m *testing.M) {
	otel.SetTracerProvider(sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans)))
	otel.SetTextMapPropagator(propagation.TraceContext{})
	os.Exit(m.Run())
}

// tracer is the tests' tracer, from the recording provider.
func tracer() trace.Tracer { return otel.Tracer("telemetry_test") }
