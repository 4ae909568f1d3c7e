package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
)

var (
	_ kassa.OutboxClaims = (*DB)(nil)
	_ kassa.ExpiryClaims = (*DB)(nil)
)

// ClaimDelivery claims the oldest pending delivery of one endpoint:
// FOR UPDATE SKIP LOCKED lets claimers on several nodes pass each other
// without waiting, and the claim's expiry (claim_expires_ms) hands the
// delivery of a node that died to another once it runs out.
func (d *DB) ClaimDelivery(ctx context.Context, holder string, ttl time.Duration) (kassa.DeliveryClaim, bool, error) {
	now := d.clock.Now()
	c := kassa.DeliveryClaim{Holder: holder, Expires: time.UnixMilli(now.Add(ttl).UnixMilli())}
	err := d.pool.QueryRow(ctx, `UPDATE outbox SET claimed_by = $1, claim_expires_ms = $2
		WHERE (webhook_id, seq) = (
			SELECT o.webhook_id, o.seq FROM outbox o
			WHERE o.claim_expires_ms <= $3
				AND NOT EXISTS (SELECT 1 FROM outbox p WHERE p.webhook_id = o.webhook_id AND p.seq < o.seq)
			ORDER BY o.seq
			LIMIT 1
			FOR UPDATE SKIP LOCKED)
		RETURNING webhook_id, delivery_id`, holder, c.Expires.UnixMilli(), now.UnixMilli()).Scan(&c.WebhookID, &c.DeliveryID)
	if errors.Is(err, pgx.ErrNoRows) {
		return kassa.DeliveryClaim{}, false, nil
	}
	if err != nil {
		return kassa.DeliveryClaim{}, false, fmt.Errorf("postgres: claim delivery: %w", err)
	}
	return c, true, nil
}

// ReleaseDelivery ends c's claim; the delivery is claimable again from
// retryAt on. A claim that ran out and was taken by another holder is
// left alone.
func (d *DB) ReleaseDelivery(ctx context.Context, c kassa.DeliveryClaim, retryAt time.Time) error {
	_, err := d.pool.Exec(ctx, `UPDATE outbox SET claimed_by = NULL, claim_expires_ms = $4
		WHERE webhook_id = $1 AND delivery_id = $2 AND claimed_by = $3`, c.WebhookID, c.DeliveryID, c.Holder, max(retryAt.UnixMilli(), 0))
	if err != nil {
		return fmt.Errorf("postgres: release delivery: %w", err)
	}
	return nil
}

// ClaimOverdue claims open invoices whose deadline is before overdue,
// with FOR UPDATE SKIP LOCKED, oldest deadline first.
func (d *DB) ClaimOverdue(ctx context.Context, holder string, overdue time.Time, ttl time.Duration, limit int) ([]kassa.OverdueInvoice, error) {
	if limit <= 0 {
		return nil, nil
	}
	now := d.clock.Now()
	rows, err := d.pool.Query(ctx, `UPDATE open_invoices SET claimed_by = $1, claim_expires_ms = $2
		WHERE invoice_id IN (
			SELECT invoice_id FROM open_invoices
			WHERE deadline_ms < $3 AND claim_expires_ms <= $4
			ORDER BY deadline_ms, invoice_id
			LIMIT $5
			FOR UPDATE SKIP LOCKED)
		RETURNING invoice_id, store_id, deadline_ms`, holder, now.Add(ttl).UnixMilli(), ms(overdue), now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim overdue invoices: %w", err)
	}
	defer rows.Close()
	var out []kassa.OverdueInvoice
	for rows.Next() {
		var o kassa.OverdueInvoice
		var deadline int64
		if err := rows.Scan(&o.InvoiceID, &o.StoreID, &deadline); err != nil {
			return nil, fmt.Errorf("postgres: claim overdue invoices: %w", err)
		}
		o.Deadline = time.UnixMilli(deadline)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim overdue invoices: %w", err)
	}
	return out, nil
}
