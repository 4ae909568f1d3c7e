package harness

import (
	"fmt"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The shared start-and-wait of every daemon: a process that exits before
// it is ready is reported as exited, one that is never ready as not
// ready, one that becomes ready as ready; stop ends it.
func TestDaemonWaitReadyAndStop(t *testing.T) {
	exits, err := startDaemon(exec.Command("true"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := exits.waitReady(time.Minute, time.Millisecond, func() bool { return false }); err != errExited {
		t.Fatalf("a process that exits: waitReady = %v, want errExited", err)
	}

	after := make(chan struct{})
	sleeps, err := startDaemon(exec.Command("sleep", "60"), func() { close(after) })
	if err != nil {
		t.Fatal(err)
	}
	if err := sleeps.waitReady(50*time.Millisecond, time.Millisecond, func() bool { return false }); err != errNotReady {
		t.Fatalf("a process never ready: waitReady = %v, want errNotReady", err)
	}
	calls := 0
	if err := sleeps.waitReady(time.Minute, time.Millisecond, func() bool { calls++; return calls == 3 }); err != nil {
		t.Fatalf("a process ready at the third check: waitReady = %v", err)
	}
	if !sleeps.stop(syscall.SIGTERM, time.Minute) {
		t.Fatal("stop: sleep did not exit on SIGTERM")
	}
	select {
	case <-after:
	default:
		t.Fatal("after did not run before done was closed")
	}
}

// recorder is a T that records what is logged.
type recorder struct {
	Process
	failed bool
	logs   []string
}

func (r *recorder) Failed() bool { return r.failed }
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

func TestLogTailIfFailed(t *testing.T) {
	r := &recorder{}
	LogTailIfFailed(r, "kassa log", "passed", 3)
	if len(r.logs) != 0 {
		t.Fatalf("logged %q for a test that passed", r.logs)
	}
	r.failed = true
	LogTailIfFailed(r, "kassa log", "first line\nlast", 4)
	if len(r.logs) != 1 || !strings.HasSuffix(r.logs[0], "(tail):\nlast") || !strings.HasPrefix(r.logs[0], "kassa log") {
		t.Fatalf("logged %q, want the last 4 bytes under the name", r.logs)
	}
}
