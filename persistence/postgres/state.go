package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa/internal/simstore"
)

// State is a small key-value space of its own for a simulated backend's
// state, rows of sim_state under the space's name.
type State struct {
	db    *DB
	space string
}

var _ simstore.Store = (*State)(nil)

// State returns the space called name.
func (d *DB) State(name string) *State { return &State{db: d, space: name} }

// Get returns the value at k and whether there is one.
func (s *State) Get(ctx context.Context, k string) ([]byte, bool, error) {
	var v []byte
	err := s.db.pool.QueryRow(ctx, `SELECT value FROM sim_state WHERE space = $1 AND key = $2`, s.space, k).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: state get: %w", down(err))
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

// Put sets k to value.
func (s *State) Put(ctx context.Context, k string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	err := s.db.execUnsynced(ctx, `INSERT INTO sim_state (space, key, value) VALUES ($1, $2, $3)
		ON CONFLICT (space, key) DO UPDATE SET value = EXCLUDED.value`, s.space, k, value)
	if err != nil {
		return fmt.Errorf("postgres: state put: %w", down(err))
	}
	return nil
}

// Delete removes k; a missing key is no error.
func (s *State) Delete(ctx context.Context, k string) error {
	if err := s.db.execUnsynced(ctx, `DELETE FROM sim_state WHERE space = $1 AND key = $2`, s.space, k); err != nil {
		return fmt.Errorf("postgres: state delete: %w", down(err))
	}
	return nil
}

// execUnsynced runs one statement in a transaction of its own that does
// not wait for its WAL flush, on a session of the unsynced pool
// (synchronous_commit off), in one round trip. As the Pebble store does with the simulators' state,
// the write is not synced alone: the next synced commit, which flushes
// the WAL up to its own record, makes it durable (docs/decisions.md,
// "The simulated backends keep their state in the store").
func (d *DB) execUnsynced(ctx context.Context, sql string, args ...any) error {
	_, err := d.unsynced.Exec(ctx, sql, args...)
	return err
}

// Scan calls fn for each key under prefix, in key order. The rows are
// read first, so that fn may write to the space.
func (s *State) Scan(ctx context.Context, prefix string, fn func(k string, value []byte) error) error {
	rows, err := s.db.pool.Query(ctx, `SELECT key, value FROM sim_state WHERE space = $1 AND starts_with(key, $2) ORDER BY key`, s.space, prefix)
	if err != nil {
		return fmt.Errorf("postgres: state scan: %w", down(err))
	}
	type kv struct {
		k string
		v []byte
	}
	var all []kv
	for rows.Next() {
		var e kv
		if err := rows.Scan(&e.k, &e.v); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: state scan: %w", down(err))
		}
		all = append(all, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: state scan: %w", down(err))
	}
	for _, e := range all {
		if err := fn(e.k, e.v); err != nil {
			return err
		}
	}
	return nil
}
