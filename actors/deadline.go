package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/kassapay/kassa"
)

// FireDeadline delivers an invoice's deadline (its expiry, or the end of
// its monitoring) through the normal actor path: to the invoice's actor,
// on whichever node runs its store in a cluster. It is for the shared
// expiry sweeper, which fires the deadlines of invoices whose owner is
// gone (docs/decisions.md, "Shared expiry"). The transition is
// idempotent: a deadline that already fired, or one not yet due, changes
// nothing and is no error.
func (s *Service) FireDeadline(ctx context.Context, storeID, invoiceID string) error {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return fmt.Errorf("fire deadline of invoice %s: %w", invoiceID, err)
	}
	if _, open := inv.Deadline(); !open {
		return nil // fired already
	}
	ev := eventOf(inv.DeadlineInput(s.cfg.Clock.Now().UTC()))
	_, err = s.rt.command(ctx, storeID, invoiceID, ev)
	if err == nil || ignorable(err) || errors.Is(err, kassa.ErrExpiryTooEarly) || errors.Is(err, kassa.ErrMonitoringNotOver) {
		return nil
	}
	return fmt.Errorf("fire deadline of invoice %s: %w", invoiceID, err)
}
