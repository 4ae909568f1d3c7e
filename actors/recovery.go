package actors

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/expiry"
)

// sweepAhead is how far ahead of its deadline the deadline sweeper
// claims an invoice and fires it early, which wakes a passivated invoice
// so that its own timer fires on time; an invoice past its expiry keeps
// its actor only while its next deadline is this near.
const sweepAhead = 2 * time.Minute

// sweepEvery is the time between the sweeper's rounds.
const sweepEvery = expiry.DefaultEvery

// sweeper is this node's deadline sweeper (package expiry) over the
// store's deadline index: the one mechanism that fires the deadlines of
// invoices whose actor is not running, in both modes (docs/decisions.md,
// "One deadline mechanism"). Pebble and PostgreSQL both keep the index.
func (s *Runtime) sweeper() (*expiry.Sweeper, error) {
	claims, ok := s.cfg.Reader.(kassa.ExpiryClaims)
	if !ok {
		return nil, fmt.Errorf("the store %T keeps no deadline index (kassa.ExpiryClaims)", s.cfg.Reader)
	}
	return &expiry.Sweeper{Claims: claims, Fire: s.fireDeadline, Holder: s.cluster.claimHolder(), Clock: s.cfg.Clock,
		Log: s.log, Ahead: sweepAhead}, nil
}

// RunSweeper runs the deadline sweeper until ctx ends: every sweepEvery it
// claims the invoices whose deadline is within sweepAhead (or past) and
// fires them through FireDeadline.
func (s *Runtime) RunSweeper(ctx context.Context) {
	sw, err := s.sweeper()
	if err != nil {
		s.log.Error("deadline sweeper", "err", err)
		return
	}
	go sw.Run(ctx)
}

// Recover runs, after a start, one round of the deadline sweeper: the
// deadlines that passed while the service was down fire at once, and
// the invoices due within sweepAhead wake and arm their timers. The other
// open invoices stay passivated (the sweeper wakes each as its deadline
// approaches, and a request or a payment wakes it at once), so start-up
// time and memory do not grow with their number. It returns how many
// invoices the round claimed; more than a batch are left to the
// sweeper's next rounds, which follow at once.
//
// A single node is its store's only claimer, so the claims its store
// still holds are its last run's, whose timers died with it: they are
// released first (PostgreSQL keeps them across runs; Pebble's die with
// the process). In a cluster the members that expel a lost node release
// its claims, and a node that joins wakes the invoices due soon of the
// stores it owns, whose timers ran where those stores ran before.
func (s *Runtime) Recover(ctx context.Context) (int, error) {
	sw, err := s.sweeper()
	if err != nil {
		return 0, err
	}
	if r, ok := s.cfg.Reader.(expiryClaimReleaser); ok && s.cluster.clusterState() == nil {
		n, err := r.ReleaseExpiryClaims(ctx)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			s.log.Info("released the deadline claims of the last run", "claims", n)
		}
	}
	n, err := sw.SweepOnce(ctx)
	if err != nil {
		return n, err
	}
	s.recovered.Store(true)
	if s.cluster.clusterState() != nil {
		// A node that joins takes stores over from the others. Their
		// invoices due soon had armed their timers where those stores
		// ran, and that node's claims on them still run: wake them here,
		// as the owner of a lost node's stores does (sweepTakenOver).
		if _, err := s.wakeDue(ctx, ""); err != nil {
			s.log.Error("wake the due invoices of the stores this node owns", "err", err)
		}
	}
	return n, nil
}

// expiryClaimReleaser is a store whose expiry claims outlive the process
// that took them (PostgreSQL).
type expiryClaimReleaser interface {
	// ReleaseExpiryClaims drops every live expiry claim and says how
	// many it dropped.
	ReleaseExpiryClaims(ctx context.Context) (int, error)
}

// errSweepDone stops the scan of wakeDue at the first later deadline.
var errSweepDone = errors.New("sweep done")

// wakeDue wakes at once the invoices of storeID (every store when empty)
// whose deadline is within sweepAhead, on the stores this node runs, and
// returns how many it woke. It is for stores whose invoice actors were
// lost with their timers: a store actor restarted after a panic, the
// stores of a node that left the cluster. The sweeper's claims on those
// invoices may still run, so it would reach them only after their
// deadline; woken, each arms its own timer, which fires through the
// same path as the sweeper. The scan of the deadline index stops at the
// first later deadline, so it costs what is due, not what is open.
func (s *Runtime) wakeDue(ctx context.Context, storeID string) (int, error) {
	until := s.cfg.Clock.Now().Add(sweepAhead)
	n := 0
	err := s.cfg.Reader.OpenInvoices(ctx, func(id, owner string, deadline time.Time) error {
		if deadline.After(until) {
			return errSweepDone
		}
		if storeID == "" || owner == storeID {
			// In a cluster each node wakes the invoices of the stores
			// it runs.
			if remote, err := s.cluster.remoteStore(ctx, owner); err != nil || remote {
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

// activateDueInvoices wakes a store's invoices whose deadline is near. A
// store actor that restarts after a panic has lost its invoice actors,
// and with them their timers.
func (s *Runtime) activateDueInvoices(storeID string) {
	if _, err := s.wakeDue(context.Background(), storeID); err != nil {
		s.log.Error("wake due invoices", "store", storeID, "err", err)
	}
}
