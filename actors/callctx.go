package actors

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
)

// callContext is what an actor needs of its caller's context, carried in
// a message as values: the caller's deadline, its trace, its request id
// and who acts (kassa.Actor). A context.Context does not go into a
// mailbox: the actor makes its own context from these (context), which
// the caller's cancellation does not reach, so that a step the actor
// started is not cut short midway.
type callContext struct {
	// deadline is the caller's; zero: none.
	deadline time.Time
	// span is the caller's span, the parent of the actor's spans.
	span trace.SpanContext
	// request is the caller's request id (kassa.WithRequest).
	request kassa.Request
	// actor is who makes the call, for the store's history
	// (kassa.ActorFrom).
	actor kassa.Actor
}

// callOf takes the call context of ctx (nil: none).
func callOf(ctx context.Context) callContext {
	if ctx == nil {
		return callContext{}
	}
	deadline, _ := ctx.Deadline()
	return callContext{deadline: deadline, span: trace.SpanContextFromContext(ctx), request: kassa.RequestFrom(ctx), actor: kassa.ActorFrom(ctx)}
}

// context makes the actor's context for the call: the caller's trace,
// request id, actor and deadline, none of its cancellation or other
// values.
func (c callContext) context() (context.Context, context.CancelFunc) {
	ctx := context.Background()
	if c.span.IsValid() {
		ctx = trace.ContextWithSpanContext(ctx, c.span)
	}
	if c.request != (kassa.Request{}) {
		ctx = kassa.WithRequest(ctx, c.request)
	}
	if c.actor != (kassa.Actor{}) {
		ctx = kassa.WithActor(ctx, c.actor)
	}
	if c.deadline.IsZero() {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, c.deadline)
}

// A call has one budget, its context's deadline, taken once where the
// call enters the runtime (an actor request), the cluster (a routed
// call, an activation) or this node (a call another node routed here):
// withBudget bounds the context by the node's request timeout, which
// never extends a deadline the caller set, and everything the call does
// inside reads what is left of it (budgetLeft) instead of setting a
// deadline of its own. A context's deadline is the wall clock's (the
// context package times it), so budgetLeft reads the wall clock; every
// other time in the actors is the injected Config.Clock's.

// withBudget bounds ctx by timeout from now, unless its deadline comes
// first.
func withBudget(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, timeout)
}

// budgetLeft is what is left of ctx's budget (withBudget); nothing for
// a context without one, so that a call made without a budget times
// out at once instead of waiting for good.
func budgetLeft(ctx context.Context) time.Duration {
	d, ok := ctx.Deadline()
	if !ok {
		return 0
	}
	return time.Until(d)
}
