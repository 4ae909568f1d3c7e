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
	limit := time.NewTimer(WaitLimit)
	defer limit.Stop()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-limit.C:
			t.Fatalf("gave up waiting for %s after %v", what, WaitLimit)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
