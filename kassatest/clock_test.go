package kassatest

import (
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

var epoch = time.Date(2025, 11, 21, 9, 30, 0, 0, time.UTC)

func TestTestClock(t *testing.T) {
	c := NewTestClock(epoch)
	var fired, canceled atomic.Int32
	done := make(chan struct{}, 2)
	c.AfterFunc(kassa.DefaultInvoiceExpiry, func() { fired.Add(1); done <- struct{}{} })
	cancel := c.AfterFunc(time.Hour, func() { canceled.Add(1) })
	cancel()

	c.Advance(kassa.DefaultInvoiceExpiry - time.Millisecond)
	if fired.Load() != 0 {
		t.Fatal("the timer fired early")
	}
	c.Advance(time.Millisecond)
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the timer did not fire at its time")
	}
	if !c.Now().Equal(epoch.Add(kassa.DefaultInvoiceExpiry)) {
		t.Errorf("Now = %s", c.Now())
	}
	c.Advance(2 * time.Hour)
	c.Advance(time.Hour) // a fired timer does not fire again
	if fired.Load() != 1 || canceled.Load() != 0 {
		t.Errorf("fired %d times, canceled timer %d times", fired.Load(), canceled.Load())
	}

	c.AfterFunc(0, func() { done <- struct{}{} })
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a timer due now did not fire")
	}
}

func TestTestClockAdvanceToNext(t *testing.T) {
	c := NewTestClock(epoch)
	if _, ok := c.Next(); ok {
		t.Fatal("Next reports a timer on a new clock")
	}
	if d, ok := c.AdvanceToNext(); ok || d != 0 || !c.Now().Equal(epoch) {
		t.Fatalf("AdvanceToNext with no timer: %v %v, now %s", d, ok, c.Now())
	}
	fired := make(chan string, 3)
	c.AfterFunc(3*time.Minute, func() { fired <- "3m" })
	c.AfterFunc(time.Minute, func() { fired <- "1m" })
	cancel := c.AfterFunc(30*time.Second, func() { fired <- "canceled" })
	cancel()
	if at, ok := c.Next(); !ok || !at.Equal(epoch.Add(time.Minute)) {
		t.Fatalf("Next = %s %v, want the 1-minute timer (a canceled one does not count)", at, ok)
	}
	if d, ok := c.AdvanceToNext(); !ok || d != time.Minute {
		t.Fatalf("first step %v %v, want exactly 1m", d, ok)
	}
	if got := <-fired; got != "1m" {
		t.Fatalf("fired %s first", got)
	}
	if d, ok := c.AdvanceToNext(); !ok || d != 2*time.Minute || !c.Now().Equal(epoch.Add(3*time.Minute)) {
		t.Fatalf("second step %v %v, now %s", d, ok, c.Now())
	}
	if got := <-fired; got != "3m" {
		t.Fatalf("fired %s second", got)
	}
	if _, ok := c.AdvanceToNext(); ok || c.Pending() != 0 {
		t.Fatalf("a timer left after both fired: %d pending", c.Pending())
	}
}

// StepUntil moves time only by armed timers: a condition that a timer
// drives is reached at that timer's time, not later.
func TestTestClockStepUntil(t *testing.T) {
	c := NewTestClock(epoch)
	var done atomic.Bool
	// A chain of timers, as a sweeper re-arms itself each round; the fifth
	// round does the work.
	var round func(n int)
	round = func(n int) {
		if n == 5 {
			done.Store(true)
			return
		}
		c.AfterFunc(time.Minute, func() { round(n + 1) })
	}
	round(0)
	c.StepUntil(t, "the fifth round", epoch.Add(time.Hour), done.Load)
	if !c.Now().Equal(epoch.Add(5 * time.Minute)) {
		t.Fatalf("now %s, want exactly five rounds after the start", c.Now().Sub(epoch))
	}
}

// fatalTB records the failure of a helper under test instead of failing
// the test that runs it.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// A condition no timer drives fails once the clock passes the limit,
// instead of being carried there by blind steps.
func TestTestClockStepUntilFailsPastTheLimit(t *testing.T) {
	c := NewTestClock(epoch)
	var tick func()
	tick = func() { c.AfterFunc(time.Minute, tick) } // a sweeper that does nothing
	tick()
	f := &fatalTB{TB: t}
	end := make(chan struct{})
	go func() {
		defer close(end)
		c.StepUntil(f, "nothing", epoch.Add(10*time.Minute), func() bool { return false })
	}()
	<-end
	if !strings.Contains(f.msg, "the clock passed") {
		t.Fatalf("StepUntil ended with %q", f.msg)
	}
}
