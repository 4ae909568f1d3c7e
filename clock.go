package kassa

import "time"

// Clock tells the time. Domain and actor code take it injected, so that
// tests of the 15-minute expiry run in milliseconds.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has passed and returns
	// a function that cancels the call.
	AfterFunc(d time.Duration, f func()) (cancel func())
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns the current time.
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc calls f after d.
func (SystemClock) AfterFunc(d time.Duration, f func()) func() {
	t := time.AfterFunc(d, f)
	return func() { t.Stop() }
}
