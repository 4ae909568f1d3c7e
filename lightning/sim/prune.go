package sim

import (
	"context"
	"encoding/json"
	"time"
)

// A node made by New keeps its invoices in memory, so it prunes them:
// an invoice leaves memory once settled, cancelled or expired, and only
// the last closedKeep of those are remembered (to refuse a second payment
// with the right error and to answer Preimage), so that memory follows
// the open invoices, not every invoice ever made. A node made by Open
// keeps every invoice in its store and nothing in memory.
const (
	closedKeep    = 10_000
	sweepInterval = time.Minute
)

// closedState says how an invoice closed.
type closedState uint8

const (
	closedSettled closedState = iota + 1
	closedCancelled
	closedExpired
)

// closedInvoice is what a pruning node remembers of a closed invoice.
type closedInvoice struct {
	state     closedState
	preimage  string
	expiresAt time.Time
}

// closedSet remembers the last closedKeep closed invoices, oldest first
// out. n.mu guards it.
type closedSet struct {
	byHash map[string]closedInvoice
	order  []string
	next   int
}

func newClosedSet() *closedSet { return &closedSet{byHash: map[string]closedInvoice{}} }

func (s *closedSet) add(hash string, c closedInvoice) {
	if _, ok := s.byHash[hash]; ok {
		s.byHash[hash] = c
		return
	}
	if len(s.order) < closedKeep {
		s.order = append(s.order, hash)
	} else {
		delete(s.byHash, s.order[s.next])
		s.order[s.next] = hash
		s.next = (s.next + 1) % closedKeep
	}
	s.byHash[hash] = c
}

// closeInvoice takes a closed invoice out of a pruning node's memory;
// n.mu must be held.
func (n *Node) closeInvoice(ctx context.Context, hash string, rec *invoiceRecord, state closedState) {
	if n.closed == nil {
		return
	}
	n.closed.add(hash, closedInvoice{state: state, preimage: rec.Preimage, expiresAt: rec.ExpiresAt})
	_ = n.store.Delete(ctx, keyInvoicePrefix+hash)
}

// closedRecord returns the record of an invoice a pruning node closed,
// or nil.
func (n *Node) closedRecord(hash string) *invoiceRecord {
	if n.closed == nil {
		return nil
	}
	c, ok := n.closed.byHash[hash]
	if !ok {
		return nil
	}
	return &invoiceRecord{ExpiresAt: c.expiresAt, Preimage: c.preimage,
		Settled: c.state == closedSettled, Cancelled: c.state == closedCancelled}
}

// sweepExpired takes expired invoices out of a pruning node's memory, at
// most once per sweepInterval.
func (n *Node) sweepExpired(ctx context.Context) {
	now := n.clock.Now()
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed == nil || now.Sub(n.lastSweep) < sweepInterval {
		return
	}
	n.lastSweep = now
	var expired []string
	recs := map[string]*invoiceRecord{}
	_ = n.store.Scan(ctx, keyInvoicePrefix, func(k string, v []byte) error {
		var rec invoiceRecord
		if json.Unmarshal(v, &rec) == nil && !now.Before(rec.ExpiresAt) {
			hash := k[len(keyInvoicePrefix):]
			expired = append(expired, hash)
			recs[hash] = &rec
		}
		return nil
	})
	for _, hash := range expired {
		n.closeInvoice(ctx, hash, recs[hash], closedExpired)
	}
}
