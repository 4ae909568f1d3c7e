package kassatest

import (
	"testing"
	"time"
)

// WaitLimit bounds every WaitUntil: a condition that has not held after
// this long will not (a lost write, a dead daemon), and failing here,
// naming what was awaited, beats hanging until the package's -timeout
// kills the whole run with a goroutine dump.
const WaitLimit = 2 * time.Minute

// WaitUntil polls cond until it holds. When WaitLimit passes or the
// test's context ends first, t fails, naming what it waited for.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	WaitFor(t, WaitLimit, what, cond)
}

// WaitFor polls cond until it holds, failing t, naming what it waited
// for, when timeout passes or the test's context ends first. Tests whose
// condition has a stated bound (an in-process actor answers in
// milliseconds, a webhook within its timeout) wait for that bound rather
// than WaitLimit, so a lost condition fails fast.
func WaitFor(t testing.TB, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	limit := time.NewTimer(timeout)
	defer limit.Stop()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-limit.C:
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
