// Package expiry is the deadline sweeper: the one mechanism, on a single
// node and in a cluster, by which an invoice whose actor is not running
// (passivated, lost with its store actor, or on a node that is gone)
// still reaches its deadline. Every node runs one; each round it claims,
// from the store's deadline index (kassa.ExpiryClaims: Pebble's iop/
// keys, whose claims the single node always wins; PostgreSQL's
// open_invoices, FOR UPDATE SKIP LOCKED), a batch of invoices whose
// deadline is near or past, and fires each through the invoice actor
// (actors.Service.FireDeadline), the path of the actor's own timer: a
// deadline not yet due wakes the invoice, which arms its timer so that
// it fires on time; one that is due fires. The transition is idempotent,
// so a deadline fired twice counts once. docs/decisions.md, "One
// deadline mechanism", states the bounds this gives.
package expiry

import (
	"context"
	"log/slog"
	"sync"
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

// fireConcurrency is how many deadlines of a round fire at once.
const fireConcurrency = 16

// Sweeper fires the deadlines of overdue invoices whose owner is gone.
type Sweeper struct {
	Claims kassa.ExpiryClaims
	// Fire delivers an invoice's deadline (actors.Service.FireDeadline).
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
	// Ahead, when positive, is how long before its deadline an invoice
	// is claimed and fired: early, which wakes it and arms its own
	// timer, so that it fires on time. Its claim runs until Grace past
	// its deadline, however early it was claimed, when a deadline its
	// timer did not fire (the owner gone) is claimed again. Zero claims
	// only deadlines more than Grace past.
	Ahead time.Duration
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

// SweepOnce claims one batch and fires its deadlines, several at once;
// it returns how many it claimed, once all have fired. A deadline that fails to fire is logged and left to the
// round after its claim expires.
func (s *Sweeper) SweepOnce(ctx context.Context) (int, error) {
	s.defaults()
	overdue, ttl := s.Clock.Now().Add(-s.Grace), s.ClaimTTL
	if s.Ahead > 0 {
		// Within Ahead, its end included (the index counts
		// milliseconds); early is harmless, it wakes the invoice.
		overdue, ttl = s.Clock.Now().Add(s.Ahead+time.Millisecond), s.Grace
	}
	due, err := s.Claims.ClaimOverdue(ctx, s.Holder, overdue, ttl, s.Batch)
	if err != nil {
		return 0, err
	}
	// Fired side by side: each due one is a synced commit, which
	// commits of other invoices share (a backlog after a long stop).
	sem := make(chan struct{}, fireConcurrency)
	var wg sync.WaitGroup
	for _, inv := range due {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if err := s.Fire(ctx, inv.StoreID, inv.InvoiceID); err != nil && ctx.Err() == nil {
				s.Log.Error("expiry sweeper: fire deadline", "invoice", inv.InvoiceID, "store", inv.StoreID, "err", err)
			}
		}()
	}
	wg.Wait()
	if len(due) > 0 {
		s.Log.Debug("expiry sweeper: fired deadlines", "count", len(due), "holder", s.Holder)
	}
	return len(due), nil
}

// Run sweeps every Every until ctx ends. Each round begins Every after
// the one before began (at once after a full batch, or a round slower
// than Every): the wait is armed before the round, so that the clock
// moving while a round fires (a test's clock) is not missed.
func (s *Sweeper) Run(ctx context.Context) {
	s.defaults()
	for ctx.Err() == nil {
		done := make(chan struct{})
		cancel := s.Clock.AfterFunc(s.Every, func() { close(done) })
		n, err := s.SweepOnce(ctx)
		if err != nil && ctx.Err() == nil {
			s.Log.Error("expiry sweeper", "err", err)
		}
		if n < s.Batch {
			select {
			case <-ctx.Done():
			case <-done:
			}
		}
		cancel()
	}
}
