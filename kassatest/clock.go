package kassatest

import (
	"sync"
	"testing"
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
	c.fireLocked()
}

// Next returns when the earliest pending timer is due, and false when no
// timer is pending.
func (c *TestClock) Next() (time.Time, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextLocked()
}

// AdvanceToNext moves the clock exactly to the earliest pending timer and
// fires every timer due then. With no timer pending it moves nothing and
// returns false: time passes in a test only for a timer some code armed,
// so a wait for something no timer drives fails instead of being carried
// by the clock.
func (c *TestClock) AdvanceToNext() (time.Duration, bool) {
	c.mu.Lock()
	at, ok := c.nextLocked()
	if !ok {
		c.mu.Unlock()
		return 0, false
	}
	d := at.Sub(c.now)
	c.now = at
	c.fireLocked()
	return d, true
}

// StepUntil advances the clock one pending timer at a time until done
// reports true, giving the fired timers' goroutines a moment between
// steps. It fails the test, naming what it waited for, when done is
// still false after two minutes or when the clock has passed limit (a
// timer the test expected was never armed).
func (c *TestClock) StepUntil(t testing.TB, what string, limit time.Time, done func() bool) {
	t.Helper()
	WaitUntil(t, what, func() bool {
		if done() {
			return true
		}
		if c.Now().After(limit) {
			t.Fatalf("%s: the clock passed %s and it has not happened", what, limit.Format(time.RFC3339))
		}
		c.AdvanceToNext()
		// The fired timers run in their own goroutines, and a timer may be
		// armed in a moment: let them run before the next step.
		time.Sleep(2 * time.Millisecond)
		return done()
	})
}

func (c *TestClock) nextLocked() (time.Time, bool) {
	var at time.Time
	ok := false
	for _, t := range c.timers {
		if !t.canceled && (!ok || t.at.Before(at)) {
			at, ok = t.at, true
		}
	}
	return at, ok
}

// fireLocked starts the timers due at c.now and unlocks c.mu.
func (c *TestClock) fireLocked() {
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
