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
