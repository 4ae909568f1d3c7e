package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/kassapay/kassa/cmd/kassa-bench/internal/measure"
)

// profileDir is where the parts that support it (create, lightning,
// closed)
// write CPU profiles of the kassa server under test, one per measured
// phase, taken from its --debug-listen address (-profile; off when
// empty).
var profileDir string

// profileDuring starts a CPU profile of d (whole seconds, at least 1, at
// most 30) of the server whose pprof listens on debug, written to
// profileDir/name; the returned wait blocks until it is written. Without -profile, or
// without a debug address, it does nothing.
func profileDuring(debug, name string, d time.Duration) (wait func()) {
	return fetchDuring(debug, "profile", name, d)
}

// traceDuring is profileDuring for a runtime/trace (go tool trace) of
// the server: its goroutines, GC and scheduling over d.
func traceDuring(debug, name string, d time.Duration) (wait func()) {
	return fetchDuring(debug, "trace", name, d)
}

// fetchDuring fetches /debug/pprof/KIND?seconds=d from debug into
// profileDir/name.
func fetchDuring(debug, kind, name string, d time.Duration) (wait func()) {
	if profileDir == "" || debug == "" {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		// kassa serve's debug listener refuses seconds above 30
		// (maxDebugSeconds): a longer phase is profiled for its first
		// 30 s.
		secs := min(max(int(d/time.Second), 1), 30)
		c := &http.Client{Timeout: d + time.Minute}
		res, err := c.Get(fmt.Sprintf("http://%s/debug/pprof/%s?seconds=%d", debug, kind, secs))
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		defer res.Body.Close()
		if res.StatusCode != http.StatusOK {
			fmt.Fprintln(os.Stderr, "profile: status", res.StatusCode)
			return
		}
		path := filepath.Join(profileDir, name)
		f, err := os.Create(path)
		if err == nil {
			_, err = io.Copy(f, res.Body)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "profile:", err)
			return
		}
		fmt.Fprintln(os.Stderr, "profile:", path)
	}()
	return func() { <-done }
}

// machine is the pid for which cpuTime gives the busy time of the whole
// machine.
const machine = measure.Machine

// cpuTime is measure.CPUTime: pid 0 is this process, machine the whole
// machine.
func cpuTime(pid int) time.Duration { return measure.CPUTime(pid) }
