package crashpoint

import (
	"errors"
	"os"
	"os/exec"
	"syscall"
	"testing"
)

// TestHit runs Hit in a child process whose environment names the point:
// a normal build ignores the variable and goes on; a build with the
// crashpoints tag dies of SIGKILL at the named point and at no other.
func TestHit(t *testing.T) {
	if os.Getenv("CRASHPOINT_CHILD") != "" {
		Hit(PayoutRecorded) // not the named point
		Hit(os.Getenv(Env))
		os.Stdout.WriteString("survived\n")
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHit$", "-test.count=1")
	cmd.Env = append(os.Environ(), "CRASHPOINT_CHILD=1", Env+"="+PaymentSent)
	out, err := cmd.Output()
	var exit *exec.ExitError
	switch {
	case !Enabled && err != nil:
		t.Fatalf("a normal build died at a crash point: %v\n%s", err, out)
	case !Enabled && string(out) != "survived\nPASS\n":
		t.Fatalf("child printed %q", out)
	case Enabled && !errors.As(err, &exit):
		t.Fatalf("a crashpoints build went past the named point: %v\n%s", err, out)
	case Enabled:
		if ws, ok := exit.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
			t.Fatalf("child ended %v, want killed by SIGKILL", exit)
		}
	}
}
