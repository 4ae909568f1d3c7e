package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kassapay/kassa"
)

// FireDeadline delivers an invoice's deadline (its expiry, or the end of
// its monitoring) to the invoice's actor, on whichever node runs its
// store in a cluster. It is how the deadline sweeper (package expiry)
// fires, and the actor handles it in deadline, as it does its own
// timer's (docs/decisions.md, "One deadline mechanism"). A deadline not
// yet due wakes the invoice, which arms its timer for it; one that
// already fired changes nothing. Neither is an error.
func (s *Service) FireDeadline(ctx context.Context, storeID, invoiceID string) error {
	return s.rt.fireDeadline(ctx, storeID, invoiceID)
}

// fireDeadline is FireDeadline, which the runtime's sweeper calls.
func (s *Runtime) fireDeadline(ctx context.Context, storeID, invoiceID string) error {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return fmt.Errorf("fire deadline of invoice %s: %w", invoiceID, err)
	}
	if _, open := inv.Deadline(); !open {
		return nil // fired already
	}
	ev := eventOf(inv.DeadlineInput(s.cfg.Clock.Now().UTC()))
	_, err = s.command(ctx, storeID, invoiceID, ev)
	if err == nil || ignorable(err) || notDue(err) {
		return nil
	}
	return fmt.Errorf("fire deadline of invoice %s: %w", invoiceID, err)
}

// deadline is the one place an invoice's deadline fires: its own timer
// calls it, and so does an ExpiryReached or MonitoringEnded event, which
// the deadline sweeper sends through FireDeadline. It applies the input
// the invoice's state calls for at at. A deadline not yet due (a sweeper
// early on purpose, or a clock behind) arms the timer for it; an invoice
// that waits for no deadline any more answers ErrInvoiceNotOpen, which
// callers ignore.
func (a *invoiceActor) deadline(ctx actor.Context, parent context.Context, at time.Time) (*kassa.Invoice, error) {
	if _, open := a.inv.Deadline(); !open && a.inv.ID != "" {
		inv := a.inv
		return &inv, kassa.ErrInvoiceNotOpen
	}
	inv, err := a.apply(ctx, parent, a.inv.DeadlineInput(at))
	if notDue(err) {
		a.arm(ctx)
	}
	return inv, err
}

// notDue reports whether err refused a deadline input that came before
// the deadline.
func notDue(err error) bool {
	return errors.Is(err, kassa.ErrExpiryTooEarly) || errors.Is(err, kassa.ErrMonitoringNotOver)
}
