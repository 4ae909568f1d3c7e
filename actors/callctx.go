package actors

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
)

// callContext is what an actor needs of its caller's context, carried in
// a message as values: the caller's deadline, its trace and its request
// id. A context.Context does not go into a mailbox: the actor makes its
// own context from these (context), which the caller's cancellation does
// not reach, so that a step the actor started is not cut short midway.
type callContext struct {
	// deadline is the caller's; zero: none.
	deadline time.Time
	// span is the caller's span, the parent of the actor's spans.
	span trace.SpanContext
	// request is the caller's request id (kassa.WithRequest).
	request kassa.Request
}

// callOf takes the call context of ctx (nil: none).
func callOf(ctx context.Context) callContext {
	if ctx == nil {
		return callContext{}
	}
	deadline, _ := ctx.Deadline()
	return callContext{deadline: deadline, span: trace.SpanContextFromContext(ctx), request: kassa.RequestFrom(ctx)}
}

// context makes the actor's context for the call: the caller's trace,
// request id and deadline, none of its cancellation or other values.
func (c callContext) context() (context.Context, context.CancelFunc) {
	ctx := context.Background()
	if c.span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, c.span)
	}
	if c.request != (kassa.Request{}) {
		ctx = kassa.WithRequest(ctx, c.request)
	}
	if c.deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, c.deadline)
}
