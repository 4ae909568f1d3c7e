// Package simstore holds the small key-value store the simulated chain and
// Lightning node keep their state in, and an in-memory implementation of
// it for simulators that need not survive a restart.
package simstore

import (
	"context"
	"slices"
	"strings"
	"sync"
)

// Store keeps a simulator's records. kassa serve backs it with Pebble.
type Store interface {
	Get(ctx context.Context, key string) ([]byte, bool, error)
	Put(ctx context.Context, key string, value []byte) error
	// LoadOrStore stores value under key unless key has a value, and
	// returns the value key holds afterwards. Callers racing on one key,
	// in one process or in several on a shared store, all get the same
	// value: the one stored first.
	LoadOrStore(ctx context.Context, key string, value []byte) ([]byte, error)
	Delete(ctx context.Context, key string) error
	// Scan calls fn for each key under prefix, in key order.
	Scan(ctx context.Context, prefix string, fn func(key string, value []byte) error) error
}

// Mem is a Store in memory.
type Mem struct {
	mu sync.Mutex
	m  map[string][]byte
}

var _ Store = (*Mem)(nil)

// NewMem returns an empty Mem.
func NewMem() *Mem { return &Mem{m: map[string][]byte{}} }

// Get returns a copy of the value of key.
func (s *Mem) Get(_ context.Context, key string) ([]byte, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.m[key]
	return slices.Clone(v), ok, nil
}

// Put stores a copy of value under key.
func (s *Mem) Put(_ context.Context, key string, value []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.m[key] = slices.Clone(value)
	return nil
}

// LoadOrStore stores a copy of value under key unless key has a value,
// and returns a copy of what key holds afterwards.
func (s *Mem) LoadOrStore(_ context.Context, key string, value []byte) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.m[key]; ok {
		return slices.Clone(v), nil
	}
	s.m[key] = slices.Clone(value)
	return slices.Clone(value), nil
}

// Delete removes key.
func (s *Mem) Delete(_ context.Context, key string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.m, key)
	return nil
}

// Scan calls fn for each key under prefix, in key order, outside the lock.
func (s *Mem) Scan(_ context.Context, prefix string, fn func(string, []byte) error) error {
	s.mu.Lock()
	var keys []string
	for k := range s.m {
		if strings.HasPrefix(k, prefix) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	vals := make([][]byte, len(keys))
	for i, k := range keys {
		vals[i] = slices.Clone(s.m[k])
	}
	s.mu.Unlock()
	for i, k := range keys {
		if err := fn(k, vals[i]); err != nil {
			return err
		}
	}
	return nil
}
