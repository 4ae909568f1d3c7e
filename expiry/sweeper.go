// Package expiry is the shared expiry sweeper of a cluster: every node
// runs one, and each round it claims a batch of invoices whose deadline
// passed more than Grace ago (their owner's timer did not fire: the
// owner is gone or stalled) and fires their deadlines through the normal
// actor path. The claims (kassa.ExpiryClaims, FOR UPDATE SKIP LOCKED on
// PostgreSQL) spread the work over the nodes; the invoice's transition is
// idempotent, so a deadline fired twice counts once. docs/decisions.md,
// "Shared expiry", states the bound this gives.
package expiry

import (
	"context"
	"log/slog"
	"time"

	"github.com/kassapay/kassa"
)

// Defaults of a Sweeper.
const (
	DefaultEvery    = 2 * time.Second
	DefaultGrace    = 5 * time.Second
	DefaultClaimTTL = 30 * time.Second
	DefaultBatch    = 100
)

// Sweeper fires the deadlines of overdue invoices whose owner is gone.
type Sweeper struct {
	Claims kassa.ExpiryClaims
	// Fire delivers an invoice's deadline (actors.System.FireDeadline).
	Fire func(ctx context.Context, storeID, invoiceID string) error
	// Holder names this node in its claims.
	Holder string
	Clock  kassa.Clock
	Log    *slog.Logger
	// Every is the time between rounds; Grace how long past its
	// deadline an invoice is left to its owner's timer; ClaimTTL how
	// long a claim keeps other sweepers off; Batch the most invoices
	// claimed in one round (a full batch starts the next round at once).
	// Zero takes the defaults above.
	Every, Grace, ClaimTTL time.Duration
	Batch                  int
}

func (s *Sweeper) defaults() {
	if s.Every <= 0 {
		s.Every = DefaultEvery
	}
	if s.Grace <= 0 {
		s.Grace = DefaultGrace
	}
	if s.ClaimTTL <= 0 {
		s.ClaimTTL = DefaultClaimTTL
	}
	if s.Batch <= 0 {
		s.Batch = DefaultBatch
	}
}

// SweepOnce claims one batch and fires its deadlines; it returns how many
// it claimed. A deadline that fails to fire is logged and left to the
// round after its claim expires.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	s.defaults()
	due, err := s.Claims.ClaimOverdue(ctx, s.Holder, s.Clock.Now().Add(-s.Grace), s.ClaimTTL, s.Batch)
	if err != nil {
		return 0, err
	}
	for _, inv := range due {
		if err := s.Fire(ctx, inv.StoreID, inv.InvoiceID); err != nil && ctx.Err() == nil {
			s.Log.Error("expiry sweeper: fire deadline", "invoice", inv.InvoiceID, "store", inv.StoreID, "err", err)
		}
	}
	if len(due) > 0 {
		s.Log.Info("expiry sweeper: fired overdue deadlines", "count", len(due), "holder", s.Holder)
	}
	return len(due), nil
}

// Run sweeps every Every until ctx ends.
func (s *Sweeper) Run(ctx context.Context) {
	s.defaults()
	for ctx.Err() == nil {
		n, err := s.SweepOnce(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Error("expiry sweeper", "err", err)
		}
		if n >= s.Batch {
			continue
		}
		done := make(chan struct{})
		cancel := s.Clock.AfterFunc(s.Every, func() { close(done) })
		select {
		case <-ctx.Done():
		case <-done:
		}
		cancel()
	}
}
