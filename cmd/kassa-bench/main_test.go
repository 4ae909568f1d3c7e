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

// TestTallyAddsTurns: a server's rate over a round is its timed creates
// over their time, and its CPU per create is spread over every create
// it answered, warm-ups included; an empty tally reads zero.
func TestTallyAddsTurns(t *testing.T) {
	a := tally{}
	if p := a.phase(); p != (phase{}) {
		t.Errorf("empty tally: %+v", p)
	}
	// Two turns of 500 ms: 2,000 and 1,000 timed creates, 32 warm-ups each.
	a = tally{done: 3000, answered: 3064, elapsed: time.Second, server: 3064 * 300 * time.Microsecond, bench: 3064 * 100 * time.Microsecond}
	p := a.phase()
	if p.rate != 3000 || p.server != 300*time.Microsecond || p.bench != 100*time.Microsecond {
		t.Errorf("tally %+v: %+v, want 3000/s, 300µs and 100µs", a, p)
	}
}

// TestCombineAddsTurns: a loop's turns add up to its calls over their
// time and each process's CPU time over the calls.
func TestCombineAddsTurns(t *testing.T) {
	if l := combine(nil); l.rate != 0 || l.cpu != nil {
		t.Errorf("no turns: %+v", l)
	}
	ms := time.Millisecond
	l := combine([]loop{
		{calls: 600, elapsed: 500 * ms, cpuTotal: []time.Duration{600 * ms, 60 * ms}},
		{calls: 400, elapsed: 500 * ms, cpuTotal: []time.Duration{400 * ms, 40 * ms}},
	})
	if l.rate != 1000 || l.cpu[0] != ms || l.cpu[1] != 100*time.Microsecond {
		t.Errorf("two turns: rate %v, CPU per call %v; want 1000/s, [1ms 100µs]", l.rate, l.cpu)
	}
}

// TestSettleChargesTheServersWork: the work a server does while the
// servers settle is charged to it, its CPU time over the cores added to
// its time.
func TestSettleChargesTheServersWork(t *testing.T) {
	self := &target{pid: os.Getpid()}
	var a tally
	turns := []slot{{self, &a}}
	done := make(chan struct{})
	go func() { // 200 ms of work after "its turn"
		defer close(done)
		for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); {
		}
	}()
	settleCharged(turns, nil, nil)
	<-done
	if a.server < 100*time.Millisecond {
		t.Errorf("charged %v of CPU for about 200 ms of work", a.server)
	}
	if want := a.server / time.Duration(runtime.NumCPU()); a.elapsed != want {
		t.Errorf("charged %v of time for %v of CPU, want %v", a.elapsed, a.server, want)
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
