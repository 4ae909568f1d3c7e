// Package measure holds what kassa-bench measures with and judges by,
// apart from the processes it measures: a process's or the machine's
// CPU time from /proc, the tally of a closed loop's turns and the work
// charged to them while the servers settle, a cgroup's throttled
// periods, and the goal of each figure. It imports only the standard
// library, so its tests link in a moment (the fast tier).
package measure

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// UserHZ is the clock ticks per second of /proc's CPU times (USER_HZ
// on Linux).
const UserHZ = 100

// Machine is the pid for which CPUTime gives the busy time of the whole
// machine, every process and the kernel's own work together.
const Machine = -1

// CPUTime returns the CPU time (user and system) a process used so far:
// pid 0 is this process, Machine the whole machine (0 when unknown).
func CPUTime(pid int) time.Duration {
	if pid == Machine {
		stat, err := os.ReadFile("/proc/stat")
		if err != nil {
			return 0
		}
		busy, _ := BusyTime(string(stat))
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
	return time.Duration(utime+stime) * time.Second / UserHZ
}

// BusyTime reads the machine's busy time from /proc/stat: the first
// line's user, nice, system, irq, softirq and steal (time the host gave
// to others), leaving out idle and iowait.
func BusyTime(stat string) (time.Duration, error) {
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
	return time.Duration(ticks) * time.Second / UserHZ, nil
}

// Throttled reads how many enforcement periods cgroup dir has had and in
// how many it was throttled (its cpu.stat, the same lines in cgroup v1
// and v2); a cgroup without one reads zero.
func Throttled(dir string) (periods, throttled int64) {
	data, _ := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	for _, line := range strings.Split(string(data), "\n") {
		k, v, _ := strings.Cut(line, " ")
		n, _ := strconv.ParseInt(v, 10, 64)
		switch k {
		case "nr_periods":
			periods = n
		case "nr_throttled":
			throttled = n
		}
	}
	return periods, throttled
}

// Phase is a measured peak: the rate, and the CPU time per request of
// the server and of the load generator, which share the machine's
// cores.
type Phase struct {
	Rate          float64
	Server, Bench time.Duration
}

func (p Phase) String() string {
	return fmt.Sprintf("%.0f/s (CPU per create: server %v, bench %v)", p.Rate, p.Server.Round(time.Microsecond), p.Bench.Round(time.Microsecond))
}

// Tally adds up the turns of one closed loop in a round (and the work
// charged to them): the calls timed and their time, the calls answered
// over which the CPU times were measured (warm-ups included when the
// measure spans them), and the CPU time of each process the part
// measures, in the order it lists them. The create part measures the
// server and the load generator; the lightning part lnd, Kassa, the load
// generator and the machine.
type Tally struct {
	Done, Answered int64
	Elapsed        time.Duration
	CPU            []time.Duration
	// Charged is the part of Elapsed added for work charged after turns.
	Charged time.Duration
}

// Add adds b, a turn or the work charged to one, to a.
func (a *Tally) Add(b Tally) {
	a.Done += b.Done
	a.Answered += b.Answered
	a.Elapsed += b.Elapsed
	a.Charged += b.Charged
	if n := len(b.CPU) - len(a.CPU); n > 0 {
		a.CPU = append(a.CPU, make([]time.Duration, n)...)
	}
	for i, c := range b.CPU {
		a.CPU[i] += c
	}
}

// Rate is the calls timed over their time; zero without time.
func (a Tally) Rate() float64 {
	if a.Elapsed <= 0 {
		return 0
	}
	return float64(a.Done) / a.Elapsed.Seconds()
}

// Per is the CPU time of process i per call answered; zero without
// calls.
func (a Tally) Per(i int) time.Duration {
	if a.Answered == 0 || i >= len(a.CPU) {
		return 0
	}
	return a.CPU[i] / time.Duration(a.Answered)
}

// The create part's processes in a tally.
const (
	ServerCPU = iota
	BenchCPU
)

// Phase is the create part's tally as a rate and CPU times per request.
func (a Tally) Phase() Phase {
	if a.Elapsed <= 0 || a.Answered == 0 {
		return Phase{}
	}
	return Phase{Rate: a.Rate(), Server: a.Per(ServerCPU), Bench: a.Per(BenchCPU)}
}

// Charge is a process whose CPU time while the servers settle goes to
// Slot of a tally; Timed also adds it, over the cores, to the tally's
// time (the share of a turn that work would have taken on the machine's
// cores).
type Charge struct {
	Pid   int
	A     *Tally
	Slot  int
	Timed bool
}

// ServerCharge charges server pid's work while the servers settle to
// its own tally a, in the server's slot and in time: what a server
// defers after its turn (flushes, compactions) is its own cost.
func ServerCharge(pid int, a *Tally) Charge {
	return Charge{Pid: pid, A: a, Slot: ServerCPU, Timed: true}
}

// LoopCharges charges a, the loop that just ran, with what each of pids
// does while the servers settle (pids in a's slot order): they share
// lnd, so all of it is that loop's. This process (pid 0, the load
// generator) only polls meanwhile and is not charged; the machine's busy
// time is, but not again as time.
func LoopCharges(a *Tally, pids []int) []Charge {
	var cs []Charge
	for i, pid := range pids {
		if pid != 0 {
			cs = append(cs, Charge{Pid: pid, A: a, Slot: i, Timed: pid != Machine})
		}
	}
	return cs
}

// Charging runs wait and charges each of cs with the CPU time its
// process used from before wait began to after it returned.
func Charging(cs []Charge, wait func() (waited, used time.Duration)) (waited, used time.Duration) {
	before := make([]time.Duration, len(cs))
	for i, c := range cs {
		before[i] = CPUTime(c.Pid)
	}
	waited, used = wait()
	cores := time.Duration(runtime.NumCPU())
	for i, c := range cs {
		ch := Tally{CPU: make([]time.Duration, c.Slot+1)}
		ch.CPU[c.Slot] = CPUTime(c.Pid) - before[i]
		if c.Timed {
			ch.Elapsed = ch.CPU[c.Slot] / cores
			ch.Charged = ch.Elapsed
		}
		c.A.Add(ch)
	}
	return waited, used
}
