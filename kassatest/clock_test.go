package kassatest

import (
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
