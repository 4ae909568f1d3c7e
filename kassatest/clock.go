package kassatest

import (
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

var _ kassa.Clock = (*TestClock)(nil)

// TestClock is a Clock that moves only when told to.
type TestClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*testTimer
}

type testTimer struct {
	at       time.Time
	f        func()
	canceled bool
}

// NewTestClock returns a TestClock that reads now.
func NewTestClock(now time.Time) *TestClock { return &TestClock{now: now} }

// Now returns the clock's time.
func (c *TestClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for when the clock has been advanced by d.
func (c *TestClock) AfterFunc(d time.Duration, f func()) func() {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &testTimer{at: c.now.Add(d), f: f}
	if d <= 0 {
		go f()
		return func() {}
	}
	c.timers = append(c.timers, t)
	return func() {
		c.mu.Lock()
		t.canceled = true
		c.mu.Unlock()
	}
}

// Advance moves the clock forward by d and fires the timers that are due.
func (c *TestClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due, rest []*testTimer
	for _, t := range c.timers {
		switch {
		case t.canceled:
		case !t.at.After(c.now):
			due = append(due, t)
		default:
			rest = append(rest, t)
		}
	}
	c.timers = rest
	c.mu.Unlock()
	for _, t := range due {
		go t.f()
	}
}

// Pending returns the number of timers that wait for the clock to move.
// Tests use it as a positive control: "the actors have armed their
// timers" before the clock is advanced past them.
func (c *TestClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, t := range c.timers {
		if !t.canceled {
			n++
		}
	}
	return n
}
