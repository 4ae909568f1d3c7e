package persistence

import (
	"context"
	"slices"
	"sync"

	"github.com/kassapay/kassa"
)

// requestKey is where a create's request id is recorded:
// req/<store>\0<id> → the JSON kassa.RequestRecord.
func requestKey(store, id string) []byte { return key("req/", str(store), sepb, str(id)) }

var errRequestNotFound = kassa.Errorf(kassa.NotFound, "request not found")

var (
	_ kassa.RequestBatch  = (*Batch)(nil)
	_ kassa.RequestReader = (*DB)(nil)
)

// PutRequest records a create's request id with what it created. The
// commit fails with kassa.ErrRequestDone when the id is recorded already.
func (b *Batch) PutRequest(r kassa.RequestRecord) {
	k := requestKey(r.StoreID, r.ID)
	b.setJSON(k, nil, r)
	b.requests = append(b.requests, k)
}

// Request returns the record of request id of the store.
func (d *DB) Request(ctx context.Context, storeID, id string) (*kassa.RequestRecord, error) {
	return getJSON[kassa.RequestRecord](d, requestKey(storeID, id), errRequestNotFound)
}

// requestsTaken reports whether any of keys is recorded; the caller
// holds their locks (requestLocks) until its batch is committed, so that
// two batches with one request id never both commit.
func (d *DB) requestsTaken(keys [][]byte) (bool, error) {
	for _, k := range keys {
		v, err := d.get(k)
		if err != nil {
			return false, err
		}
		if v != nil {
			return true, nil
		}
	}
	return false, nil
}

// requestLocks holds a lock per request key while a commit that records
// it checks and writes it: a second commit of the key waits until the
// first is durable, then finds it taken; commits of other keys do not
// wait, so that their synced writes can share one fsync.
type requestLocks struct {
	mu    sync.Mutex
	locks map[string]*requestLock
}

type requestLock struct {
	mu    sync.Mutex
	users int
}

// lock locks keys, in order (a batch may record more than one), and
// returns the function that unlocks them.
func (l *requestLocks) lock(keys [][]byte) (unlock func()) {
	names := make([]string, len(keys))
	for i, k := range keys {
		names[i] = string(k)
	}
	slices.Sort(names)
	names = slices.Compact(names)
	held := make([]*requestLock, len(names))
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*requestLock{}
	}
	for i, n := range names {
		rl := l.locks[n]
		if rl == nil {
			rl = &requestLock{}
			l.locks[n] = rl
		}
		rl.users++
		held[i] = rl
	}
	l.mu.Unlock()
	for _, rl := range held {
		rl.mu.Lock()
	}
	return func() {
		for _, rl := range held {
			rl.mu.Unlock()
		}
		l.mu.Lock()
		for i, n := range names {
			if held[i].users--; held[i].users == 0 {
				delete(l.locks, n)
			}
		}
		l.mu.Unlock()
	}
}
