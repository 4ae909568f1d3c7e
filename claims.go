package kassa

import (
	"context"
	"time"
)

// Ports of a store shared by the nodes of a cluster (docs/decisions.md,
// "Outbox claims" and "Shared expiry"). The single node needs neither:
// its webhook actors and timers are the only ones.

// DeliveryClaim is one node's claim on the oldest pending delivery of a
// webhook endpoint, until Expires.
type DeliveryClaim struct {
	WebhookID  string
	DeliveryID string
	Holder     string
	Expires    time.Time
}

// OutboxClaims hands the webhook outbox's deliveries to the nodes that
// send them, so that a lost node's pending deliveries are sent by
// another: at least once, and in order per endpoint, since only the
// oldest pending delivery of an endpoint can be claimed and it leaves the
// outbox only when its attempt is recorded (Batch.PutDelivery).
type OutboxClaims interface {
	// ClaimDelivery claims, for holder until now+ttl, the oldest pending
	// delivery of an endpoint whose head is not claimed by a live
	// claim; ok is false when there is none.
	ClaimDelivery(ctx context.Context, holder string, ttl time.Duration) (c DeliveryClaim, ok bool, err error)
	// ReleaseDelivery gives a claim up without recording an attempt;
	// the delivery can be claimed again from retryAt on (zero: at once).
	ReleaseDelivery(ctx context.Context, c DeliveryClaim, retryAt time.Time) error
}

// OverdueInvoice is an open invoice whose deadline passed.
type OverdueInvoice struct {
	InvoiceID string
	StoreID   string
	Deadline  time.Time
}

// ExpiryClaims hands out overdue invoices to the sweepers of a cluster's
// nodes, so that an invoice whose owner is gone still expires.
type ExpiryClaims interface {
	// ClaimOverdue claims, for holder until now+ttl, at most limit open
	// invoices whose deadline is before overdue and that no live claim
	// holds, oldest deadline first. The claim only spreads the work:
	// the invoice's transition is idempotent, so an expiry delivered
	// twice fires once.
	ClaimOverdue(ctx context.Context, holder string, overdue time.Time, ttl time.Duration, limit int) ([]OverdueInvoice, error)
}
