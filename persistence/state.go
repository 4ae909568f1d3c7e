package persistence

import (
	"context"
	"errors"

	"github.com/cockroachdb/pebble/v2"
)

// State is a small key-value space of its own inside the store, for a
// simulated backend's state (its invoices, outputs, height, events not yet
// acknowledged), so that it survives a restart. Keys live under
// st/<name>/.
//
// Writes are not synced by themselves: Pebble has one WAL, so a write is
// durable as soon as any later synced commit returns, which every
// invoice's commit is. A crash before that loses it together with the
// change of the service that it belongs to.
type State struct {
	db     *DB
	prefix string
}

// State returns the space called name.
func (d *DB) State(name string) *State { return &State{db: d, prefix: "st/" + name + "/"} }

func (s *State) key(k string) []byte { return key(s.prefix, str(k)) }

// Get returns a copy of the value at k and whether there is one.
func (s *State) Get(ctx context.Context, k string) ([]byte, bool, error) {
	if err := s.db.enter(); err != nil {
		return nil, false, err
	}
	defer s.db.leave()
	v, closer, err := s.db.db.Get(s.key(k))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer closer.Close()
	return append([]byte{}, v...), true, nil
}

// Put sets k to value.
func (s *State) Put(ctx context.Context, k string, value []byte) error {
	if err := s.db.enter(); err != nil {
		return err
	}
	defer s.db.leave()
	if value == nil {
		value = []byte{}
	}
	return guarded(func() error { return s.db.db.Set(s.key(k), value, pebble.NoSync) })
}

// LoadOrStore sets k to value unless k has a value, and returns what k
// holds afterwards. One process writes a Pebble store, so a lock of the
// DB makes the read and the write one step for every caller.
func (s *State) LoadOrStore(ctx context.Context, k string, value []byte) ([]byte, error) {
	s.db.stateInit.Lock()
	defer s.db.stateInit.Unlock()
	v, ok, err := s.Get(ctx, k)
	if err != nil || ok {
		return v, err
	}
	if err := s.Put(ctx, k, value); err != nil {
		return nil, err
	}
	return append([]byte{}, value...), nil
}

// Delete removes k; a missing key is no error.
func (s *State) Delete(ctx context.Context, k string) error {
	if err := s.db.enter(); err != nil {
		return err
	}
	defer s.db.leave()
	return guarded(func() error { return s.db.db.Delete(s.key(k), pebble.NoSync) })
}

// Scan calls fn for each key under prefix, in key order, with the key
// (without the space's own prefix) and its value, valid during the call.
func (s *State) Scan(ctx context.Context, prefix string, fn func(k string, value []byte) error) error {
	return s.db.scanPrefix(ctx, s.key(prefix), func(rest, value []byte) error {
		return fn(prefix+string(rest), value)
	})
}
