package postgres

import (
	"context"
	"sync"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/balances"
)

// ownedCache keeps, for the stores whose actor runs in this process
// (Own), what every create reads: the store snapshot, the store of each
// API key presented, and the balance. The actor that owns a store is
// the only writer of its snapshot and, with its invoice actors, of its
// balance (the membership fence refuses the others), so the commits of
// this process keep the entries exact: a commit that writes a store or
// a balance updates them once durable, and forgets them when its outcome
// is unknown. Stores this process does not own are read from the
// database every time, since another node may change them.
type ownedCache struct {
	balances balances.Cache

	mu sync.Mutex
	// owned counts the activations of each store here; gen changes at
	// every Own and release, so that a read begun under an earlier
	// ownership does not fill the cache.
	owned  map[string]int
	gen    map[string]uint64
	stores map[string]cachedStore
	keys   map[string]string // API key hash → store id
}

// cachedStore is a decoded store snapshot and its sequence number.
type cachedStore struct {
	store *kassa.Store
	seq   uint64
}

// Own marks the store as owned by an actor of this process until the
// returned release is called, and starts its cache afresh.
func (d *DB) Own(storeID string) (release func()) {
	c := &d.cache
	c.mu.Lock()
	if c.owned == nil {
		c.owned, c.gen = map[string]int{}, map[string]uint64{}
		c.stores, c.keys = map[string]cachedStore{}, map[string]string{}
	}
	c.owned[storeID]++
	c.dropLocked(storeID)
	c.mu.Unlock()
	// After the generation moved on: a balance read under the earlier
	// one is no longer kept (balances.Cache.Load asks still under its
	// own lock, which is why this is not under c.mu).
	c.balances.Forget(storeID)
	var once sync.Once
	return func() {
		once.Do(func() {
			c.mu.Lock()
			if c.owned[storeID]--; c.owned[storeID] <= 0 {
				delete(c.owned, storeID)
			}
			c.dropLocked(storeID)
			c.mu.Unlock()
			c.balances.Forget(storeID)
		})
	}
}

// dropLocked forgets the cached snapshot and keys of the store and
// moves its generation on; the caller forgets the balance.
func (c *ownedCache) dropLocked(storeID string) {
	c.gen[storeID]++
	delete(c.stores, storeID)
	for k, id := range c.keys {
		if id == storeID {
			delete(c.keys, k)
		}
	}
}

// ownedGen tells whether the store is owned here, and its generation.
func (c *ownedCache) ownedGen(storeID string) (bool, uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owned[storeID] > 0, c.gen[storeID]
}

// still tells whether the store is owned here under generation gen.
func (c *ownedCache) still(storeID string, gen uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.owned[storeID] > 0 && c.gen[storeID] == gen
}

// store returns the cached snapshot of an owned store, as the caller's
// copy (its slices are shared and read-only).
func (c *ownedCache) store(storeID string) (*kassa.Store, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	s, ok := c.stores[storeID]
	if !ok || c.owned[storeID] <= 0 {
		return nil, 0, false
	}
	copied := *s.store
	return &copied, s.seq, true
}

// byKey returns the owned store of an API key hash seen before.
func (c *ownedCache) byKey(hash string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.keys[hash]
	return id, ok && c.owned[id] > 0
}

// putRead caches a snapshot read from the database, if the store is
// still owned under gen and nothing newer is cached.
func (c *ownedCache) putRead(st *kassa.Store, seq, gen uint64, keyHash string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.owned[st.ID] <= 0 || c.gen[st.ID] != gen {
		return
	}
	c.putLocked(st, seq)
	if keyHash != "" {
		c.keys[keyHash] = st.ID
	}
}

// putLocked caches a snapshot unless a newer one is cached.
func (c *ownedCache) putLocked(st *kassa.Store, seq uint64) {
	if old, ok := c.stores[st.ID]; ok && old.seq > seq {
		return
	}
	copied := *st
	c.stores[st.ID] = cachedStore{store: &copied, seq: seq}
}

// committed brings the cached snapshots of an owned store along with
// a commit that wrote them: replaced once durable, forgotten when the
// outcome is unknown.
func (c *ownedCache) committed(written []cachedStore, err error) {
	if len(written) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range written {
		if c.owned[w.store.ID] <= 0 {
			continue
		}
		if err != nil {
			c.dropLocked(w.store.ID)
			continue
		}
		c.putLocked(w.store, w.seq)
	}
}

// commit writes the batch through the group committer and brings the
// owned cache along (see ownedCache).
func (d *DB) commit(ctx context.Context, b *Batch, f *fence, what string) error {
	var err error
	werr := d.cache.balances.Write(b.deltas, func() error {
		err = d.group.commit(ctx, b, f, what)
		return err
	})
	d.cache.committed(b.stores, err)
	return werr
}
