package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
)

// Members fence the writes of a cluster's nodes by membership: a node
// joins (a row in leases, role "member/ID", that never expires by
// time), commits only while its row is there (checked FOR SHARE in the
// commit's own transaction), and is expelled by the nodes that saw it
// leave the cluster before they take its stores over. An expel waits
// for the node's commits in flight (the row lock) and makes every later
// one fail, so that a node that stalled past its etcd lease writes
// nothing when it wakes, not even a new invoice's first event
// (docs/decisions.md, "Membership fence").
type Members struct{ db *DB }

// Members returns the store's membership fence.
func (d *DB) Members() Members { return Members{d} }

func memberRole(id string) string { return "member/" + id }

// Join admits member: its commits go through until it is expelled.
func (m Members) Join(ctx context.Context, member string) error {
	_, err := m.db.pool.Exec(ctx, `INSERT INTO leases (role, holder, epoch, expires_ms) VALUES ($1, $2, 1, $3)
		ON CONFLICT (role) DO NOTHING`, memberRole(member), member, int64(math.MaxInt64))
	if err != nil {
		return fmt.Errorf("postgres: join as member %s: %w", member, err)
	}
	return nil
}

// Expel refuses every commit of member from now on, once its commits in
// flight are done; expelling a member twice, or one never admitted, does
// nothing. It also frees the webhook deliveries member claims (a cluster
// member claims under its member id), so that the node that takes its
// stores over sends them at once, not when the claims run out; a claim
// whose attempt the member is recording right now (its row locked) runs
// out as before. The member cannot record an attempt of a freed claim.
// And it frees the invoice deadlines member claimed: its sweeper fired
// them early so that their timers would arm on its node, and those
// timers died with it; the others' sweepers claim them at their next
// round.
func (m Members) Expel(ctx context.Context, member string) error {
	if _, err := m.db.pool.Exec(ctx, `DELETE FROM leases WHERE role = $1`, memberRole(member)); err != nil {
		return fmt.Errorf("postgres: expel member %s: %w", member, err)
	}
	_, err := m.db.pool.Exec(ctx, `UPDATE outbox SET claimed_by = NULL, claim_expires_ms = 0
		WHERE (webhook_id, delivery_id) IN (SELECT webhook_id, delivery_id FROM outbox WHERE claimed_by = $1 FOR UPDATE SKIP LOCKED)`, member)
	if err != nil {
		return fmt.Errorf("postgres: free the claims of expelled member %s: %w", member, err)
	}
	_, err = m.db.pool.Exec(ctx, `UPDATE open_invoices SET claimed_by = NULL, claim_expires_ms = 0
		WHERE invoice_id IN (SELECT invoice_id FROM open_invoices WHERE claimed_by = $1 FOR UPDATE SKIP LOCKED)`, member)
	if err != nil {
		return fmt.Errorf("postgres: free the deadline claims of expelled member %s: %w", member, err)
	}
	return nil
}

// FreeDeadlineClaimsExcept frees the live invoice deadline claims of
// every holder that is not one of members, and says how many it freed: a
// cluster killed whole comes back with new member ids only, and none of
// its members saw the old ones leave to expel them. As in Expel, a row
// locked by a claimer right now is passed over.
func (m Members) FreeDeadlineClaimsExcept(ctx context.Context, members []string) (int, error) {
	tag, err := m.db.pool.Exec(ctx, `UPDATE open_invoices SET claimed_by = NULL, claim_expires_ms = 0
		WHERE invoice_id IN (SELECT invoice_id FROM open_invoices
			WHERE claim_expires_ms > $2 AND claimed_by IS NOT NULL AND NOT (claimed_by = ANY($1))
			FOR UPDATE SKIP LOCKED)`, members, m.db.clock.Now().UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("postgres: free the deadline claims of holders that are not members: %w", down(err))
	}
	return int(tag.RowsAffected()), nil
}

// Admitted reports whether member may commit.
func (m Members) Admitted(ctx context.Context, member string) (bool, error) {
	var one int
	err := m.db.pool.QueryRow(ctx, `SELECT 1 FROM leases WHERE role = $1`, memberRole(member)).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("postgres: read member %s: %w", member, err)
	}
	return true, nil
}

// Commit commits b for member, in one transaction with the check that
// member is admitted: kassa.ErrNotMember, and nothing written, when it
// is not. The transaction may hold other batches (group commit); the
// check is b's own.
func (m Members) Commit(ctx context.Context, member string, kb kassa.Batch) error {
	b, ok := kb.(*Batch)
	if !ok {
		return fmt.Errorf("postgres: foreign batch %T", kb)
	}
	if b.err == nil && b.b.Len() == 0 {
		return nil
	}
	return m.db.commit(ctx, b, &fence{
		sql:     `SELECT 1 FROM leases WHERE role = $1 FOR SHARE`,
		args:    []any{memberRole(member)},
		refused: kassa.ErrNotMember,
		what:    "postgres: check membership",
	}, "postgres: commit batch")
}
