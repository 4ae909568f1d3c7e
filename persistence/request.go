package persistence

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// requestKey is where a create's request id is recorded:
// req/<store>\0<id> → the JSON kassa.RequestRecord.
func requestKey(store, id string) []byte { return key("req/", str(store), sepb, str(id)) }

var errRequestNotFound = kassa.Errorf(kassa.NotFound, "request not found")

var (
	_ kassa.RequestBatch  = (*Batch)(nil)
	_ kassa.RequestReader = (*DB)(nil)
)

// requestAgeKey orders the request records that expire by when they
// were written: rqx/<atMs:8><requestKey> → nothing.
func requestAgeKey(at time.Time, reqKey []byte) []byte { return key("rqx/", ms(at), reqKey) }

// PutRequest records a create's request id with what it created, stamped
// with the store's clock when r.At is zero. The commit fails with
// kassa.ErrRequestDone when the id is recorded already.
func (b *Batch) PutRequest(r kassa.RequestRecord) {
	if r.At.IsZero() {
		r.At = b.db.clock.Now().UTC()
	}
	k := requestKey(r.StoreID, r.ID)
	b.setJSON(k, nil, r)
	if r.Expires() {
		b.set(requestAgeKey(r.At, k), nil)
	}
	b.requests = append(b.requests, k)
}

// sweepRequests deletes the request records that expire and were
// written before cutoff, with their age keys, and returns how many.
func (d *DB) sweepRequests(ctx context.Context, cutoff time.Time) (int, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.leave()
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: []byte("rqx/"), UpperBound: key("rqx/", ms(cutoff))})
	if err != nil {
		return 0, err
	}
	var gone [][]byte
	for it.First(); it.Valid(); it.Next() {
		gone = append(gone, slices.Clone(it.Key()))
	}
	if err := errors.Join(it.Error(), it.Close()); err != nil || len(gone) == 0 {
		return 0, err
	}
	b := d.db.NewBatch()
	defer b.Close()
	for _, k := range gone {
		if err := b.Delete(k, nil); err != nil {
			return 0, err
		}
		if err := b.Delete(k[len("rqx/")+8:], nil); err != nil {
			return 0, err
		}
	}
	if err := guarded(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		return 0, err
	}
	return len(gone), nil
}

// requestAgeVersion is the version of the request records' age keys; a
// store whose "ver/requests" is older gets them at Open.
const requestAgeVersion = 1

var requestAgeVersionKey = []byte("ver/requests")

// indexRequestAges gives the request records written before they had
// age keys one, once, at Open: stamped with the time of this walk, so
// that they expire RequestWindow from now, never sooner than a record
// written now. A crash on the way starts the walk again (its writes are
// idempotent but for the stamp, which only moves later).
func (d *DB) indexRequestAges(ctx context.Context, log *slog.Logger) error {
	v, err := d.get(requestAgeVersionKey)
	if err != nil {
		return err
	}
	if len(v) == 8 && binary.BigEndian.Uint64(v) >= requestAgeVersion {
		return nil
	}
	now := d.clock.Now().UTC()
	b := d.db.NewBatch()
	defer func() { b.Close() }()
	n := 0
	err = d.scanPrefix(ctx, []byte("req/"), func(rest, v []byte) error {
		var r kassa.RequestRecord
		if err := format.Unmarshal(v, &r); err != nil {
			return fmt.Errorf("decode request record %q: %w", rest, err)
		}
		if !r.Expires() || !r.At.IsZero() {
			return nil
		}
		n++
		return b.Set(requestAgeKey(now, key("req/", rest)), nil, nil)
	})
	if err == nil {
		err = b.Set(requestAgeVersionKey, u64(requestAgeVersion), nil)
	}
	if err == nil {
		err = guarded(func() error { return b.Commit(pebble.Sync) })
	}
	if err == nil && n > 0 {
		log.Info("store: request records of older builds now expire", "records", n, "window", kassa.RequestWindow)
	}
	return err
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
