package actors

import (
	"context"
	"errors"
	"time"
)

// Recover wakes, after a start, the invoices whose deadline is due or
// near (those that passed while the service was down fire at once) and
// leaves the others passivated: the sweeper wakes each as its deadline
// approaches, and a request or a payment wakes it at once. So start-up
// time and memory do not grow with the number of open invoices. It
// returns how many invoices it woke.
func (s *Runtime) Recover(ctx context.Context) (int, error) {
	n, err := s.sweep(ctx, "")
	if err == nil {
		s.recovered.Store(true)
	}
	return n, err
}

// sweepAhead is how far ahead of its deadline the sweeper wakes a
// passivated invoice; sweepEvery is how often it looks.
const (
	sweepAhead = 2 * time.Minute
	sweepEvery = time.Minute
)

// errSweepDone stops the sweeper's scan at the first later deadline.
var errSweepDone = errors.New("sweep done")

// Sweep wakes the invoices whose deadline is within sweepAhead, so that
// passivated ones arm their timers in time: a New invoice not active
// since a restart, or one waiting a day for the end of monitoring.
// Active invoices ignore the wake-up. Sweeping every sweepEvery, shorter
// than sweepAhead, wakes every invoice before its deadline.
func (s *Runtime) Sweep(ctx context.Context) error {
	_, err := s.sweep(ctx, "")
	return err
}

// sweep wakes the invoices of storeID (every store when empty) whose
// deadline is within sweepAhead, and returns how many it woke. The scan
// of the expiry index stops at the first later deadline, so it costs what
// is due, not what is open.
func (s *Runtime) sweep(ctx context.Context, storeID string) (int, error) {
	until := s.cfg.Clock.Now().Add(sweepAhead)
	n := 0
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, owner string, deadline time.Time) error {
		if deadline.After(until) {
			return errSweepDone
		}
		if storeID == "" || owner == storeID {
			// In a cluster each node wakes the invoices of the stores
			// it runs; those of a lost node's stores once the topology
			// gives them to it.
			if remote, err := s.remoteStore(ctx, owner); err != nil || remote {
				return nil
			}
			s.actorSystem().Root.Send(s.store(owner), &invoiceCommand{invoiceID: id})
			n++
		}
		return nil
	})
	if errors.Is(err, errSweepDone) {
		err = nil
	}
	return n, err
}

// RunSweeper sweeps every sweepEvery until ctx ends.
func (s *Runtime) RunSweeper(ctx context.Context) {
	var tick func()
	tick = func() {
		if ctx.Err() != nil {
			return
		}
		if err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
			s.log.Error("sweep open invoices", "err", err)
		}
		s.cfg.Clock.AfterFunc(sweepEvery, tick)
	}
	s.cfg.Clock.AfterFunc(sweepEvery, tick)
}

// activateDueInvoices wakes a store's invoices whose deadline is near. A
// store actor that restarts after a panic has lost its invoice actors,
// and with them their timers: those due before the sweeper's next round
// are woken now, the others by the sweeper.
func (s *Runtime) activateDueInvoices(storeID string) {
	if _, err := s.sweep(context.Background(), storeID); err != nil {
		s.log.Error("wake due invoices", "store", storeID, "err", err)
	}
}
