package main

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestGoalMet(t *testing.T) {
	figures := map[string]float64{"steady": 100}
	for _, c := range []struct {
		g          goal
		value      float64
		met, known bool
	}{
		{goal{op: ">=", target: 0.9}, 0.9, true, true},
		{goal{op: ">=", target: 0.9}, 0.86, false, true},
		{goal{op: "<", target: 50}, 50, false, true},
		{goal{op: "<=", target: 20}, 20, true, true},
		{goal{op: ">", target: 1}, 2, true, true},
		{goal{op: "<=", of: "steady"}, 99, true, true},
		{goal{op: "<=", of: "steady"}, 101, false, true},
		{goal{op: "<=", of: "absent"}, 1, false, false},
	} {
		met, known := c.g.met(c.value, figures)
		if met != c.met || known != c.known {
			t.Errorf("%s with %v: met %v known %v, want %v %v", c.g, c.value, met, known, c.met, c.known)
		}
	}
}

func TestEveryGoalHasAKnownOp(t *testing.T) {
	for name, g := range goals {
		if _, known := (goal{op: g.op, target: 1}).met(1, nil); !known {
			t.Errorf("goal of %s: unknown op %q", name, g.op)
		}
	}
}

// TestTallyAddsTurns: a loop's rate over a round is its timed calls
// over their time, and each process's CPU time is spread over the calls
// it was measured over (in the create part warm-ups included); an empty
// tally reads zero.
func TestTallyAddsTurns(t *testing.T) {
	var a tally
	if p := a.phase(); p != (phase{}) || a.rate() != 0 || a.per(0) != 0 {
		t.Errorf("empty tally: %+v, rate %v, CPU per call %v", p, a.rate(), a.per(0))
	}
	// Two turns of 500 ms: 2,000 and 1,000 timed creates, 32 warm-ups each.
	us := time.Microsecond
	a.add(tally{done: 2000, answered: 2032, elapsed: 500 * time.Millisecond, cpu: []time.Duration{2032 * 300 * us, 2032 * 100 * us}})
	a.add(tally{done: 1000, answered: 1032, elapsed: 500 * time.Millisecond, cpu: []time.Duration{1032 * 300 * us, 1032 * 100 * us}})
	p := a.phase()
	if p.rate != 3000 || p.server != 300*us || p.bench != 100*us {
		t.Errorf("tally %+v: %+v, want 3000/s, 300µs and 100µs", a, p)
	}
	// Work charged after a turn adds time and CPU, no calls; a charge of
	// more processes than the tally had so far extends it.
	a.add(tally{elapsed: time.Second, cpu: []time.Duration{0, 0, 3064 * 50 * us}})
	if a.rate() != 1500 || a.per(0) != 300*us || a.per(2) != 50*us {
		t.Errorf("after a charge: rate %v, CPU per call %v and %v; want 1500/s, 300µs and 50µs", a.rate(), a.per(0), a.per(2))
	}
}

// TestLoopChargesChargeTheLoop: in the lightning part, the work the
// processes do while they settle after a loop's turn is charged to that
// loop: their CPU time, and that time over the cores added to its time.
// This process's own (the load generator polling) is not.
func TestLoopChargesChargeTheLoop(t *testing.T) {
	self := os.Getpid()
	a := tally{done: 100, answered: 100, elapsed: time.Second, cpu: make([]time.Duration, 2)}
	// The settle is the work after "its turn": it ends when the work is
	// done, not when a loaded machine makes the work look quiet.
	charging(loopCharges(&a, []int{self, 0}), workWhileSettling(200*time.Millisecond))
	if a.cpu[0] < 200*time.Millisecond {
		t.Errorf("charged %v of CPU for 200 ms of work", a.cpu[0])
	}
	if a.cpu[1] != 0 {
		t.Errorf("charged the load generator %v", a.cpu[1])
	}
	if want := time.Second + a.cpu[0]/time.Duration(runtime.NumCPU()); a.elapsed != want {
		t.Errorf("loop time %v after a charge of %v of CPU, want %v", a.elapsed, a.cpu[0], want)
	}
	if a.done != 100 || a.answered != 100 {
		t.Errorf("a charge changed the calls: %+v", a)
	}
}

// TestSettleChargesTheServersWork: the work a server does while the
// servers settle is charged to it, its CPU time over the cores added to
// its time.
func TestSettleChargesTheServersWork(t *testing.T) {
	self := &target{pid: os.Getpid()}
	var a tally
	cs, _ := slotCharges([]slot{{self, &a}})
	charging(cs, workWhileSettling(200*time.Millisecond))
	if len(a.cpu) == 0 || a.cpu[serverCPU] < 200*time.Millisecond {
		t.Errorf("charged %v of CPU for 200 ms of work", a.cpu)
	}
	if want := a.cpu[serverCPU] / time.Duration(runtime.NumCPU()); a.elapsed != want {
		t.Errorf("charged %v of time for %v of CPU, want %v", a.elapsed, a.cpu[serverCPU], want)
	}
}

// TestBusyTime: the machine's busy time is user, nice, system, irq,
// softirq and steal of /proc/stat's first line, in USER_HZ ticks; idle
// and iowait are left out, and a line that is not the cpu line fails.
func TestBusyTime(t *testing.T) {
	stat := "cpu  100 20 30 5000 400 6 7 8 0 0\ncpu0 50 10 15 2500 200 3 3 4 0 0\n"
	got, err := busyTime(stat)
	if want := 171 * 10 * time.Millisecond; err != nil || got != want {
		t.Errorf("busyTime = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := busyTime(bad); err == nil {
			t.Errorf("busyTime(%q): no error", bad)
		}
	}
}

// workWhileSettling is a settle during which this process uses d of CPU
// time: it returns once that work is done, however loaded the machine.
// The work is measured as a charge reads it (cpuTime of the process id,
// /proc's clock ticks, not getrusage's microseconds), so the charge is
// at least d.
func workWhileSettling(d time.Duration) func() (time.Duration, time.Duration) {
	return func() (time.Duration, time.Duration) {
		self, start := os.Getpid(), time.Now()
		begin := cpuTime(self)
		for cpuTime(self)-begin < d {
			for i := 0; i < 1e5; i++ { // spin a while between reads
			}
		}
		return time.Since(start), d
	}
}

// TestThrottledReadsCPUStat: a cgroup's enforcement periods and the
// throttled ones are read from its cpu.stat, the same lines in v1 and
// v2; a cgroup without one reads zero.
func TestThrottledReadsCPUStat(t *testing.T) {
	dir := t.TempDir()
	stat := "usage_usec 123\nnr_periods 40\nnr_throttled 31\nthrottled_usec 9000\n"
	if err := os.WriteFile(dir+"/cpu.stat", []byte(stat), 0o644); err != nil {
		t.Fatal(err)
	}
	var c cpuCgroups
	if p, th := c.throttled(dir); p != 40 || th != 31 {
		t.Errorf("throttled = %d, %d; want 40, 31", p, th)
	}
	if p, th := c.throttled(t.TempDir()); p != 0 || th != 0 {
		t.Errorf("throttled without cpu.stat = %d, %d; want 0, 0", p, th)
	}
}
