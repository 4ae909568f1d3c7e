package postgres

import (
	"context"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// tracer makes the commit spans, through the global tracer provider (as
// the Pebble store's).
var tracer = otel.Tracer("github.com/kassapay/kassa/persistence/postgres")

// groupStats describes the group (transaction) a batch committed in.
type groupStats struct {
	batches, statements, creates int
}

// noteGroup tells each of items, the batches of one transaction, what
// that transaction holds.
func noteGroup(items []*groupItem) {
	var g groupStats
	for _, it := range items {
		g.batches++
		g.statements += len(it.stmts)
		g.creates += len(it.newInvoices)
	}
	for _, it := range items {
		it.group = g
	}
}

// commitSpan starts the span of a batch's commit, "postgres.Commit", a
// child of the caller's span as Pebble's "pebble.Commit" is: from the
// batch's queueing to its answer, so it shows the commit time the caller
// waits. The returned function ends it once it is answered, with the
// batch's statement count (batch.ops, as on Pebble), its group's batches,
// statements and new invoices, and the error status of a failed commit.
func commitSpan(ctx context.Context, it *groupItem) (end func()) {
	_, span := tracer.Start(ctx, "postgres.Commit", trace.WithAttributes(attribute.Int("batch.ops", len(it.stmts))))
	return func() {
		span.SetAttributes(attribute.Int("group.batches", it.group.batches),
			attribute.Int("group.statements", it.group.statements), attribute.Int("group.creates", it.group.creates))
		if it.err != nil {
			span.SetStatus(codes.Error, it.err.Error())
		}
		span.End()
	}
}
