package kassatest

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// failRecorder is a test that records its failure instead of ending.
type failRecorder struct{ failed string }

func (r *failRecorder) Helper() {}
func (r *failRecorder) Fatalf(format string, args ...any) {
	r.failed = fmt.Sprintf(format, args...)
}

func TestEventuallyReturnsOnceFnHolds(t *testing.T) {
	tries := 0
	Eventually(t, time.Second, "the third try", func() error {
		if tries++; tries < 3 {
			return errors.New("not ready")
		}
		return nil
	})
	if tries != 3 {
		t.Fatalf("fn ran %d times, want 3", tries)
	}
}

func TestEventuallyFailsWithTheLastError(t *testing.T) {
	var r failRecorder
	n := 0
	Eventually(&r, 50*time.Millisecond, "the daemon", func() error {
		n++
		return fmt.Errorf("try %d refused", n)
	})
	want := fmt.Sprintf("timed out after 50ms waiting for the daemon: try %d refused", n)
	if r.failed != want {
		t.Fatalf("failure %q, want %q", r.failed, want)
	}
}

func TestWaitForNamesWhatItWaitedFor(t *testing.T) {
	var r failRecorder
	start := time.Now()
	poll(&r, 30*time.Millisecond, "a timer that never fires", 5*time.Millisecond, func() error { return errNotYet })
	if r.failed != "timed out after 30ms waiting for a timer that never fires" {
		t.Fatalf("failure %q", r.failed)
	}
	if waited := time.Since(start); waited < 30*time.Millisecond {
		t.Fatalf("gave up after %v, before its timeout", waited)
	}
	if strings.Contains(r.failed, "not yet") {
		t.Fatal("a false condition has no error to report")
	}
}
