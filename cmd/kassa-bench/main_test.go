package main

import "testing"

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
