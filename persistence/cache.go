package persistence

import (
	"sync"

	"github.com/kassapay/kassa"
)

// cachedStore is a decoded store snapshot and its sequence number.
type cachedStore struct {
	store *kassa.Store
	seq   uint64
}

// storeCache holds decoded stores and the store of each API key index
// entry seen. Keys are only ever added today; whatever removes one must
// also drop it here. A newer sequence number always wins, so a read from disk
// that raced with a commit cannot put an older store back.
type storeCache struct {
	mu     sync.RWMutex
	stores map[string]cachedStore
	keys   map[string]string // apiKeyKey → store id
}

func (c *storeCache) get(id string) (cachedStore, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	s, ok := c.stores[id]
	return s, ok
}

func (c *storeCache) put(s cachedStore) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stores == nil {
		c.stores = map[string]cachedStore{}
		c.keys = map[string]string{}
	}
	if old, ok := c.stores[s.store.ID]; ok && old.seq > s.seq {
		return
	}
	c.stores[s.store.ID] = s
	for _, k := range s.store.APIKeys {
		c.keys[string(apiKeyKey(k.Key))] = s.store.ID
	}
}

func (c *storeCache) byKey(k string) (string, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	id, ok := c.keys[k]
	return id, ok
}

func (c *storeCache) putKey(k, storeID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.keys == nil {
		c.stores = map[string]cachedStore{}
		c.keys = map[string]string{}
	}
	c.keys[k] = storeID
}

// balanceCache holds the running prepaid balance of each store read
// since the database opened, so that the credit-limit checks of every
// create read a map instead of Pebble (a balance is a merge key whose
// read combines every top-up and fee not yet compacted).
//
// It stays exact: a commit that changes balances holds writers shared
// from before its write until it has added its deltas to the cached
// entries, and a read that misses takes writers exclusively, so no
// balance write is between Pebble and the cache while it reads Pebble
// and fills the entry. Writers do not wait for each other, so Pebble
// still groups their synced commits.
type balanceCache struct {
	writers sync.RWMutex
	mu      sync.Mutex
	m       map[string]int64
}

// get returns a cached balance.
func (c *balanceCache) get(store string) (int64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[store]
	return v, ok
}

// load returns the cached balance of store, or reads it with read and
// caches it.
func (c *balanceCache) load(store string, read func() (int64, error)) (int64, error) {
	if v, ok := c.get(store); ok {
		return v, nil
	}
	c.writers.Lock()
	defer c.writers.Unlock()
	if v, ok := c.get(store); ok {
		return v, nil
	}
	v, err := read()
	if err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string]int64{}
	}
	c.m[store] = v
	return v, nil
}

// write runs commit, which writes deltas (store → change), and brings
// the cached balances along: added when it succeeded, forgotten when it
// failed (a failed write may still have reached the disk).
func (c *balanceCache) write(deltas map[string]int64, commit func() error) error {
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
