package telemetry_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"

	"github.com/kassapay/kassa/telemetry"
)

// TestLogLinesCarryTraceIDs checks that a line logged within a span
// carries its trace and span ids, in JSON and in text, also through
// With, and that a line logged outside any span carries none.
func TestLogLinesCarryTraceIDs(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(telemetry.LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "test")
	ctx, span := tracer().Start(context.Background(), "work")
	log.InfoContext(ctx, "inside")
	span.End()
	log.Info("outside")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("lines %q", lines)
	}
	var in, out map[string]any
	json.Unmarshal([]byte(lines[0]), &in)
	json.Unmarshal([]byte(lines[1]), &out)
	if in["trace_id"] != span.SpanContext().TraceID().String() || in["span_id"] != span.SpanContext().SpanID().String() || in["component"] != "test" {
		t.Errorf("line in a span: %s", lines[0])
	}
	if _, ok := out["trace_id"]; ok {
		t.Errorf("line outside any span: %s", lines[1])
	}

	buf.Reset()
	text := slog.New(telemetry.LogHandler(slog.NewTextHandler(&buf, nil)))
	text.InfoContext(ctx, "inside")
	if !strings.Contains(buf.String(), "trace_id="+span.SpanContext().TraceID().String()) {
		t.Errorf("text line: %s", buf.String())
	}
}

// TestTraceParentRoundTrip checks the strings stored with journal events
// and deliveries: a span's traceparent parses back to its span context,
// and nothing (or garbage) parses to none.
func TestTraceParentRoundTrip(t *testing.T) {
	ctx, span := tracer().Start(context.Background(), "work")
	defer span.End()
	tp := telemetry.TraceParent(ctx)
	if sc := telemetry.SpanContext(tp); sc.TraceID() != span.SpanContext().TraceID() || sc.SpanID() != span.SpanContext().SpanID() {
		t.Errorf("traceparent %q parses to %v", tp, sc)
	}
	if telemetry.TraceID(tp) != span.SpanContext().TraceID().String() {
		t.Errorf("TraceID(%q) = %q", tp, telemetry.TraceID(tp))
	}
	for _, bad := range []string{"", "00-zz-yy-01", "nonsense"} {
		if telemetry.SpanContext(bad).IsValid() || telemetry.TraceID(bad) != "" {
			t.Errorf("%q parses to a span context", bad)
		}
	}
	if telemetry.TraceParent(context.Background()) != "" {
		t.Error("a context without a span has a traceparent")
	}
}

// TestSetupRefusesABadRatio checks the sampler flag's validation.
func TestSetupRefusesABadRatio(t *testing.T) {
	if _, err := telemetry.Setup(context.Background(), telemetry.Options{SampleRatio: 1.5}); err == nil {
		t.Error("a sample ratio of 1.5 was accepted")
	}
}
