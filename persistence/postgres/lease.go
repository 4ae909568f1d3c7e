package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lease"
)

// Leases are the lease.Store of a cluster: a row per role in leases
// (holder, epoch, expiry in milliseconds of the store's clock).
type Leases struct{ db *DB }

var _ lease.Store = Leases{}

// Leases returns the store's leases.
func (d *DB) Leases() Leases { return Leases{d} }

// Acquire takes role for holder when it is free, expired or holder's
// already; another holder's expired lease is taken with the next epoch.
func (s Leases) Acquire(ctx context.Context, role, holder string, ttl time.Duration) (lease.Lease, bool, error) {
	now := s.db.clock.Now()
	expires := now.Add(ttl)
	var epoch int64
	err := s.db.pool.QueryRow(ctx, `INSERT INTO leases (role, holder, epoch, expires_ms) VALUES ($1, $2, 1, $3)
		ON CONFLICT (role) DO UPDATE SET
			epoch = CASE WHEN leases.holder = EXCLUDED.holder THEN leases.epoch ELSE leases.epoch + 1 END,
			holder = EXCLUDED.holder, expires_ms = EXCLUDED.expires_ms
		WHERE leases.holder = EXCLUDED.holder OR leases.expires_ms <= $4
		RETURNING epoch`, role, holder, expires.UnixMilli(), now.UnixMilli()).Scan(&epoch)
	if errors.Is(err, pgx.ErrNoRows) {
		return lease.Lease{}, false, nil
	}
	if err != nil {
		return lease.Lease{}, false, fmt.Errorf("postgres: acquire lease %s: %w", role, err)
	}
	return lease.Lease{Role: role, Holder: holder, Epoch: epoch, Expires: time.UnixMilli(expires.UnixMilli())}, true, nil
}

// Renew extends l while its epoch is the role's.
func (s Leases) Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error) {
	expires := s.db.clock.Now().Add(ttl)
	tag, err := s.db.pool.Exec(ctx, `UPDATE leases SET expires_ms = $4 WHERE role = $1 AND holder = $2 AND epoch = $3`,
		l.Role, l.Holder, l.Epoch, expires.UnixMilli())
	if err != nil {
		return l, fmt.Errorf("postgres: renew lease %s: %w", l.Role, err)
	}
	if tag.RowsAffected() == 0 {
		return l, lostError(l)
	}
	l.Expires = time.UnixMilli(expires.UnixMilli())
	return l, nil
}

// Release lets l expire now.
func (s Leases) Release(ctx context.Context, l lease.Lease) error {
	_, err := s.db.pool.Exec(ctx, `UPDATE leases SET expires_ms = 0 WHERE role = $1 AND holder = $2 AND epoch = $3`,
		l.Role, l.Holder, l.Epoch)
	if err != nil {
		return fmt.Errorf("postgres: release lease %s: %w", l.Role, err)
	}
	return nil
}

// Current returns the role's lease as stored; ok is false when nobody
// ever held it.
func (s Leases) Current(ctx context.Context, role string) (lease.Lease, bool, error) {
	l := lease.Lease{Role: role}
	var expires int64
	err := s.db.pool.QueryRow(ctx, `SELECT holder, epoch, expires_ms FROM leases WHERE role = $1`, role).Scan(&l.Holder, &l.Epoch, &expires)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, false, nil
	}
	if err != nil {
		return l, false, fmt.Errorf("postgres: read lease %s: %w", role, err)
	}
	l.Expires = time.UnixMilli(expires)
	return l, true, nil
}

// lostError is lease.ErrLost naming the lease.
func lostError(l lease.Lease) error {
	return fmt.Errorf("%w (role %s, holder %s, epoch %d)", lease.ErrLost, l.Role, l.Holder, l.Epoch)
}

// Fenced returns the key-value store whose writes check l's epoch.
func (s Leases) Fenced(l lease.Lease) kassa.KeyValue { return fenced{db: s.db, l: l} }

// fenced writes small values only while its lease is the role's.
type fenced struct {
	db *DB
	l  lease.Lease
}

func (f fenced) GetValue(ctx context.Context, key string) ([]byte, bool, error) {
	return f.db.GetValue(ctx, key)
}

// hold checks, inside tx, that l is still the role's lease and holds it
// (FOR SHARE) until tx ends: lease.ErrLost (lostError) when it is not.
func (f fenced) hold(ctx context.Context, tx pgx.Tx) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM leases WHERE role = $1 AND holder = $2 AND epoch = $3 FOR SHARE`,
		f.l.Role, f.l.Holder, f.l.Epoch).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return lostError(f.l)
	}
	if err != nil {
		return fmt.Errorf("postgres: check lease %s: %w", f.l.Role, err)
	}
	return nil
}

// PutValue checks the epoch and writes in one transaction; the row lock
// (FOR SHARE) holds off a take-over until the write committed.
func (f fenced) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	if value == nil {
		value = []byte{}
	}
	return pgx.BeginFunc(ctx, f.db.pool, func(tx pgx.Tx) error {
		if err := f.hold(ctx, tx); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO kv (key, value, expires_ms) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms`, key, value, expires.UnixMilli()); err != nil {
			return fmt.Errorf("postgres: put value: %w", down(err))
		}
		return nil
	})
}

// Commit commits a batch of this store (a forward and its ledger lines)
// in one transaction with the lease check: only while l is the role's
// lease, else lease.ErrLost and nothing is written (lease.Committer).
// The transaction may hold other batches (group commit); the check is
// this batch's own.
func (f fenced) Commit(ctx context.Context, kb kassa.Batch) error {
	b, ok := kb.(*Batch)
	if !ok {
		return fmt.Errorf("postgres: foreign batch %T", kb)
	}
	return f.db.commit(ctx, b, &fence{
		sql:     `SELECT 1 FROM leases WHERE role = $1 AND holder = $2 AND epoch = $3 FOR SHARE`,
		args:    []any{f.l.Role, f.l.Holder, f.l.Epoch},
		refused: lostError(f.l),
		what:    "postgres: check lease " + f.l.Role,
	}, "postgres: commit fenced batch")
}
