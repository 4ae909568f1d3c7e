package harness

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"
)

// T is what the harness needs of a test: *testing.T and *testing.B
// satisfy it, and so can a benchmark command (Process).
type T interface {
	Helper()
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Cleanup(func())
	TempDir() string
	Failed() bool
}

// SkipShort skips a test under -short (`make test-short`, the fast
// tier), saying that it needs what; `make test` or `make itest` runs it.
// A T that cannot skip (a benchmark command's) runs on.
func SkipShort(t T, what string) {
	t.Helper()
	if s, ok := t.(interface{ Skip(...any) }); ok && testing.Short() {
		s.Skip("needs " + what + ": skipped under -short (make test or make itest runs it)")
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func FreePort(t T) int {
	t.Helper()
	port, err := freePort()
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	return port
}

// FreeAddr returns a 127.0.0.1 address whose port was free a moment
// ago, for callers without a test (the bench).
func FreeAddr() (string, error) {
	port, err := freePort()
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("127.0.0.1:%d", port), nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	// A port from the kernel's ephemeral range (what port 0 gives) can
	// be taken by any outgoing connection between this check and the
	// daemon's bind ("address already in use" failed lnd's start under
	// load), so try ports below that range first.
	for range 50 {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lowPortMin+rand.IntN(lowPortMax-lowPortMin)))
		if err == nil {
			port := l.Addr().(*net.TCPAddr).Port
			l.Close()
			return port, nil
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// freePort's range: below Linux's default ephemeral ports (32768–60999).
const lowPortMin, lowPortMax = 20000, 32000

// tail returns the last 20 lines of a daemon's output, for an error.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}

// fileTail returns the last max bytes of the file at path (a daemon's
// log), or what of it there is.
func fileTail(path string, max int) string {
	b, _ := os.ReadFile(path)
	if len(b) > max {
		b = b[len(b)-max:]
	}
	return string(b)
}

// LogTailIfFailed logs the last max bytes of a process's log, under
// name, when t has failed: the end of a log says why a test failed.
func LogTailIfFailed(t T, name, log string, max int) {
	t.Helper()
	if !t.Failed() {
		return
	}
	if len(log) > max {
		log = log[len(log)-max:]
	}
	t.Logf("%s (tail):\n%s", name, log)
}

// Process is a T for commands (benchmarks, `make regtest`): Fatalf
// panics, Cleanup runs at Close.
type Process struct {
	cleanups []func()
	failed   bool
}

// Helper does nothing.
func (p *Process) Helper() {}

// Fatalf marks the process failed and panics with the message.
func (p *Process) Fatalf(format string, args ...any) {
	p.failed = true
	panic(fmt.Sprintf(format, args...))
}

// Logf prints to stderr.
func (p *Process) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// Cleanup registers f to run at Close.
func (p *Process) Cleanup(f func()) { p.cleanups = append(p.cleanups, f) }

// Failed reports whether Fatalf was called.
func (p *Process) Failed() bool { return p.failed }

// TempDir makes a directory removed at Close.
func (p *Process) TempDir() string {
	dir, err := os.MkdirTemp("", "kassa-harness")
	if err != nil {
		p.Fatalf("%v", err)
	}
	p.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// Close runs the cleanups, last first.
func (p *Process) Close() {
	for i := len(p.cleanups) - 1; i >= 0; i-- {
		p.cleanups[i]()
	}
	p.cleanups = nil
}

// daemon is a started process; done is closed once it has exited and
// been waited for.
type daemon struct {
	cmd  *exec.Cmd
	done chan struct{}
}

// startDaemon starts cmd and waits for it in the background; after, when
// not nil, runs once it has exited (to close its log file), before done
// is closed.
func startDaemon(cmd *exec.Cmd, after func()) (*daemon, error) {
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	d := &daemon{cmd: cmd, done: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		if after != nil {
			after()
		}
		close(d.done)
	}()
	return d, nil
}

// errExited and errNotReady are what waitReady returns when the daemon
// exits first or timeout passes.
var (
	errExited   = errors.New("exited at start")
	errNotReady = errors.New("not ready in time")
)

// waitReady calls ready every interval until it holds (nil), the daemon
// exits (errExited) or timeout passes (errNotReady).
func (d *daemon) waitReady(timeout, interval time.Duration, ready func() bool) error {
	deadline := time.Now().Add(timeout)
	for {
		select {
		case <-d.done:
			return errExited
		default:
		}
		if time.Now().After(deadline) {
			return errNotReady
		}
		if ready() {
			return nil
		}
		time.Sleep(interval)
	}
}

// stop sends sig and waits grace for the daemon to exit; then it kills
// it and waits grace again. It reports whether the daemon exited.
func (d *daemon) stop(sig os.Signal, grace time.Duration) bool {
	_ = d.cmd.Process.Signal(sig)
	select {
	case <-d.done:
		return true
	case <-time.After(grace):
	}
	_ = d.cmd.Process.Kill()
	select {
	case <-d.done:
		return true
	case <-time.After(grace):
		return false
	}
}

// kill kills the daemon at once (SIGKILL, as a crash would) and waits
// for it.
func (d *daemon) kill() {
	_ = d.cmd.Process.Kill()
	<-d.done
}

var listenLine = regexp.MustCompile(`msg="kassa listening" addr=(\S+)`)

// StartServe starts cmd, a `kassa serve`, copies its stderr (its log)
// line by line to log, and waits up to timeout until it logs the address
// it listens on (host:port). done is closed when its stderr ends, that
// is, when it has exited; the caller then Waits for it. When it exits or
// timeout passes first (then it is killed), StartServe returns an error.
func StartServe(cmd *exec.Cmd, log io.Writer, timeout time.Duration) (addr string, done <-chan struct{}, err error) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return "", nil, err
	}
	if err := cmd.Start(); err != nil {
		return "", nil, err
	}
	listening := make(chan string, 1)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			_, _ = io.WriteString(log, line+"\n")
			if m := listenLine.FindStringSubmatch(line); m != nil {
				select {
				case listening <- m[1]:
				default:
				}
			}
		}
	}()
	select {
	case a := <-listening:
		return a, closed, nil
	case <-time.After(timeout):
		_ = cmd.Process.Kill()
		return "", closed, fmt.Errorf("kassa did not log that it listens within %v", timeout)
	case <-closed:
		return "", closed, errors.New("kassa exited at start")
	}
}
