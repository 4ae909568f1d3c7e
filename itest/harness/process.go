package harness

import (
	"fmt"
	"os"
)

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
