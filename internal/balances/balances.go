// Package balances caches stores' prepaid balances beside the database
// that holds them, kept exact by the commits that change them.
package balances

import "sync"

// Cache holds the running prepaid balance of each store read
// since the database opened, so that the credit-limit checks of every
// create read a map instead of the database.
//
// It stays exact: a commit that changes balances holds writers shared
// from before its write until it has added its deltas to the cached
// entries, and a read that misses takes writers exclusively, so no
// balance write is between the database and the cache while it reads
// and fills the entry. Writers do not wait for each other, so the
// database still groups their synced commits.
type Cache struct {
	writers sync.RWMutex
	mu      sync.Mutex
	m       map[string]int64
}

// Get returns a cached balance.
func (c *Cache) Get(store string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[store]
	return v, ok
}

// Load returns the cached balance of store, or reads it with read and
// caches it unless keep (nil: always) says no by then.
func (c *Cache) Load(store string, read func() (int64, error), keep func() bool) (int64, error) {
	if v, ok := c.Get(store); ok {
		return v, nil
	}
	c.writers.Lock()
	defer c.writers.Unlock()
	if v, ok := c.Get(store); ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if keep != nil && !keep() {
		return v, nil
	}
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[store] = v
	return v, nil
}

// Write runs commit, which writes deltas (store → change), and brings
// the cached balances along: added when it succeeded, forgotten when it
// failed (a failed write may still have reached the disk).
func (c *Cache) Write(deltas map[string]int64, commit func() error) error {
	if len(deltas) == 0 {
		return commit()
	}
	c.writers.RLock()
	defer c.writers.RUnlock()
	err := commit()
	c.mu.Lock()
	defer c.mu.Unlock()
	for store, delta := range deltas {
		if _, ok := c.m[store]; !ok {
			continue
		}
		if err != nil {
			delete(c.m, store)
		} else {
			c.m[store] += delta
		}
	}
	return err
}

// Forget drops the cached balance of store.
func (c *Cache) Forget(store string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.m, store)
}
