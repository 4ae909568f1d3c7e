package kassa

import (
	"context"
	"time"
)

// Claims of a store's work (docs/decisions.md, "Outbox claims" and "One
// deadline mechanism"). The outbox claims are for a store shared by the
// nodes of a cluster: a single node's webhook actors are the only senders. The
// expiry claims serve the one deadline sweeper of both modes; on a single
// node (Pebble) its claims always win.

// DeliveryClaim is one node's claim on the delivery a webhook endpoint
// sends next, until Expires, and on the deliveries of Run.
type DeliveryClaim struct {
	WebhookID  string
	DeliveryID string
	Holder     string
	Expires    time.Time
	// Run are the due deliveries after DeliveryID, in outbox order, that
	// the claim holds too (ClaimRun): the holder sends them in that order
	// after DeliveryID and may record them in one commit.
	Run []string
}

// Deliveries returns the deliveries c holds, in the order they are sent.
func (c DeliveryClaim) Deliveries() []string {
	if c.DeliveryID == "" {
		return nil
	}
	return append([]string{c.DeliveryID}, c.Run...)
}

// ErrClaimLost refuses to record the attempt of a delivery whose claim
// another holder has taken since (the claim ran out while its holder
// stalled): nothing of the batch is stored.
var ErrClaimLost = Errorf(Conflict, "delivery claim lost: another node has claimed the delivery since")

// OutboxClaims hands the webhook outbox's deliveries to the nodes that
// send them, so that a lost node's pending deliveries are sent by
// another: at least once, and in order per endpoint, since only an
// endpoint's next delivery can be claimed, by one holder at a time, and
// it leaves the outbox only when its holder records its attempt
// (CommitClaimed). docs/decisions.md, "Outbox claims".
type OutboxClaims interface {
	// ClaimDelivery claims, for holder until now+ttl, the delivery that
	// endpoint webhookID sends next: its oldest pending delivery that is
	// due (a retry waiting for its NotBefore holds nothing back), when
	// neither it nor another delivery of the endpoint is claimed by
	// another holder's live claim, and it is not released until a later
	// time. Claimers of one endpoint on several nodes pass each other
	// (SKIP LOCKED). A holder may claim again what it holds.
	//
	// When ok is false, c.Expires, unless zero, is when the claim (of
	// c.Holder) or the release (c.Holder empty) that holds the endpoint
	// back runs out; zero says that nothing is due, or that another
	// claimer is at work on the endpoint at this moment.
	ClaimDelivery(ctx context.Context, webhookID, holder string, ttl time.Duration) (c DeliveryClaim, ok bool, err error)
	// ClaimRun is ClaimDelivery that also claims, in the same step, up to
	// max-1 of the due deliveries that follow the claimed one (c.Run), as
	// far as none is held back by another holder's live claim or a
	// release until later: a backlog is then claimed, and may be
	// recorded, a run at a time instead of a delivery at a time.
	ClaimRun(ctx context.Context, webhookID, holder string, ttl time.Duration, max int) (c DeliveryClaim, ok bool, err error)
	// ReleaseDelivery gives a claim up without recording an attempt;
	// the delivery, still the endpoint's next, can be claimed again from
	// retryAt on (zero: at once). A release of a claim another holder
	// has taken since changes nothing.
	ReleaseDelivery(ctx context.Context, c DeliveryClaim, retryAt time.Time) error
	// CommitClaimed commits b, which records c's attempt (and takes the
	// delivery out of the outbox), only while c's holder holds the
	// delivery's claim, and that of each delivery of c.Run (which the
	// caller trims to the deliveries b records). A claim that ran out but that nobody took is
	// still its holder's. When another holder has claimed the delivery,
	// or it left the outbox otherwise, nothing is stored and the error
	// is ErrClaimLost.
	CommitClaimed(ctx context.Context, c DeliveryClaim, b Batch) error
}

// OverdueInvoice is an open invoice whose deadline passed.
type OverdueInvoice struct {
	InvoiceID string
	StoreID   string
	Deadline  time.Time
}

// ExpiryClaims hands out overdue invoices to the deadline sweeper of
// each node (package expiry), so that an invoice whose actor is
// passivated, or whose owner is gone, still reaches its deadline.
type ExpiryClaims interface {
	// ClaimOverdue claims, for holder, at most limit open invoices
	// whose deadline is before overdue and that no live claim holds,
	// oldest deadline first. Each claim runs until ttl past the later
	// of now and the invoice's deadline: one claimed before it is due
	// is free again ttl after its deadline, however early it was
	// claimed. The claim only spreads the work: the invoice's
	// transition is idempotent, so an expiry delivered twice fires
	// once.
	ClaimOverdue(ctx context.Context, holder string, overdue time.Time, ttl time.Duration, limit int) ([]OverdueInvoice, error)
}
