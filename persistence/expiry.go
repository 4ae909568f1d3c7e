package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

var _ kassa.ExpiryClaims = (*DB)(nil)

// expiryClaims are the live claims of ClaimOverdue, in memory: Pebble is
// one node's own store, so its sweeper is the only claimer and always
// wins. The claims are still kept, for the same contract as PostgreSQL's:
// a claim keeps an invoice from being handed out again until it runs out,
// so a sweeper whose fire failed (a store whose journal does not replay)
// does not claim the same invoices again at once, round after round. A
// restart forgets them with the process that held them. A claim is on
// one deadline: an invoice whose deadline changed (it expired, and now
// waits for the end of its monitoring) is free to claim again, as
// PostgreSQL resets the claim with the deadline.
type expiryClaims struct {
	mu      sync.Mutex
	expires map[string]expiryClaim // by invoice id
}

type expiryClaim struct {
	deadline string // the deadline claimed, as in the index key
	end      time.Time
}

// claimedDeadline is an invoice's deadline as the index keys it.
type claimedDeadline struct{ invoiceID, deadline string }

// forget drops the claims on deadlines that left the index: the invoice
// closed, or its deadline moved (a claim is on one deadline). Without
// it a node closing invoices quickly would keep a claim per invoice for
// the claim's whole length: its memory would grow with every invoice
// closed.
func (c *expiryClaims) forget(gone []claimedDeadline) {
	if len(gone) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, g := range gone {
		if cl, ok := c.expires[g.invoiceID]; ok && cl.deadline == g.deadline {
			delete(c.expires, g.invoiceID)
		}
	}
}

// errClaimsFull stops the scan of ClaimOverdue once it has limit invoices.
var errClaimsFull = errors.New("claims full")

// ClaimOverdue claims, for holder until ttl past the later of now and
// its deadline, at most limit open invoices whose deadline is before
// overdue and that no live claim holds, oldest deadline first. It scans the deadline index (iop/), which is
// ordered by deadline, and stops at the first deadline not overdue: a
// round costs what is due, not what is open.
func (d *DB) ClaimOverdue(ctx context.Context, holder string, overdue time.Time, ttl time.Duration, limit int) ([]kassa.OverdueInvoice, error) {
	if limit <= 0 {
		return nil, nil
	}
	now := d.clock.Now()
	c := &d.expiry
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, cl := range c.expires {
		if !cl.end.After(now) {
			delete(c.expires, id)
		}
	}
	until := binary.BigEndian.AppendUint64(nil, uint64(max(overdue.UnixMilli(), 0)))
	var out []kassa.OverdueInvoice
	err := d.scanPrefix(ctx, []byte("iop/"), func(k, storeID []byte) error {
		if string(k[:8]) >= string(until) {
			return errClaimsFull // the first deadline not overdue
		}
		id := string(k[8:])
		if cl, held := c.expires[id]; held && cl.deadline == string(k[:8]) {
			return nil
		}
		out = append(out, kassa.OverdueInvoice{InvoiceID: id, StoreID: string(storeID), Deadline: time.UnixMilli(int64(binary.BigEndian.Uint64(k[:8])))})
		if len(out) == limit {
			return errClaimsFull
		}
		return nil
	})
	if err != nil && !errors.Is(err, errClaimsFull) {
		return nil, err
	}
	if c.expires == nil {
		c.expires = map[string]expiryClaim{}
	}
	for _, o := range out {
		c.expires[o.InvoiceID] = expiryClaim{deadline: string(ms(o.Deadline)), end: later(now, o.Deadline).Add(ttl)}
	}
	return out, nil
}

// later is the later of a and b.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
