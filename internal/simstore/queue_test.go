package simstore

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
)

// TestQueueKeepsRefusedEventsAcrossRestart: events the handler refused
// stay in the store, in order, and a queue opened on the same store
// after a restart delivers them first, then the new ones.
func TestQueueKeepsRefusedEventsAcrossRestart(t *testing.T) {
	ctx := context.Background()
	store := NewMem()
	q, err := OpenQueue[int](ctx, store, "q/")
	if err != nil {
		t.Fatal(err)
	}
	// No handler yet: events are kept, Deliver reports nothing.
	if err := q.Push(ctx, 1, 2); err != nil {
		t.Fatal(err)
	}
	if err := q.Deliver(ctx); err != nil {
		t.Fatalf("deliver without a handler: %v", err)
	}
	var mu sync.Mutex
	var got []int
	refuse := errors.New("disk full")
	handler := func(fail error) func(context.Context, int) error {
		return func(_ context.Context, ev int) error {
			if fail != nil {
				return fail
			}
			mu.Lock()
			got = append(got, ev)
			mu.Unlock()
			return nil
		}
	}
	runCtx, stop := context.WithCancel(ctx)
	if err := q.Start(runCtx, handler(refuse)); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := q.Deliver(ctx); !errors.Is(err, refuse) {
		t.Fatalf("deliver with a refusing handler = %v, want %v", err, refuse)
	}
	stop()
	if q.Len() != 3 {
		t.Fatalf("len %d after refusals, want 3", q.Len())
	}

	// Restart: a new queue on the same store.
	q2, err := OpenQueue[int](ctx, store, "q/")
	if err != nil {
		t.Fatal(err)
	}
	if err := q2.Push(ctx, 4); err != nil {
		t.Fatal(err)
	}
	run2, stop2 := context.WithCancel(ctx)
	defer stop2()
	if err := q2.Start(run2, handler(nil)); err != nil {
		t.Fatal(err)
	}
	if err := q2.Deliver(ctx); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(got, []int{1, 2, 3, 4}) {
		t.Fatalf("delivered %v, want [1 2 3 4]", got)
	}
	left := 0
	_ = store.Scan(ctx, "q/", func(string, []byte) error { left++; return nil })
	if left != 0 || q2.Len() != 0 {
		t.Fatalf("%d events left in the store, %d in the queue, want none", left, q2.Len())
	}
}

func TestQueueStartNeedsAHandler(t *testing.T) {
	q, err := OpenQueue[int](context.Background(), NewMem(), "q/")
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Start(context.Background(), nil); err == nil {
		t.Fatal("Start(nil) succeeded")
	}
}
