package actors

import (
	"sync"
	"sync/atomic"

	"github.com/kassapay/kassa"
)

// atOnce makes n calls at once, call(i) being caller i's, and returns
// each caller's answer and error.
func atOnce[T any](n int, call func(i int) (T, error)) ([]T, []error) {
	got := make([]T, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { got[i], errs[i] = call(i) })
	}
	wg.Wait()
	return got, errs
}

// refuseNextCommit makes j refuse its next commit as the journal refuses
// an event sequence number another activation already took; the flag
// says whether it did.
func refuseNextCommit(j *faultyJournal) *atomic.Bool {
	var refused atomic.Bool
	j.commitErr = func() error {
		if refused.CompareAndSwap(false, true) {
			return kassa.Errorf(kassa.Conflict, "injected: event sequence number already taken")
		}
		return nil
	}
	return &refused
}
