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

// ClaimDelivery claims the delivery endpoint webhookID sends next (its
// oldest pending delivery that is due) for holder. Every claimer of an
// endpoint first locks the endpoint's first outbox row FOR UPDATE SKIP
// LOCKED (each of its statements reads by an index, so a claim costs
// the same behind a backlog of any size: migration 10): claimers of one endpoint take turns, so the checks below see
// each other's claims, and a claimer that finds the row locked (another
// claimer, or the holder recording its attempt) passes without waiting.
// The claim's expiry (claim_expires_ms) hands the delivery of a node that
// died to another once it runs out.
func (d *DB) ClaimDelivery(ctx context.Context, webhookID, holder string, ttl time.Duration) (kassa.DeliveryClaim, bool, error) {
	return d.ClaimRun(ctx, webhookID, holder, ttl, 1)
}

// ClaimRun is ClaimDelivery that, in the same transaction, also claims up
// to max-1 due deliveries after the claimed one, in outbox order: it
// passes retries not yet due, as a claim does, and stops at a delivery
// another live holder has or that is released until later.
func (d *DB) ClaimRun(ctx context.Context, webhookID, holder string, ttl time.Duration, max int) (kassa.DeliveryClaim, bool, error) {
	now := d.clock.Now()
	nowMS := now.UnixMilli()
	c := kassa.DeliveryClaim{WebhookID: webhookID, Holder: holder, Expires: time.UnixMilli(now.Add(ttl).UnixMilli())}
	var held kassa.DeliveryClaim
	ok := false
	err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		// The head, then its lock: each one index probe, whatever the
		// endpoint's backlog. A head that another claimer locked, or its
		// holder deleted since, is passed.
		var head int64
		err := tx.QueryRow(ctx, `SELECT seq FROM outbox WHERE webhook_id = $1 ORDER BY seq LIMIT 1`, webhookID).Scan(&head)
		if err == nil {
			err = tx.QueryRow(ctx, `SELECT seq FROM outbox WHERE webhook_id = $1 AND seq = $2 FOR UPDATE SKIP LOCKED`, webhookID, head).Scan(&head)
		}
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // nothing pending, or another claimer at work
		}
		if err != nil {
			return err
		}
		var (
			id        string
			seq       int64
			claimedBy *string
			expires   int64
		)
		err = tx.QueryRow(ctx, `SELECT delivery_id, seq, claimed_by, claim_expires_ms FROM outbox
			WHERE webhook_id = $1 AND not_before_ms <= $2 ORDER BY seq LIMIT 1`, webhookID, nowMS).Scan(&id, &seq, &claimedBy, &expires)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // only retries waiting for their time
		}
		if err != nil {
			return err
		}
		if expires > nowMS && (claimedBy == nil || *claimedBy != holder) {
			// Claimed by another live holder, or released until later.
			held = kassa.DeliveryClaim{WebhookID: webhookID, DeliveryID: id, Expires: time.UnixMilli(expires)}
			if claimedBy != nil {
				held.Holder = *claimedBy
			}
			return nil
		}
		// A delivery that was the next when its holder claimed it (a
		// retry that became due since is next now) is still in flight.
		var other string
		err = tx.QueryRow(ctx, `SELECT delivery_id, claimed_by, claim_expires_ms FROM outbox
			WHERE webhook_id = $1 AND delivery_id <> $2 AND claimed_by IS NOT NULL AND claimed_by <> $3 AND claim_expires_ms > $4
			ORDER BY claim_expires_ms DESC LIMIT 1`, webhookID, id, holder, nowMS).Scan(&other, &claimedBy, &expires)
		if err == nil {
			held = kassa.DeliveryClaim{WebhookID: webhookID, DeliveryID: other, Holder: *claimedBy, Expires: time.UnixMilli(expires)}
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		tag, err := tx.Exec(ctx, `UPDATE outbox SET claimed_by = $3, claim_expires_ms = $4 WHERE webhook_id = $1 AND delivery_id = $2`,
			webhookID, id, holder, c.Expires.UnixMilli())
		if err != nil {
			return err
		}
		// Zero rows: its holder recorded it meanwhile (a claim that ran
		// out but that nobody took is still its holder's).
		c.DeliveryID, ok = id, tag.RowsAffected() == 1
		if !ok || max <= 1 {
			return nil
		}
		c.Run, err = claimFollowing(ctx, tx, webhookID, holder, seq, nowMS, c.Expires.UnixMilli(), max-1)
		return err
	})
	if err != nil {
		return kassa.DeliveryClaim{}, false, fmt.Errorf("postgres: claim delivery: %w", down(err))
	}
	if !ok {
		return held, false, nil
	}
	return c, true, nil
}

// claimFollowing claims, for holder until expiresMS, up to n due
// deliveries after seq in outbox order, as far as none is held back
// (ClaimRun), and returns their ids in that order.
func claimFollowing(ctx context.Context, tx pgx.Tx, webhookID, holder string, seq, nowMS, expiresMS int64, n int) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT delivery_id, claimed_by, claim_expires_ms, not_before_ms FROM outbox
		WHERE webhook_id = $1 AND seq > $2 ORDER BY seq LIMIT $3 FOR UPDATE`, webhookID, seq, 2*n)
	if err != nil {
		return nil, err
	}
	var run []string
	for rows.Next() && len(run) < n {
		var (
			id                   string
			claimedBy            *string
			expires, notBeforeMS int64
		)
		if err := rows.Scan(&id, &claimedBy, &expires, &notBeforeMS); err != nil {
			rows.Close()
			return nil, err
		}
		if expires > nowMS && (claimedBy == nil || *claimedBy != holder) {
			break // another holder's, or released until later: holds the rest back
		}
		if notBeforeMS > nowMS {
			continue // a retry not yet due holds nothing back
		}
		run = append(run, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil || len(run) == 0 {
		return nil, err
	}
	if _, err := tx.Exec(ctx, `UPDATE outbox SET claimed_by = $3, claim_expires_ms = $4 WHERE webhook_id = $1 AND delivery_id = ANY($2)`,
		webhookID, run, holder, expiresMS); err != nil {
		return nil, err
	}
	return run, nil
}

// ReleaseDelivery ends c's claim; the delivery is claimable again from
// retryAt on, and holds its endpoint's later deliveries back until then.
// A claim that ran out and was taken by another holder is left alone.
func (d *DB) ReleaseDelivery(ctx context.Context, c kassa.DeliveryClaim, retryAt time.Time) error {
	_, err := d.pool.Exec(ctx, `UPDATE outbox SET claimed_by = NULL, claim_expires_ms = $4
		WHERE webhook_id = $1 AND delivery_id = $2 AND claimed_by = $3`, c.WebhookID, c.DeliveryID, c.Holder, max(retryAt.UnixMilli(), 0))
	if err != nil {
		return fmt.Errorf("postgres: release delivery: %w", down(err))
	}
	return nil
}

// CommitClaimed commits the batch in one transaction with a check that
// c's holder still holds the delivery's outbox row; the row lock (FOR
// UPDATE) holds off another claimer until the batch committed. The
// transaction may hold other batches (group commit); the check is this
// batch's own.
func (d *DB) CommitClaimed(ctx context.Context, c kassa.DeliveryClaim, kb kassa.Batch) error {
	b, ok := kb.(*Batch)
	if !ok {
		return fmt.Errorf("postgres: foreign batch %T", kb)
	}
	if len(c.Run) > 0 {
		ids := c.Deliveries()
		return d.commit(ctx, b, &fence{
			sql: `SELECT 1 FROM (SELECT 1 FROM outbox WHERE webhook_id = $1 AND delivery_id = ANY($2) AND claimed_by = $3 FOR UPDATE) held
				HAVING count(*) = $4`,
			args:    []any{c.WebhookID, ids, c.Holder, int64(len(ids))},
			refused: fmt.Errorf("%w (deliveries %s…, holder %s)", kassa.ErrClaimLost, c.DeliveryID, c.Holder),
			what:    "postgres: check delivery claims",
		}, "postgres: commit claimed deliveries")
	}
	return d.commit(ctx, b, &fence{
		sql:     `SELECT 1 FROM outbox WHERE webhook_id = $1 AND delivery_id = $2 AND claimed_by = $3 FOR UPDATE`,
		args:    []any{c.WebhookID, c.DeliveryID, c.Holder},
		refused: fmt.Errorf("%w (delivery %s, holder %s)", kassa.ErrClaimLost, c.DeliveryID, c.Holder),
		what:    "postgres: check delivery claim",
	}, "postgres: commit claimed delivery")
}

// ReleaseExpiryClaims drops every live expiry claim and says how many it
// dropped: a single node's start releases its last run's
// (actors.Runtime.Recover), whose timers died with it.
func (d *DB) ReleaseExpiryClaims(ctx context.Context) (int, error) {
	tag, err := d.pool.Exec(ctx, `UPDATE open_invoices SET claimed_by = NULL, claim_expires_ms = 0
		WHERE claim_expires_ms > $1`, d.clock.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("postgres: release expiry claims: %w", down(err))
	}
	return int(tag.RowsAffected()), nil
}

// ClaimOverdue claims open invoices whose deadline is before overdue,
// with FOR UPDATE SKIP LOCKED, oldest deadline first.
func (d *DB) ClaimOverdue(ctx context.Context, holder string, overdue time.Time, ttl time.Duration, limit int) ([]kassa.OverdueInvoice, error) {
	if limit <= 0 {
		return nil, nil
	}
	now := d.clock.Now()
	rows, err := d.pool.Query(ctx, `UPDATE open_invoices SET claimed_by = $1, claim_expires_ms = GREATEST(deadline_ms, $4) + $2
		WHERE invoice_id IN (
			SELECT invoice_id FROM open_invoices
			WHERE deadline_ms < $3 AND claim_expires_ms <= $4
			ORDER BY deadline_ms, invoice_id
			LIMIT $5
			FOR UPDATE SKIP LOCKED)
		RETURNING invoice_id, store_id, deadline_ms`, holder, ttl.Milliseconds(), ms(overdue), now.UnixMilli(), limit)
	if err != nil {
		return nil, fmt.Errorf("postgres: claim overdue invoices: %w", down(err))
	}
	defer rows.Close()
	var out []kassa.OverdueInvoice
	for rows.Next() {
		var o kassa.OverdueInvoice
		var deadline int64
		if err := rows.Scan(&o.InvoiceID, &o.StoreID, &deadline); err != nil {
			return nil, fmt.Errorf("postgres: claim overdue invoices: %w", down(err))
		}
		o.Deadline = time.UnixMilli(deadline)
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: claim overdue invoices: %w", down(err))
	}
	return out, nil
}
