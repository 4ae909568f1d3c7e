package actors

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// Recover activates every invoice that waits for a timer, so that each
// re-arms it with the time left; those already due fire at once.
func (s *System) Recover(ctx context.Context) (int, error) {
	n := 0
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, storeID string, _ time.Time) error {
		s.as.Root.Send(s.store(storeID), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		n++
		return nil
	})
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
// passivated ones (waiting a day for the end of monitoring) arm their
// timers in time. Active invoices ignore the wake-up.
func (s *System) Sweep(ctx context.Context) error {
	until := s.cfg.Clock.Now().Add(sweepAhead)
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, storeID string, deadline time.Time) error {
		if deadline.After(until) {
			return errSweepDone
		}
		s.as.Root.Send(s.store(storeID), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		return nil
	})
	if errors.Is(err, errSweepDone) {
		return nil
	}
	return err
}

// RunSweeper sweeps every sweepEvery until ctx ends.
func (s *System) RunSweeper(ctx context.Context) {
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

// activateOpenInvoices re-activates a store's invoices that wait for a
// timer. A store actor that restarts after a panic has lost its invoice
// actors, and with them their timers.
func (s *System) activateOpenInvoices(ctx actor.Context, storeID string) {
	err := s.cfg.Reader.OpenInvoices(context.Background(), func(id, owner string, _ time.Time) error {
		if owner == storeID {
			ctx.Send(ctx.Self(), &invoiceCommand{ctx: context.Background(), invoiceID: id})
		}
		return nil
	})
	if err != nil {
		s.log.Error("re-activate open invoices", "store", storeID, "err", err)
	}
}
