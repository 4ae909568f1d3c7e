package kassatest

import (
	"testing"
	"time"
)

// WaitUntil polls cond until it holds; the test's deadline bounds it
// (there is no timeout of its own). When the test's context ends first,
// t fails, naming what it waited for.
func WaitUntil(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		select {
		case <-t.Context().Done():
			t.Fatalf("gave up waiting for %s", what)
		case <-time.After(5 * time.Millisecond):
		}
	}
}
