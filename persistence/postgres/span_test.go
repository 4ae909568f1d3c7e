package postgres

import (
	"errors"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/kassapay/kassa"
)

// TestCommitSpans: each commit on PostgreSQL has a "postgres.Commit" span,
// a child of the caller's, as Pebble's commits have "pebble.Commit". The
// two creates that share a transaction each tell their batch's
// statements and their group's batches, statements and creates; a
// commit whose event sequence number is taken has the error status.
func TestCommitSpans(t *testing.T) {
	db := openTest(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })
	ctx, caller := tp.Tracer("test").Start(t.Context(), "caller")

	// The first group holds its transaction while the two creates queue,
	// so that they share the next one.
	h := newGroupHarness(t, db)
	first := make(chan error, 1)
	go func() {
		b := db.NewBatch()
		b.PutStore(&kassa.Store{ID: "first", Name: "First", Currency: kassa.EUR}, 1)
		first <- db.Commit(ctx, b)
	}()
	select {
	case <-h.held:
	case <-time.After(30 * time.Second):
		t.Fatal("the first group never ran")
	}
	creates := make(chan error, 2)
	for _, id := range []string{"inv_a", "inv_b"} {
		go func() { creates <- db.Commit(ctx, invoiceBatch(db, id)) }()
	}
	h.waitQueued(t, 2)
	close(h.hold)
	for _, c := range []chan error{first, creates, creates} {
		if err := <-c; err != nil {
			t.Fatal(err)
		}
	}
	taken := db.NewBatch()
	taken.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_a"}, 1, []byte("again"))
	if err := db.Commit(ctx, taken); !errors.Is(err, ErrSeqTaken) {
		t.Fatalf("commit of a taken sequence number: %v, want %v", err, ErrSeqTaken)
	}
	caller.End()

	var spans []sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		if s.Name() == "postgres.Commit" && s.Parent().SpanID() == caller.SpanContext().SpanID() {
			spans = append(spans, s)
		}
	}
	if len(spans) != 4 {
		t.Fatalf("%d postgres.Commit spans under the caller's, want 4 (the store, two creates, the taken sequence number)", len(spans))
	}
	attrs := func(s sdktrace.ReadOnlySpan) map[attribute.Key]int64 {
		m := map[attribute.Key]int64{}
		for _, a := range s.Attributes() {
			m[a.Key] = a.Value.AsInt64()
		}
		return m
	}
	var grouped int
	for _, s := range spans[:3] {
		a := attrs(s)
		if s.Status().Code == codes.Error {
			t.Errorf("a commit that succeeded has the error status: %v", s.Status())
		}
		if a["group.batches"] != 2 {
			continue
		}
		grouped++
		ops := int64(len(invoiceBatch(db, "x").(*Batch).b.QueuedQueries))
		if a["batch.ops"] != ops || a["group.statements"] != 2*ops || a["group.creates"] != 2 {
			t.Errorf("a create's span has %v; want batch.ops %d, group.statements %d, group.creates 2", a, ops, 2*ops)
		}
	}
	if grouped != 2 {
		t.Errorf("%d spans tell a group of 2 batches, want the two creates'", grouped)
	}
	if s := spans[3]; s.Status().Code != codes.Error || attrs(s)["batch.ops"] != 1 {
		t.Errorf("the taken sequence number's span: status %v, attributes %v; want the error status, batch.ops 1", s.Status(), attrs(s))
	}
}
