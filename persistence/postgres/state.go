package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync"

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

// Put sets k to value. The puts of all spaces made while another is
// being written go together in one statement (statePuts).
func (s *State) Put(ctx context.Context, k string, value []byte) error {
	if value == nil {
		value = []byte{}
	}
	if err := s.db.statePuts.put(ctx, s.db, s.space, k, value); err != nil {
		return fmt.Errorf("postgres: state put: %w", down(err))
	}
	return nil
}

// LoadOrStore sets k to value unless k has a value, and returns what k
// holds afterwards. The insert that does nothing on a conflict decides
// between nodes: the row inserted first stays. A key deleted between
// the insert and the read is tried again.
func (s *State) LoadOrStore(ctx context.Context, k string, value []byte) ([]byte, error) {
	if value == nil {
		value = []byte{}
	}
	for {
		tag, err := s.db.pool.Exec(ctx, `INSERT INTO sim_state (space, key, value) VALUES ($1, $2, $3) ON CONFLICT (space, key) DO NOTHING`, s.space, k, value)
		if err != nil {
			return nil, fmt.Errorf("postgres: state load or store: %w", down(err))
		}
		if tag.RowsAffected() == 1 {
			return value, nil
		}
		v, ok, err := s.Get(ctx, k)
		if err != nil || ok {
			return v, err
		}
	}
}

// statePuts writes the simulators' puts that wait, all of them in one
// unsynced upsert, one write at a time: the simulated Lightning node
// puts once per create, so a create costs the server a row, not a
// transaction. Puts of one key in one write keep the last queued (the
// puts raced; either order is one they could have had).
type statePuts struct {
	mu      sync.Mutex
	queue   []*statePut
	running bool
}

type statePut struct {
	ctx        context.Context
	space, key string
	value      []byte
	err        error
	done       chan struct{}
}

const upsertStates = `INSERT INTO sim_state (space, key, value) SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[])
	ON CONFLICT (space, key) DO UPDATE SET value = EXCLUDED.value`

func (q *statePuts) put(ctx context.Context, d *DB, space, key string, value []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &statePut{ctx: ctx, space: space, key: key, value: value, done: make(chan struct{})}
	q.mu.Lock()
	q.queue = append(q.queue, p)
	if !q.running {
		q.running = true
		go q.run(d)
	}
	q.mu.Unlock()
	<-p.done
	return p.err
}

// run writes the puts waiting until none is left.
func (q *statePuts) run(d *DB) {
	for {
		q.mu.Lock()
		puts := q.queue
		q.queue = nil
		if len(puts) == 0 {
			q.running = false
			q.mu.Unlock()
			return
		}
		q.mu.Unlock()
		// The write ends when every caller has given up; the last
		// put of each key is written.
		ctx, cancel := context.WithCancel(context.Background())
		left := int64(len(puts))
		var mu sync.Mutex
		stops := make([]func() bool, 0, len(puts))
		last := map[[2]string]int{}
		for i, p := range puts {
			stops = append(stops, context.AfterFunc(p.ctx, func() {
				mu.Lock()
				defer mu.Unlock()
				if left--; left == 0 {
					cancel()
				}
			}))
			last[[2]string{p.space, p.key}] = i
		}
		var spaces, keys []string
		var values [][]byte
		for i, p := range puts {
			if last[[2]string{p.space, p.key}] == i {
				spaces, keys, values = append(spaces, p.space), append(keys, p.key), append(values, p.value)
			}
		}
		err := d.execUnsynced(ctx, upsertStates, spaces, keys, values)
		for _, stop := range stops {
			stop()
		}
		cancel()
		for _, p := range puts {
			p.err = err
			close(p.done)
		}
	}
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
