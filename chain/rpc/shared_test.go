//go:build daemon

package rpc

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/wire"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/postgres"
)

// countingReader counts the reads a cluster's watcher makes of the
// store, and the rows they return.
type countingReader struct {
	*postgres.DB
	queries, rows atomic.Int64
}

func (r *countingReader) Stores(ctx context.Context, fn func(*kassa.Store) error) error {
	r.queries.Add(1)
	return r.DB.Stores(ctx, func(st *kassa.Store) error { r.rows.Add(1); return fn(st) })
}

func (r *countingReader) Invoices(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Invoice) error) (string, error) {
	r.queries.Add(1)
	return r.DB.Invoices(ctx, storeID, q, func(inv *kassa.Invoice) error { r.rows.Add(1); return fn(inv) })
}

func (r *countingReader) Invoice(ctx context.Context, id string) (*kassa.Invoice, error) {
	r.queries.Add(1)
	r.rows.Add(1)
	return r.DB.Invoice(ctx, id)
}

func (r *countingReader) NewAddresses(ctx context.Context, cursor int64, fn func(kassa.WatchedAddress) error) (int64, error) {
	r.queries.Add(1)
	return r.DB.NewAddresses(ctx, cursor, func(a kassa.WatchedAddress) error { r.rows.Add(1); return fn(a) })
}

// sharedPass is one cluster watcher's pass over a store of n stores,
// each with two invoices created in the last minute before the watcher
// started, and fresh invoices created after: the queries and rows the
// pass read, how long it took, and whether every fresh address is
// watched.
func sharedPass(t *testing.T, stores, fresh int) (queries, rows int64, took time.Duration, missed []string, logs string) {
	t.Helper()
	ctx := t.Context()
	db, _ := openNodes(t, kassa.SystemClock{})
	now := time.Now().UTC()
	b := db.NewBatch()
	seed := 0
	newInvoice := func(storeID string, created time.Time) *kassa.Invoice {
		seed++
		addr, _ := testAddressN(t, seed)
		idx := uint32(seed)
		return &kassa.Invoice{ID: fmt.Sprintf("inv_%d", seed), StoreID: storeID, OnchainAddress: addr, DerivationIndex: &idx,
			ConfirmationsRequired: 2, CreatedAt: created, Status: kassa.InvoiceNew}
	}
	for i := range stores {
		st := &kassa.Store{ID: fmt.Sprintf("store_%04d", i), Name: "Shop"}
		b.PutStore(st, 1)
		for range 2 {
			b.PutInvoice(newInvoice(st.ID, now.Add(-30*time.Second)), nil, 1)
		}
	}
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	r := &countingReader{DB: db}
	var logBuf bytes.Buffer
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: newScriptedNode(), Cluster: true,
		State: db, Reader: r, Logger: slog.New(slog.NewTextHandler(&logBuf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	var want []*kassa.Invoice
	b = db.NewBatch()
	for i := range fresh {
		inv := newInvoice(fmt.Sprintf("store_%04d", i*stores/fresh), time.Now().UTC())
		b.PutInvoice(inv, nil, 1)
		want = append(want, inv)
	}
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	r.queries.Store(0)
	r.rows.Store(0)
	start := time.Now()
	if err := c.refreshShared(ctx); err != nil {
		t.Fatal(err)
	}
	took = time.Since(start)
	for _, inv := range want {
		_, script := testAddressN(t, idxOf(inv))
		if w := c.matcher.watched(script); w == nil || w.storeID != inv.StoreID || w.confirmations != 2 || w.index != int64(idxOf(inv)) {
			missed = append(missed, inv.ID)
		}
	}
	return r.queries.Load(), r.rows.Load(), took, missed, logBuf.String()
}

func idxOf(inv *kassa.Invoice) int { return int(*inv.DerivationIndex) }

// TestClusterPassCostDoesNotGrowWithStores: a cluster watcher's pass
// reads the addresses committed since its last one, whatever the number
// of stores: with 200 stores as with 20, a few queries and about as many
// rows as there are fresh invoices, and each fresh address is watched
// with its store, index and confirmations. The load at start logs its
// progress by thousands of stores. The 1,000-store pass is logged as
// the measure of docs/scale.md.
func TestClusterPassCostDoesNotGrowWithStores(t *testing.T) {
	const fresh = 5
	type cost struct{ queries, rows int64 }
	got := map[int]cost{}
	for _, stores := range []int{20, 200, 1000} {
		q, rows, took, missed, logs := sharedPass(t, stores, fresh)
		if progress := strings.Contains(logs, "loading watched addresses"); progress != (stores >= loadProgress) {
			t.Errorf("%d stores: progress of the load logged: %v; want it from %d stores", stores, progress, loadProgress)
		}
		t.Logf("cluster watcher pass at %d stores, %d fresh invoices: %d queries, %d rows, %v", stores, fresh, q, rows, took)
		if len(missed) > 0 {
			t.Errorf("%d stores: fresh invoices %v not watched (or watched without their store, index or confirmations)", stores, missed)
		}
		got[stores] = cost{q, rows}
	}
	for _, stores := range []int{200, 1000} {
		if c := got[stores]; c.queries > 2 || c.rows >= int64(stores) {
			t.Errorf("pass at %d stores: %d queries, %d rows; want at most 2 queries and fewer rows than stores (%d fresh invoices)",
				stores, c.queries, c.rows, fresh)
		}
	}
}

// testAddressN is a regtest P2WPKH address and its script, distinct for
// each n.
func testAddressN(t *testing.T, n int) (string, []byte) {
	t.Helper()
	program := make([]byte, 20)
	binary.BigEndian.PutUint64(program[12:], uint64(n))
	program[0] = 0xab
	addr, err := btcutil.NewAddressWitnessPubKeyHash(program, testParams)
	if err != nil {
		t.Fatal(err)
	}
	script, err := scriptOf(addr.EncodeAddress(), testParams)
	if err != nil {
		t.Fatal(err)
	}
	return addr.EncodeAddress(), script
}

// watched returns what m watches script for, or nil.
func (m *Matcher) watched(script []byte) *watch {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.scripts[string(script)]
}

// TestClusterWatchesInvoicesOfAnOlderSchema: the invoices written before
// the feed's columns existed (migration 12 leaves them empty) are
// watched from the load at start, and one that a node not yet upgraded
// inserts afterwards (without them) comes through the feed with the
// index and confirmations of its document.
func TestClusterWatchesInvoicesOfAnOlderSchema(t *testing.T) {
	ctx := t.Context()
	dsn := pg.Schema(t)
	db, err := postgres.Open(ctx, dsn, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	invoice := func(n int) *kassa.Invoice {
		addr, _ := testAddressN(t, n)
		idx := uint32(n)
		return &kassa.Invoice{ID: fmt.Sprintf("inv_%d", n), StoreID: "store_1", OnchainAddress: addr, DerivationIndex: &idx,
			ConfirmationsRequired: 4, CreatedAt: time.Now().UTC().Add(-time.Minute), Status: kassa.InvoiceNew}
	}
	// As an older binary writes it: no feed columns.
	insertOld := func(inv *kassa.Invoice) {
		t.Helper()
		doc, err := json.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ($1, $2, $3, 1, $4, $5)`,
			inv.ID, inv.StoreID, inv.CreatedAt.UnixMilli(), doc, inv.OnchainAddress); err != nil {
			t.Fatal(err)
		}
	}
	b := db.NewBatch()
	b.PutStore(&kassa.Store{ID: "store_1", Name: "Shop"}, 1)
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	insertOld(invoice(1))
	// What migration 12 leaves on the rows before it.
	if _, err := pool.Exec(ctx, `UPDATE invoices SET watch_tx = NULL`); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: newScriptedNode(), Cluster: true,
		State: db, Reader: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	insertOld(invoice(2))
	if err := c.refreshShared(ctx); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, 2} {
		_, script := testAddressN(t, n)
		if w := c.matcher.watched(script); w == nil || w.storeID != "store_1" || w.index != int64(n) || w.confirmations != 4 {
			t.Errorf("invoice %d watched as %+v, want store_1 at index %d, 4 confirmations", n, w, n)
		}
	}
}

func (r *countingReader) OpenInvoices(ctx context.Context, fn func(id, storeID string, deadline time.Time) error) error {
	r.queries.Add(1)
	return r.DB.OpenInvoices(ctx, func(id, storeID string, deadline time.Time) error {
		r.rows.Add(1)
		return fn(id, storeID, deadline)
	})
}

func (r *countingReader) AddressCursor(ctx context.Context) (int64, error) {
	r.queries.Add(1)
	return r.DB.AddressCursor(ctx)
}

// sharedLoad is the load at start of a cluster watcher (a process start
// or a lease taken over) over a store of n stores, each with two
// invoices created in the last minute, every tenth with an invoice
// created three days ago that is still open (a long expiry) and one
// settled then: the queries and rows the load read, how long it took,
// and the invoices whose address it does not watch until at least their
// window's end (the recent ones) or their monitoring's (the open one),
// to the millisecond of the stored times.
func sharedLoad(t *testing.T, stores int) (queries, rows int64, took time.Duration, missed []string) {
	t.Helper()
	ctx := t.Context()
	db, _ := openNodes(t, kassa.SystemClock{})
	now := time.Now().UTC()
	window := kassa.DefaultInvoiceExpiry + kassa.DefaultMonitoring + time.Hour
	b := db.NewBatch()
	seed := 0
	newInvoice := func(storeID string, created time.Time) *kassa.Invoice {
		seed++
		addr, _ := testAddressN(t, seed)
		idx := uint32(seed)
		return &kassa.Invoice{ID: fmt.Sprintf("inv_%d", seed), StoreID: storeID, OnchainAddress: addr, DerivationIndex: &idx,
			ConfirmationsRequired: 2, CreatedAt: created, Status: kassa.InvoiceNew,
			ExpiresAt: created.Add(kassa.DefaultInvoiceExpiry), MonitorUntil: created.Add(kassa.DefaultInvoiceExpiry + kassa.DefaultMonitoring)}
	}
	want := map[*kassa.Invoice]time.Time{}
	var settled []*kassa.Invoice
	for i := range stores {
		st := &kassa.Store{ID: fmt.Sprintf("store_%04d", i), Name: "Shop"}
		b.PutStore(st, 1)
		for range 2 {
			inv := newInvoice(st.ID, now.Add(-30*time.Second))
			b.PutInvoice(inv, nil, 1)
			want[inv] = inv.CreatedAt.Add(window)
		}
		if i%10 == 0 {
			old := newInvoice(st.ID, now.Add(-72*time.Hour))
			old.ExpiresAt = now.Add(time.Hour)
			old.MonitorUntil = old.ExpiresAt.Add(kassa.DefaultMonitoring)
			b.PutInvoice(old, nil, 1)
			want[old] = old.MonitorUntil
			done := newInvoice(st.ID, now.Add(-72*time.Hour))
			done.Status = kassa.InvoiceSettled
			b.PutInvoice(done, nil, 1)
			settled = append(settled, done)
		}
	}
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	r := &countingReader{DB: db}
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: newScriptedNode(), Cluster: true,
		State: db, Reader: r, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.prepare(ctx, nil); err != nil {
		t.Fatal(err)
	}
	took = time.Since(start)
	for inv, until := range want {
		_, script := testAddressN(t, idxOf(inv))
		if w := c.matcher.watched(script); w == nil || w.storeID != inv.StoreID || w.confirmations != 2 ||
			w.index != int64(idxOf(inv)) || w.until.Before(until.Truncate(time.Millisecond)) {
			missed = append(missed, inv.ID)
		}
	}
	for _, inv := range settled {
		if _, script := testAddressN(t, idxOf(inv)); c.matcher.watched(script) != nil {
			t.Errorf("%d stores: invoice %s, settled three days ago, watched", stores, inv.ID)
		}
	}
	return r.queries.Load(), r.rows.Load(), took, missed
}

// TestClusterLoadCostDoesNotGrowWithStores: the load at start of a
// cluster's watcher (a lease taken over) reads the addresses still
// watched in a few queries whatever the number of stores, and watches
// each recent invoice's address and each open invoice's, however old,
// with its store, index and confirmations. The 1,000-store load is
// logged as the measure of docs/scale.md.
func TestClusterLoadCostDoesNotGrowWithStores(t *testing.T) {
	got := map[int]int64{}
	for _, stores := range []int{20, 200, 1000} {
		q, rows, took, missed := sharedLoad(t, stores)
		t.Logf("cluster watcher load at %d stores (%d invoices): %d queries, %d rows, %v", stores, stores*2+stores/10*2, q, rows, took)
		if len(missed) > 0 {
			t.Errorf("%d stores: invoices %v not watched (or without their store, index, confirmations or window)", stores, missed)
		}
		got[stores] = q
	}
	if got[200] > got[20] || got[1000] > got[20]+2 {
		t.Errorf("load: %d queries at 20 stores, %d at 200, %d at 1,000; want as many at 200 as at 20, and at most 2 more (pages) at 1,000",
			got[20], got[200], got[1000])
	}
}

func (r *countingReader) WatchedAddresses(ctx context.Context, since time.Time, fn func(kassa.WatchedAddress) error) error {
	r.queries.Add(1)
	return r.DB.WatchedAddresses(ctx, since, func(a kassa.WatchedAddress) error { r.rows.Add(1); return fn(a) })
}

// TestTakeoverFindsPaymentsToEarlierInvoices: a node that takes the
// watcher over (prepare, as Watch does under a lease) finds a payment,
// after the takeover, to the address of an invoice another node created
// before it: a fresh one, a settled one of the last hour, and one
// created three days ago whose long expiry keeps it open; not to an
// invoice settled three days ago.
func TestTakeoverFindsPaymentsToEarlierInvoices(t *testing.T) {
	ctx := t.Context()
	db, _ := openNodes(t, kassa.SystemClock{})
	now := time.Now().UTC()
	node := newScriptedNode()
	node.mine(1)
	b := db.NewBatch()
	b.PutStore(&kassa.Store{ID: "store_1", Name: "Shop"}, 1)
	invoice := func(n int, created time.Time, status kassa.InvoiceStatus) []byte {
		addr, script := testAddressN(t, n)
		idx := uint32(n)
		inv := &kassa.Invoice{ID: fmt.Sprintf("inv_%d", n), StoreID: "store_1", OnchainAddress: addr, DerivationIndex: &idx,
			ConfirmationsRequired: 1, CreatedAt: created, Status: status,
			ExpiresAt: created.Add(kassa.DefaultInvoiceExpiry), MonitorUntil: created.Add(kassa.DefaultInvoiceExpiry + kassa.DefaultMonitoring)}
		if n == 3 {
			inv.ExpiresAt = now.Add(time.Hour)
		}
		b.PutInvoice(inv, nil, 1)
		return script
	}
	scripts := [][]byte{
		invoice(1, now.Add(-time.Minute), kassa.InvoiceNew),
		invoice(2, now.Add(-time.Hour), kassa.InvoiceSettled),
		invoice(3, now.Add(-72*time.Hour), kassa.InvoiceNew),
		invoice(4, now.Add(-72*time.Hour), kassa.InvoiceSettled),
	}
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: node, Cluster: true,
		State: db, Reader: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w, err := c.prepare(ctx, &memKV{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	var txs []*wire.MsgTx
	for i, script := range scripts {
		tx := payment(byte(i+1), script, 5000)
		txs = append(txs, tx)
		if i < 3 {
			want = append(want, label(tx.TxHash().String())+" conf 1")
		}
	}
	node.mine(2, txs...)
	r := &recorder{}
	mustPass(t, w, r)
	got := r.take()
	slices.Sort(got)
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("payments found after the takeover %v, want %v (invoices 1 to 3)", got, want)
	}
}
