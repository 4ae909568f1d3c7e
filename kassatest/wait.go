package kassatest

import (
	"context"
	"errors"
	"testing"
	"time"
)

// WaitLimit bounds every WaitUntil: a condition that has not held after
// this long will not (a lost write, a dead daemon), and failing here,
// naming what was awaited, beats hanging until the package's -timeout
// kills the whole run with a goroutine dump.
const WaitLimit = 2 * time.Minute

// Fataler is what a wait needs of its test: testing.TB has it, and so
// has the bench's stand-in for one (harness.Process).
type Fataler interface {
	Helper()
	Fatalf(format string, args ...any)
}

// WaitUntil polls cond until it holds. When WaitLimit passes or the
// test's context ends first, t fails, naming what it waited for.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, WaitLimit, what, cond)
}

// errNotYet is a false condition of WaitFor, as poll sees it.
var errNotYet = errors.New("not yet")

// WaitFor polls cond until it holds, failing t, naming what it waited
// for, when timeout passes or the test's context ends first. Tests whose
// condition has a stated bound (an in-process actor answers in
// milliseconds, a webhook within its timeout) wait for that bound rather
// than WaitLimit, so a lost condition fails fast. It polls every 5 ms:
// in-process conditions are cheap to check.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	poll(t, timeout, what, 5*time.Millisecond, func() error {
		if cond() {
			return nil
		}
		return errNotYet
	})
}

// Eventually polls fn until it returns nil, failing t with fn's last
// error when timeout passes or the test's context ends first. The polls
// back off from 10 ms to 200 ms, so that a daemon asked over RPC is not
// hammered. It must run on the test's goroutine.
func Eventually(t Fataler, timeout time.Duration, what string, fn func() error) {
	t.Helper()
	poll(t, timeout, what, 200*time.Millisecond, fn)
}

// poll is the one wait loop of the tests: fn until nil, the pause
// between tries doubling from a few milliseconds up to most.
func poll(t Fataler, timeout time.Duration, what string, most time.Duration, fn func() error) {
	t.Helper()
	var done <-chan struct{}
	if c, ok := t.(interface{ Context() context.Context }); ok {
		done = c.Context().Done()
	}
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	wait := min(10*time.Millisecond, most)
	for {
		err := fn()
		if err == nil {
			return
		}
		why := ""
		if err != errNotYet {
			why = ": " + err.Error()
		}
		select {
		case <-done:
			t.Fatalf("gave up waiting for %s%s", what, why)
			return
		case <-limit.C:
			t.Fatalf("timed out after %v waiting for %s%s", timeout, what, why)
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, most)
	}
}
