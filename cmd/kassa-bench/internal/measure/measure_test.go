package measure

import (
	"os"
	"runtime"
	"testing"
	"time"
)

func TestGoalMet(t *testing.T) {
	figures := map[string]float64{"steady": 100}
	for _, c := range []struct {
		g          Goal
		value      float64
		met, known bool
	}{
		{Goal{Op: ">=", Target: 0.9}, 0.9, true, true},
		{Goal{Op: ">=", Target: 0.9}, 0.86, false, true},
		{Goal{Op: "<", Target: 50}, 50, false, true},
		{Goal{Op: "<=", Target: 20}, 20, true, true},
		{Goal{Op: ">", Target: 1}, 2, true, true},
		{Goal{Op: "<=", Of: "steady"}, 99, true, true},
		{Goal{Op: "<=", Of: "steady"}, 101, false, true},
		{Goal{Op: "<=", Of: "absent"}, 1, false, false},
	} {
		met, known := c.g.Met(c.value, figures)
		if met != c.met || known != c.known {
			t.Errorf("%s with %v: met %v known %v, want %v %v", c.g, c.value, met, known, c.met, c.known)
		}
	}
}

func TestEveryGoalHasAKnownOp(t *testing.T) {
	for name, g := range Goals {
		if _, known := (Goal{Op: g.Op, Target: 1}).Met(1, nil); !known {
			t.Errorf("goal of %s: unknown op %q", name, g.Op)
		}
	}
}

// TestTallyAddsTurns: a loop's rate over a round is its timed calls
// over their time, and each process's CPU time is spread over the calls
// it was measured over (in the create part warm-ups included); an empty
// tally reads zero.
func TestTallyAddsTurns(t *testing.T) {
	var a Tally
	if p := a.Phase(); p != (Phase{}) || a.Rate() != 0 || a.Per(0) != 0 {
		t.Errorf("empty tally: %+v, rate %v, CPU per call %v", p, a.Rate(), a.Per(0))
	}
	// Two turns of 500 ms: 2,000 and 1,000 timed creates, 32 warm-ups each.
	us := time.Microsecond
	a.Add(Tally{Done: 2000, Answered: 2032, Elapsed: 500 * time.Millisecond, CPU: []time.Duration{2032 * 300 * us, 2032 * 100 * us}})
	a.Add(Tally{Done: 1000, Answered: 1032, Elapsed: 500 * time.Millisecond, CPU: []time.Duration{1032 * 300 * us, 1032 * 100 * us}})
	p := a.Phase()
	if p.Rate != 3000 || p.Server != 300*us || p.Bench != 100*us {
		t.Errorf("tally %+v: %+v, want 3000/s, 300µs and 100µs", a, p)
	}
	// Work charged after a turn adds time and CPU, no calls; a charge of
	// more processes than the tally had so far extends it.
	a.Add(Tally{Elapsed: time.Second, CPU: []time.Duration{0, 0, 3064 * 50 * us}})
	if a.Rate() != 1500 || a.Per(0) != 300*us || a.Per(2) != 50*us {
		t.Errorf("after a charge: rate %v, CPU per call %v and %v; want 1500/s, 300µs and 50µs", a.Rate(), a.Per(0), a.Per(2))
	}
}

// TestLoopChargesChargeTheLoop: in the lightning part, the work the
// processes do while they settle after a loop's turn is charged to that
// loop: their CPU time, and that time over the cores added to its time.
// This process's own (the load generator polling) is not.
func TestLoopChargesChargeTheLoop(t *testing.T) {
	self := os.Getpid()
	a := Tally{Done: 100, Answered: 100, Elapsed: time.Second, CPU: make([]time.Duration, 2)}
	// The settle is the work after "its turn": it ends when the work is
	// done, not when a loaded machine makes the work look quiet.
	Charging(LoopCharges(&a, []int{self, 0}), workWhileSettling(200*time.Millisecond))
	if a.CPU[0] < 200*time.Millisecond {
		t.Errorf("charged %v of CPU for 200 ms of work", a.CPU[0])
	}
	if a.CPU[1] != 0 {
		t.Errorf("charged the load generator %v", a.CPU[1])
	}
	if want := time.Second + a.CPU[0]/time.Duration(runtime.NumCPU()); a.Elapsed != want {
		t.Errorf("loop time %v after a charge of %v of CPU, want %v", a.Elapsed, a.CPU[0], want)
	}
	if a.Done != 100 || a.Answered != 100 {
		t.Errorf("a charge changed the calls: %+v", a)
	}
}

// TestSettleChargesTheServersWork: the work a server does while the
// servers settle is charged to it, its CPU time over the cores added to
// its time.
func TestSettleChargesTheServersWork(t *testing.T) {
	var a Tally
	Charging([]Charge{ServerCharge(os.Getpid(), &a)}, workWhileSettling(200*time.Millisecond))
	if len(a.CPU) == 0 || a.CPU[ServerCPU] < 200*time.Millisecond {
		t.Errorf("charged %v of CPU for 200 ms of work", a.CPU)
	}
	if want := a.CPU[ServerCPU] / time.Duration(runtime.NumCPU()); a.Elapsed != want {
		t.Errorf("charged %v of time for %v of CPU, want %v", a.Elapsed, a.CPU[ServerCPU], want)
	}
}

// TestBusyTime: the machine's busy time is user, nice, system, irq,
// softirq and steal of /proc/stat's first line, in USER_HZ ticks; idle
// and iowait are left out, and a line that is not the cpu line fails.
func TestBusyTime(t *testing.T) {
	stat := "cpu  100 20 30 5000 400 6 7 8 0 0\ncpu0 50 10 15 2500 200 3 3 4 0 0\n"
	got, err := BusyTime(stat)
	if want := 171 * 10 * time.Millisecond; err != nil || got != want {
		t.Errorf("busyTime = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n"} {
		if _, err := BusyTime(bad); err == nil {
			t.Errorf("busyTime(%q): no error", bad)
		}
	}
}

// workWhileSettling is a settle during which this process uses d of CPU
// time: it returns once that work is done, however loaded the machine.
// The work is measured as a charge reads it (CPUTime of the process id,
// /proc's clock ticks, not getrusage's microseconds), so the charge is
// at least d.
func workWhileSettling(d time.Duration) func() (time.Duration, time.Duration) {
	return func() (time.Duration, time.Duration) {
		self, start := os.Getpid(), time.Now()
		begin := CPUTime(self)
		for CPUTime(self)-begin < d {
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
	if p, th := Throttled(dir); p != 40 || th != 31 {
		t.Errorf("throttled = %d, %d; want 40, 31", p, th)
	}
	if p, th := Throttled(t.TempDir()); p != 0 || th != 0 {
		t.Errorf("throttled without cpu.stat = %d, %d; want 0, 0", p, th)
	}
}
