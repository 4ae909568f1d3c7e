package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/balances"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/persistence/format"
)

// DB is Kassa's Pebble store. It implements kassa.Journal, kassa.Reader
// and kassa.KeyValue.
type DB struct {
	// closed and ops keep Close from closing Pebble under a read or write
	// in flight (Pebble panics on use after close): every operation counts
	// itself in ops, and Close waits for the count to drop to zero.
	closed   atomic.Bool
	ops      atomic.Int64
	db       *pebble.DB
	metrics  *metrics.Set
	nextTxID atomic.Int64
	// stateInit makes State.LoadOrStore's read and write one step.
	stateInit sync.Mutex
	// swaps makes SwapValue's read and write one step.
	swaps sync.Mutex
	// outboxSeq is the last outbox sequence number given (see PutDelivery).
	outboxSeq atomic.Uint64
	// stores caches decoded store snapshots: every API request reads its
	// store (to check the key) and stores change rarely. Commits of
	// PutStore update it after they are durable.
	stores storeCache
	// balances caches prepaid balances, kept by the commits that
	// change them (see balances.Cache).
	balances  balances.Cache
	tracer    trace.Tracer
	syncWrite bool
	// fail holds the first write error Pebble could not recover from;
	// from then on every call answers it.
	fail  *failure
	clock kassa.Clock
	// requests serialises the commits that record one request id
	// (PutRequest), so that two with one id never both commit; commits
	// of other ids go on and share their fsyncs.
	requests requestLocks
	// expiry holds the live claims of ClaimOverdue (expiry.go).
	expiry expiryClaims
	// pacer spaces the WAL's syncs out under many creates (syncpace.go).
	pacer *syncPacer
	// group makes the synced commits that wait together one (group.go).
	group *groupCommit
}

var (
	_ kassa.Journal    = (*DB)(nil)
	_ kassa.Reader     = (*DB)(nil)
	_ kassa.KeyValue   = (*DB)(nil)
	_ kassa.ValueCache = (*DB)(nil)
)

// Options configure Open.
type Options struct {
	// InMemory keeps everything in memory (tests); Dir is then ignored.
	InMemory bool
	// FS overrides the file system (tests with vfs.NewMem and crash
	// simulation).
	FS     vfs.FS
	Logger *slog.Logger
	// NoSync commits without fsync. Only benchmarks of other parts set it.
	NoSync bool
	// Clock tells when the small values of PutValue expire; nil means
	// the system clock. The callers that set expiries use the same clock.
	Clock kassa.Clock
	// Metrics counts the commits (nil: a Set of the DB's own, unserved).
	Metrics *metrics.Set
}

// Open opens (or creates) the store in dir.
func Open(dir string, o Options) (*DB, error) {
	fail := newFailure()
	logger := pebbleLogger{log: o.Logger, fail: fail}
	pacer := &syncPacer{now: time.Now, last: time.Now()}
	opts := &pebble.Options{Merger: merger, Logger: logger, EventListener: eventListener(logger)}
	switch {
	case o.FS != nil:
		opts.FS = o.FS
	case o.InMemory:
		opts.FS = vfs.NewMem()
	default:
		if err := makePrivate(dir); err != nil {
			return nil, err
		}
		opts.FS = privateFS{vfs.Default}
	}
	pdb, err := openPebble(dir, opts, fail)
	if err != nil {
		return nil, fmt.Errorf("open pebble in %s: %w", dir, err)
	}
	d := &DB{db: pdb, tracer: otel.Tracer("github.com/kassapay/kassa/persistence"), syncWrite: !o.NoSync, fail: fail, clock: o.Clock, pacer: pacer,
		group: &groupCommit{pacer: pacer}, metrics: metrics.Or(o.Metrics)}
	if d.clock == nil {
		d.clock = kassa.SystemClock{}
	}
	last, err := d.lastTransactionID()
	if err != nil {
		pdb.Close()
		return nil, err
	}
	d.nextTxID.Store(last)
	lastOutbox, err := d.lastOutboxSeq()
	if err != nil {
		pdb.Close()
		return nil, err
	}
	d.outboxSeq.Store(lastOutbox)
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := d.indexSearch(context.Background(), log); err != nil {
		pdb.Close()
		return nil, err
	}
	if err := d.indexRequestAges(context.Background(), log); err != nil {
		pdb.Close()
		return nil, err
	}
	return d, nil
}

// openPebble opens Pebble, or answers the failure as soon as a write of
// the opening fails: Pebble retries a failed flush of the replayed WAL
// for as long as the disk refuses it, and would not return meanwhile.
func openPebble(dir string, opts *pebble.Options, fail *failure) (*pebble.DB, error) {
	type result struct {
		db  *pebble.DB
		err error
	}
	done := make(chan result, 1)
	go func() {
		var r result
		r.err = guarded(func() (err error) {
			r.db, err = pebble.Open(dir, opts)
			return err
		})
		done <- r
	}()
	select {
	case r := <-done:
		if r.err == nil && fail.get() != nil {
			r.db.Close()
			return nil, fail.get()
		}
		return r.db, r.err
	case <-fail.done:
		// Should the disk recover, the open ends and is closed at once.
		go func() {
			if r := <-done; r.db != nil {
				r.db.Close()
			}
		}()
		return nil, fail.get()
	}
}

// Close closes the store once the operations in flight are done. Later
// reads and writes fail with an error. After a failure (see Err) it
// returns the failure.
func (d *DB) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	for d.ops.Load() > 0 {
		time.Sleep(time.Millisecond)
	}
	failed := d.fail.get()
	d.fail.mu.Lock()
	stuck := d.fail.stuck
	d.fail.mu.Unlock()
	if stuck {
		// A Pebble goroutine is parked in Fatalf; Close would wait for it.
		// The process is about to exit, and the WAL on disk is the truth.
		return failed
	}
	if failed == nil {
		return guarded(d.db.Close)
	}
	// After a failure Pebble may still be retrying a flush that the disk
	// refuses; give its Close a bounded time, so that the process exits.
	closed := make(chan struct{})
	go func() {
		guarded(d.db.Close)
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(failedCloseWait):
	}
	return failed
}

// failedCloseWait bounds Close after a failure.
const failedCloseWait = 5 * time.Second

// Err returns nil while the store works. Once a write to the disk failed
// (no space left, an I/O error, a failed fsync) it returns that failure,
// an Unavailable error matching ErrFailed and the file system's error,
// and every read and write answers it at once from then on: what Pebble
// holds in memory may include a batch that is not on disk. Only a new
// process, replaying what the disk holds, can go on.
func (d *DB) Err() error { return d.fail.get() }

// Failed returns a channel that is closed when the store fails (see Err).
func (d *DB) Failed() <-chan struct{} { return d.fail.done }

// enter counts an operation in; it answers an error once the store is
// closed or failed. Every nil enter is paired with a leave.
func (d *DB) enter() error {
	d.ops.Add(1)
	if d.closed.Load() {
		d.ops.Add(-1)
		return errClosed
	}
	if err := d.fail.get(); err != nil {
		d.ops.Add(-1)
		return err
	}
	return nil
}

func (d *DB) leave() { d.ops.Add(-1) }

// errClosed is returned for reads and writes after Close.
var errClosed = errors.New("persistence: store is closed")

func (d *DB) lastTransactionID() (int64, error) {
	k, err := d.lastKey(context.Background(), []byte("tx/"))
	if err != nil || k == nil {
		return 0, err
	}
	if len(k) != 8 {
		return 0, fmt.Errorf("malformed transaction key %q", k)
	}
	return int64(binary.BigEndian.Uint64(k)), nil
}

// lastKey returns the greatest key under prefix, after the prefix, or
// nil when there is none.
func (d *DB) lastKey(ctx context.Context, prefix []byte) ([]byte, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return nil, err
	}
	defer it.Close()
	if !it.Last() {
		return nil, it.Error()
	}
	return append([]byte(nil), it.Key()[len(prefix):]...), nil
}

// Batch is a kassa.Batch on Pebble.
type Batch struct {
	db     *DB
	b      *pebble.Batch
	count  int
	err    error
	stores []cachedStore // to cache once committed
	// requests are the request keys the batch records (PutRequest).
	requests [][]byte
	// deltas are the balance changes of the batch, by store.
	deltas map[string]int64
	// unclaimed are the deadlines the batch takes out of the deadline
	// index, whose expiry claims go once it is committed.
	unclaimed []claimedDeadline
}

// NewBatch starts a batch.
func (d *DB) NewBatch() kassa.Batch { return &Batch{db: d, b: d.db.NewBatch()} }

func (b *Batch) set(k, v []byte) {
	if b.err == nil {
		b.err = b.b.Set(k, v, nil)
		b.count++
	}
}

func (b *Batch) del(k []byte) {
	if b.err == nil {
		b.err = b.b.Delete(k, nil)
		b.count++
	}
}

// setJSON writes the document v in its format (package format) at k,
// after prefix.
func (b *Batch) setJSON(k []byte, prefix []byte, v any) {
	data, err := format.Append(prefix, v)
	if err != nil {
		if b.err == nil {
			b.err = err
		}
		return
	}
	b.set(k, data)
}

// AppendEvent appends an event to a stream.
func (b *Batch) AppendEvent(s kassa.Stream, seq uint64, event []byte) {
	b.set(eventKey(s.Kind, s.ID, seq), event)
}

// PutStore writes a store's snapshot and its API key index.
func (b *Batch) PutStore(st *kassa.Store, seq uint64) {
	b.setJSON(storeKey(st.ID), u64(seq), st)
	for _, k := range st.APIKeys {
		b.set(apiKeyKey(k.Key), str(st.ID))
	}
	copied := *st
	b.stores = append(b.stores, cachedStore{store: &copied, seq: seq})
}

// PutInvoice writes an invoice's snapshot and updates its indexes.
func (b *Batch) PutInvoice(inv, prev *kassa.Invoice, seq uint64) {
	b.setJSON(invoiceKey(inv.ID), u64(seq), inv)
	b.putSearchKeys(inv, prev)
	if prev == nil {
		b.set(invoiceByStoreKey(inv.StoreID, inv.CreatedAt, inv.ID), nil)
		if inv.OnchainAddress != "" {
			b.set(addressKey(inv.OnchainAddress), str(inv.ID))
		}
		if inv.PaymentHash != "" {
			b.set(paymentHashKey(inv.PaymentHash), str(inv.ID))
		}
	}
	next, nextOK := inv.Deadline()
	if prev != nil {
		if old, ok := prev.Deadline(); ok && (!nextOK || !old.Equal(next)) {
			b.del(openKey(old, inv.ID))
			b.unclaimed = append(b.unclaimed, claimedDeadline{invoiceID: inv.ID, deadline: string(ms(old))})
		}
	}
	if nextOK {
		b.set(openKey(next, inv.ID), str(inv.StoreID))
	}
}

// PutTransaction assigns tx an ID, writes it with its indexes and applies
// its balance delta.
func (b *Batch) PutTransaction(tx *kassa.Transaction) {
	tx.ID = b.db.nextTxID.Add(1)
	b.setJSON(transactionKey(tx.ID), nil, tx)
	b.set(transactionByStoreKey(tx.StoreID, tx.CreatedAt, tx.ID), nil)
	if tx.InvoiceID != "" {
		b.set(transactionByInvoiceKey(tx.InvoiceID, tx.ID), nil)
	}
	if delta := tx.BalanceDelta(); delta != 0 && b.err == nil {
		b.err = b.b.Merge(balanceKey(tx.StoreID), encodeInt64(int64(delta)), nil)
		if b.deltas == nil {
			b.deltas = map[string]int64{}
		}
		b.deltas[tx.StoreID] += int64(delta)
	}
}

// PutPaymentRequest writes a pay link and its index.
func (b *Batch) PutPaymentRequest(pr *kassa.PaymentRequest) {
	b.setJSON(paymentRequestKey(pr.ID), nil, pr)
	b.set(paymentRequestByStoreKey(pr.StoreID, pr.CreatedAt, pr.ID), nil)
}

// MarkPaymentRequestPaid records the invoice that paid a pay link. It is
// a key of its own so that the invoice actor never rewrites the pay link
// document, which the store actor owns.
func (b *Batch) MarkPaymentRequestPaid(paymentRequestID, invoiceID string) {
	b.set(paymentRequestPaidKey(paymentRequestID), str(invoiceID))
}

// PaceSyncs has the WAL wait a little after a sync while lightning (the
// creates awaiting Lightning) says many commits are coming one by one,
// or underWay (the creates under way) says many are coming briskly, so
// that they share syncs (syncpace.go). Each commit still returns only
// once it is synced.
func (d *DB) PaceSyncs(lightning, underWay func() int) {
	d.pacer.lightning.Store(&lightning)
	d.pacer.underWay.Store(&underWay)
}

// Commit writes the batch durably.
func (d *DB) Commit(ctx context.Context, kb kassa.Batch) error {
	b, ok := kb.(*Batch)
	if !ok {
		return fmt.Errorf("persistence: foreign batch %T", kb)
	}
	_, span := d.tracer.Start(ctx, "pebble.Commit", trace.WithAttributes(
		attribute.Int("batch.ops", b.count), attribute.Int("batch.bytes", len(b.b.Repr()))))
	defer span.End()
	defer b.b.Close()
	if b.err != nil {
		span.SetStatus(codes.Error, b.err.Error())
		return fmt.Errorf("build batch: %w", b.err)
	}
	opts := pebble.Sync
	if !d.syncWrite {
		opts = pebble.NoSync
	}
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	if len(b.requests) > 0 {
		defer d.requests.lock(b.requests)()
		taken, err := d.requestsTaken(b.requests)
		if err != nil {
			return err
		}
		if taken {
			return kassa.ErrRequestDone
		}
	}
	if opts == pebble.Sync {
		d.pacer.arrive()
	}
	start := time.Now()
	size := len(b.b.Repr())
	if err := d.balances.Write(b.deltas, func() error {
		if opts == pebble.Sync {
			return d.group.commit(b.b)
		}
		return guarded(func() error { return b.b.Commit(opts) })
	}); err != nil {
		span.SetStatus(codes.Error, err.Error())
		if errors.Is(err, ErrFailed) {
			return err
		}
		return fmt.Errorf("commit batch: %w", err)
	}
	d.metrics.CommitDuration.Observe(time.Since(start).Seconds())
	d.metrics.CommitBytes.Observe(float64(size))
	for _, c := range b.stores {
		d.stores.put(c)
	}
	d.expiry.forget(b.unclaimed)
	return nil
}

// Events calls fn for each event of s after seq.
func (d *DB) Events(ctx context.Context, s kassa.Stream, after uint64, fn func(uint64, []byte) error) error {
	if after == math.MaxUint64 {
		return nil // after+1 would wrap to 0 and replay the whole stream
	}
	prefix := eventPrefix(s.Kind, s.ID)
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: eventKey(s.Kind, s.ID, after+1), UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		k := it.Key()
		seq := binary.BigEndian.Uint64(k[len(k)-8:])
		if err := fn(seq, append([]byte(nil), it.Value()...)); err != nil {
			return err
		}
	}
	return it.Error()
}

// StreamSeq returns the sequence number of the last event of s.
func (d *DB) StreamSeq(ctx context.Context, s kassa.Stream) (uint64, error) {
	k, err := d.lastKey(ctx, eventPrefix(s.Kind, s.ID))
	if err != nil || len(k) != 8 {
		return 0, err
	}
	return binary.BigEndian.Uint64(k), nil
}

// scanPrefix calls fn for each record under prefix, in key order, with
// the key after prefix and the value; both are valid during the call only.
func (d *DB) scanPrefix(ctx context.Context, prefix []byte, fn func(rest, value []byte) error) error {
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: prefixEnd(prefix)})
	if err != nil {
		return err
	}
	defer it.Close()
	for it.First(); it.Valid(); it.Next() {
		if err := fn(it.Key()[len(prefix):], it.Value()); err != nil {
			return err
		}
	}
	return it.Error()
}

// getJSON decodes the JSON record at k, or returns notFound.
func getJSON[T any](d *DB, k []byte, notFound error) (*T, error) {
	v, err := d.get(k)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, notFound
	}
	var out T
	if err := format.Unmarshal(v, &out); err != nil {
		return nil, fmt.Errorf("decode record %q: %w", k, err)
	}
	return &out, nil
}

// get returns a copy of the value at k, or nil and no error when absent.
func (d *DB) get(k []byte) ([]byte, error) {
	if err := d.enter(); err != nil {
		return nil, err
	}
	defer d.leave()
	v, closer, err := d.db.Get(k)
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), v...)
	closer.Close()
	return out, nil
}

// GetValue returns the value at key unless it expired.
func (d *DB) GetValue(ctx context.Context, k string) ([]byte, bool, error) {
	v, err := d.get(kvKey(k))
	if err != nil || len(v) < 8 {
		return nil, false, err
	}
	if d.clock.Now().UnixMilli() >= int64(binary.BigEndian.Uint64(v[:8])) {
		return nil, false, nil
	}
	return v[8:], true, nil
}

// PutValue stores value at key until expires.
func (d *DB) PutValue(ctx context.Context, k string, value []byte, expires time.Time) error {
	return d.putValue(k, value, expires, pebble.Sync)
}

// CacheValue stores value at key until expires without waiting for the
// disk (kassa.ValueCache): a crash may lose it.
func (d *DB) CacheValue(ctx context.Context, k string, value []byte, expires time.Time) error {
	return d.putValue(k, value, expires, pebble.NoSync)
}

// SwapValue sets key to value until expires only while key holds old
// (nil: no value, or an expired one), and says whether it did. The
// check and the write are one step for every SwapValue of the store.
func (d *DB) SwapValue(ctx context.Context, k string, old, value []byte, expires time.Time) (bool, error) {
	d.swaps.Lock()
	defer d.swaps.Unlock()
	cur, ok, err := d.GetValue(ctx, k)
	if err != nil {
		return false, err
	}
	if ok != (old != nil) || ok && !bytes.Equal(cur, old) {
		return false, nil
	}
	if err := d.putValue(k, value, expires, pebble.Sync); err != nil {
		return false, err
	}
	return true, nil
}

func (d *DB) putValue(k string, value []byte, expires time.Time, sync *pebble.WriteOptions) error {
	v := append(ms(expires), value...)
	if err := d.enter(); err != nil {
		return err
	}
	defer d.leave()
	return guarded(func() error { return d.db.Set(kvKey(k), v, sync) })
}

// SweepExpired deletes the small values whose expiry passed before now
// and the request records older than kassa.RequestWindow, so that
// neither piles up. It returns how many it deleted.
func (d *DB) SweepExpired(ctx context.Context, now time.Time) (int, error) {
	requests, err := d.sweepRequests(ctx, now.Add(-kassa.RequestWindow))
	if err != nil {
		return 0, err
	}
	values, err := d.sweepValues(ctx, now)
	return requests + values, err
}

// sweepValues deletes the small values whose expiry passed before now.
func (d *DB) sweepValues(ctx context.Context, now time.Time) (int, error) {
	var expired [][]byte
	prefix := []byte("kv/")
	err := d.scanPrefix(ctx, prefix, func(k, v []byte) error {
		if len(v) >= 8 && now.UnixMilli() >= int64(binary.BigEndian.Uint64(v[:8])) {
			expired = append(expired, key("kv/", k))
		}
		return nil
	})
	if err != nil || len(expired) == 0 {
		return 0, err
	}
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.leave()
	b := d.db.NewBatch()
	defer b.Close()
	for _, k := range expired {
		if err := b.Delete(k, nil); err != nil {
			return 0, err
		}
	}
	if err := guarded(func() error { return b.Commit(pebble.NoSync) }); err != nil {
		return 0, err
	}
	return len(expired), nil
}

// Memory returns the bytes Pebble holds outside Go's heap: its block
// cache (bounded by its configured size) and its memtables. Zero after
// Close.
func (d *DB) Memory() (blockCache, memtables int64) {
	if d.enter() != nil {
		return 0, 0
	}
	defer d.leave()
	m := d.db.Metrics()
	return m.BlockCache.Size, int64(m.MemTable.Size + m.MemTable.ZombieSize)
}
