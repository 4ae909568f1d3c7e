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

// userHZ is the clock ticks per second of /proc's CPU times (USER_HZ
// on Linux).
const userHZ = 100

// machine is the pid for which cpuTime gives the busy time of the whole
// machine, every process and the kernel's own work together.
const machine = -1

// cpuTime returns the CPU time (user and system) a process used so far:
// pid 0 is this process, machine the whole machine (0 when unknown).
func cpuTime(pid int) time.Duration {
	if pid == machine {
		stat, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0
		}
		busy, _ := busyTime(string(stat))
		return busy
	}
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
	return time.Duration(utime+stime) * time.Second / userHZ
}

// busyTime reads the machine's busy time from /proc/stat: the first
// line's user, nice, system, irq, softirq and steal (time the host gave
// to others), leaving out idle and iowait.
func busyTime(stat string) (time.Duration, error) {
	line, _, _ := strings.Cut(stat, "\n")
	fields := strings.Fields(line)
	if len(fields) < 9 || fields[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: first line %q is not the cpu line", line)
	}
	var ticks int64
	for i, f := range fields[1:9] {
		v, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		if i != 3 && i != 4 { // idle, iowait
			ticks += v
		}
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
