package kassatest

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Deadline bounds every wait of the backend suites for something to
// arrive: a real backend polls its node, so an event may come late, but
// it must come.
const Deadline = 60 * time.Second

// recorder collects what a handler was given and fails the calls that
// refuse says to fail.
type recorder[E any] struct {
	mu     sync.Mutex
	got    []E
	refuse func(E) bool
	wake   chan struct{}
}

func newRecorder[E any]() *recorder[E] { return &recorder[E]{wake: make(chan struct{}, 1)} }

var errRefused = errorString("kassatest: the handler refused the event, as a failed commit would")

type errorString string

func (e errorString) Error() string { return string(e) }

// handle is the handler given to Start: it records every event, and
// refuses those refuse selects.
func (r *recorder[E]) handle(_ context.Context, ev E) error {
	r.mu.Lock()
	r.got = append(r.got, ev)
	refuse := r.refuse != nil && r.refuse(ev)
	r.mu.Unlock()
	select {
	case r.wake <- struct{}{}:
	default:
	}
	if refuse {
		return errRefused
	}
	return nil
}

// events returns a copy of what was recorded.
func (r *recorder[E]) events() []E {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]E(nil), r.got...)
}

// waitFor waits until cond holds for the recorded events, or fails the
// test after Deadline.
func (r *recorder[E]) waitFor(t *testing.T, what string, cond func([]E) bool) []E {
	t.Helper()
	deadline := time.NewTimer(Deadline)
	defer deadline.Stop()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		if evs := r.events(); cond(evs) {
			return evs
		}
		select {
		case <-r.wake:
		case <-tick.C:
		case <-deadline.C:
			t.Fatalf("waited %v for %s; the handler got %d events: %+v", Deadline, what, len(r.events()), r.events())
		}
	}
}
