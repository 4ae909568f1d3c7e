package persistence

import (
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
)

// ErrFailed matches the error of every read and write once a write to the
// disk failed (see DB.Err). docs/decisions.md, "A failed disk write stops
// the process", says why nothing is retried in place.
var ErrFailed = errors.New("persistence: storage failed")

// failure latches the first write error that Pebble cannot recover from.
// Pebble answers a failed WAL write or sync with Logger.Fatalf: its write
// pipeline keeps the error for good, and the batch it failed to make
// durable is already visible to reads. So once it happened, the store
// answers every call with the failure, until the process restarts and
// Pebble replays what the disk really holds.
type failure struct {
	mu   sync.Mutex
	err  error
	done chan struct{}
	// stuck is set when a Pebble background goroutine failed: it is parked
	// for good, so Close must not wait for Pebble.
	stuck bool
}

func newFailure() *failure { return &failure{done: make(chan struct{})} }

// set records cause unless a failure was recorded before, and returns the
// failure that stands.
func (f *failure) set(cause error) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = &storageError{cause: cause, public: kassa.Errorf(kassa.Unavailable, "storage failed: %s; "+
			"the request was not completed. The service restarts to recover: retry shortly", describe(cause))}
		close(f.done)
	}
	return f.err
}

func (f *failure) get() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.err
}

// storageError is the failure as callers see it: an Unavailable
// kassa.Error (so the API answers 503 with msg), ErrFailed, and the cause
// from the file system for errors.Is and the log.
type storageError struct {
	cause  error
	public *kassa.Error
}

func (e *storageError) Error() string   { return e.public.Message + " (" + e.cause.Error() + ")" }
func (e *storageError) Unwrap() []error { return []error{e.public, ErrFailed, e.cause} }

// describe names what went wrong for people, without file paths.
func describe(cause error) string {
	switch {
	case errors.Is(cause, syscall.ENOSPC):
		return "the disk is full"
	case errors.Is(cause, syscall.EDQUOT):
		return "the disk quota is exhausted"
	case errors.Is(cause, syscall.EROFS):
		return "the disk is read-only"
	case errors.Is(cause, syscall.EIO):
		return "the disk reported an I/O error"
	}
	return "a write to the disk failed"
}

// isDiskError reports whether err comes from a disk that refuses writes.
func isDiskError(err error) bool {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EDQUOT, syscall.EROFS, syscall.EIO} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// fatal is the panic of pebbleLogger.Fatalf on a path that guarded
// recovers.
type fatal struct{ err error }

// guarded runs fn, a call into Pebble that may write, and turns the panic
// of pebbleLogger.Fatalf back into the failure it recorded.
func guarded(fn func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(fatal)
			if !ok {
				panic(r)
			}
			err = f.err
		}
	}()
	return fn()
}

// onGuardedPath reports whether the calling goroutine runs inside guarded,
// which recovers the panic of Fatalf.
func onGuardedPath() bool {
	pcs := make([]uintptr, 256)
	frames := runtime.CallersFrames(pcs[:runtime.Callers(2, pcs)])
	for {
		f, more := frames.Next()
		if f.Function == "github.com/kassapay/kassa/persistence.guarded" {
			return true
		}
		if !more {
			return false
		}
	}
}

// fatalError is what Fatalf was told, with the error among its arguments
// as the cause.
type fatalError struct {
	msg   string
	cause error
}

func (e *fatalError) Error() string { return e.msg }
func (e *fatalError) Unwrap() error { return e.cause }

// pebbleLogger routes Pebble's log to slog and turns its Fatalf into the
// store's failure.
type pebbleLogger struct {
	log  *slog.Logger
	fail *failure
}

func (l pebbleLogger) logger() *slog.Logger {
	if l.log == nil {
		return slog.Default()
	}
	return l.log
}

// Infof logs at debug level: Pebble is chatty.
func (l pebbleLogger) Infof(format string, args ...any) {
	l.logger().Debug(fmt.Sprintf(format, args...), "component", "pebble")
}

// Errorf logs an error.
func (l pebbleLogger) Errorf(format string, args ...any) {
	l.logger().Error(fmt.Sprintf(format, args...), "component", "pebble")
}

// Fatalf is Pebble's "cannot go on": a failed WAL write or sync, a failed
// MANIFEST update. It must not return. It records the failure, then
// panics where guarded recovers it (a commit, Open), so that the caller
// gets the error at once; in Pebble's own background goroutines it parks
// the goroutine instead of crashing the process, and the failure makes
// the service stop cleanly.
func (l pebbleLogger) Fatalf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	l.logger().Error(msg, "component", "pebble")
	var cause error = &fatalError{msg: msg}
	for _, a := range args {
		if e, ok := a.(error); ok {
			cause = &fatalError{msg: msg, cause: e}
			break
		}
	}
	err := l.fail.set(cause)
	if onGuardedPath() {
		panic(fatal{err: err})
	}
	l.fail.mu.Lock()
	l.fail.stuck = true
	l.fail.mu.Unlock()
	select {}
}

// eventListener latches a failure when a flush or compaction fails
// because of the disk: Pebble retries those, but a memtable that cannot
// be flushed stalls every later commit, which would hang instead of
// answering.
func eventListener(l pebbleLogger) *pebble.EventListener {
	return &pebble.EventListener{
		BackgroundError: func(err error) {
			if isDiskError(err) {
				if l.fail.get() == nil {
					l.logger().Error("pebble background write failed", "component", "pebble", "err", err.Error())
				}
				l.fail.set(err)
			} else if !strings.Contains(err.Error(), "cancelled") {
				l.logger().Warn("pebble background error", "component", "pebble", "err", err.Error())
			}
		},
	}
}
