package actors

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/metrics"
)

// traceStep starts the span of one step of a forward actor: the child of
// the settle that woke it (sc), or a new trace when a timer did (sc not
// valid). Until the returned function ends it, a.ctx() carries the span.
func (a *forwardActor) traceStep(sc trace.SpanContext) (end func()) {
	c := a.t.ctx
	if sc.IsValid() {
		c = trace.ContextWithSpanContext(c, sc)
	}
	c, span := a.f.tracer.Start(c, "forward.Step", trace.WithAttributes(attribute.String("store.id", a.storeID)))
	a.c = c
	return func() {
		a.c = nil
		span.End()
	}
}

// ctx is the context of the step under way.
func (a *forwardActor) ctx() context.Context {
	if a.c == nil {
		return a.t.ctx
	}
	return a.c
}

// traceForward names the forward on the step's span.
func (a *forwardActor) traceForward(fw *kassa.Forward) {
	trace.SpanFromContext(a.ctx()).SetAttributes(attribute.String("forward.id", fw.ID))
}

// countForward counts the outcome of a forward attempt.
func countForward(m *metrics.Set, ok bool) {
	outcome := "failed"
	if ok {
		outcome = "succeeded"
	}
	m.ForwardAttempts.WithLabelValues(outcome).Inc()
}
