package simstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Queue is a durable first-in first-out queue of events waiting for a
// handler to accept them. It is how the simulators report a payment only
// once the service has made it durable: each event stays in the Store,
// under the queue's prefix and a sequence number, until the handler
// returned nil for it; a refused event is offered again with backoff,
// and the events left at a restart are loaded by OpenQueue and delivered
// once a handler runs. The handler must be idempotent: an event whose
// deletion failed is delivered again after a restart.
type Queue[E any] struct {
	store  Store
	prefix string

	mu      sync.Mutex
	handle  func(context.Context, E) error
	running context.Context
	// pending are the events not accepted yet, oldest first; each is
	// also in the store under its key.
	pending []queued[E]
	next    uint64

	// delivering lets one delivery pass run at a time, so that events
	// reach the handler in order.
	delivering sync.Mutex
	wake       chan struct{}
}

type queued[E any] struct {
	key   string
	event E
}

// Retry backoff of events whose handler failed.
const (
	retryFirst = 50 * time.Millisecond
	retryMax   = 5 * time.Second
)

// OpenQueue returns the queue kept in store under prefix, with the
// events left in it.
func OpenQueue[E any](ctx context.Context, store Store, prefix string) (*Queue[E], error) {
	q := &Queue[E]{store: store, prefix: prefix, wake: make(chan struct{}, 1)}
	err := store.Scan(ctx, prefix, func(k string, v []byte) error {
		var ev E
		if err := json.Unmarshal(v, &ev); err != nil {
			return fmt.Errorf("pending event %s: %w", k, err)
		}
		var seq uint64
		if _, err := fmt.Sscanf(strings.TrimPrefix(k, prefix), "%x", &seq); err != nil {
			return fmt.Errorf("pending event %s: bad sequence: %w", k, err)
		}
		q.pending = append(q.pending, queued[E]{key: k, event: ev})
		q.next = max(q.next, seq+1)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return q, nil
}

// Push stores events at the end of the queue. Callers that must keep
// the order of their own state changes call it under their own lock.
func (q *Queue[E]) Push(ctx context.Context, events ...E) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, ev := range events {
		k := fmt.Sprintf("%s%016x", q.prefix, q.next)
		v, err := json.Marshal(ev)
		if err != nil {
			return err
		}
		if err := q.store.Put(ctx, k, v); err != nil {
			return err
		}
		q.next++
		q.pending = append(q.pending, queued[E]{key: k, event: ev})
	}
	return nil
}

// Len is the number of events not accepted yet.
func (q *Queue[E]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.pending)
}

// Start delivers the events to handle from now until ctx ends, the ones
// left from before first. It returns at once. A second Start replaces the
// handler of the first.
func (q *Queue[E]) Start(ctx context.Context, handle func(context.Context, E) error) error {
	if handle == nil {
		return errors.New("start queue: no handler")
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	q.mu.Lock()
	q.handle, q.running = handle, ctx
	q.mu.Unlock()
	go q.retry(ctx)
	q.kick()
	return nil
}

// Deliver hands the pending events to the handler, oldest first, and
// forgets each one the handler accepted. It stops at the first one the
// handler refuses, leaves it to the retry loop and returns the handler's
// error: the change the event reports was not made durable, and the
// caller must not report it as done. Without a running handler it keeps
// the events for the next Start and returns nil.
func (q *Queue[E]) Deliver(ctx context.Context) error {
	q.delivering.Lock()
	defer q.delivering.Unlock()
	for {
		q.mu.Lock()
		handle, running := q.handle, q.running
		if len(q.pending) == 0 || handle == nil || running.Err() != nil {
			q.mu.Unlock()
			return nil
		}
		head := q.pending[0]
		q.mu.Unlock()

		if err := handle(ctx, head.event); err != nil {
			q.kick()
			return err
		}
		q.mu.Lock()
		q.pending[0] = queued[E]{}
		q.pending = q.pending[1:]
		q.mu.Unlock()
		// Should the delete fail, the event is delivered again after a
		// restart: the handler is idempotent.
		_ = q.store.Delete(ctx, head.key)
	}
}

// kick wakes the retry loop.
func (q *Queue[E]) kick() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// retry delivers the pending events again, with backoff, whenever it is
// woken, until ctx ends.
func (q *Queue[E]) retry(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wake:
		}
		for wait := retryFirst; ; wait = min(2*wait, retryMax) {
			if err := q.Deliver(ctx); err == nil {
				break
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return
			case <-t.C:
			}
		}
	}
}
