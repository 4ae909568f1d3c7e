package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// traceContext is the W3C propagator; it never reads or writes baggage,
// so nothing but ids and the sampled flag is stored.
var traceContext = propagation.TraceContext{}

// TraceParent returns the W3C traceparent of the span in ctx, or "" when
// ctx holds no valid span context. It is what Kassa stores with a journal
// event or an outbox entry to continue the trace later.
func TraceParent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	traceContext.Inject(ctx, c)
	return c["traceparent"]
}

// SpanContext parses a traceparent written by TraceParent. It answers an
// invalid span context for "" or a malformed value.
func SpanContext(traceParent string) trace.SpanContext {
	if traceParent == "" {
		return trace.SpanContext{}
	}
	ctx := traceContext.Extract(context.Background(), propagation.MapCarrier{"traceparent": traceParent})
	return trace.SpanContextFromContext(ctx)
}

// ContextWithParent returns ctx with the remote span context of
// traceParent as the parent of the next span started from it; ctx itself
// when traceParent is empty or malformed.
func ContextWithParent(ctx context.Context, traceParent string) context.Context {
	sc := SpanContext(traceParent)
	if !sc.IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, sc)
}

// TraceID returns the hex trace id of a traceparent, or "".
func TraceID(traceParent string) string {
	sc := SpanContext(traceParent)
	if !sc.IsValid() {
		return ""
	}
	return sc.TraceID().String()
}
