package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// profileDir is where the parts that support it (create, lightning,
// closed)
// write CPU profiles of the kassa server under test, one per measured
// phase, taken from its --debug-listen address (-profile; off when
// empty).
var profileDir string

// profileDuring starts a CPU profile of d (whole seconds, at least 1) of
// the server whose pprof listens on debug, written to profileDir/name;
// the returned wait blocks until it is written. Without -profile, or
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
		secs := max(int(d/time.Second), 1)
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

// cpuTime returns the CPU time (user and system) a process used so far:
// pid 0 is this process.
func cpuTime(pid int) time.Duration {
	if pid == 0 {
		var ru syscall.Rusage
		if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
			return 0
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command name (which is in parentheses and may
	// hold spaces): utime and stime are the 14th and 15th of the line.
	s := string(stat)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	const ticks = 100 // USER_HZ on Linux
	return time.Duration(utime+stime) * time.Second / ticks
}
