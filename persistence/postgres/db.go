package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// DB is Kassa's PostgreSQL store. It implements kassa.Journal,
// kassa.Reader and kassa.KeyValue.
type DB struct {
	pool *pgxpool.Pool
	// unsynced is a small pool whose sessions commit without waiting
	// for their WAL flush (synchronous_commit off), for execUnsynced.
	unsynced *pgxpool.Pool
	clock    kassa.Clock
	// group writes the batches of Commit and of the fenced commits
	// (Members, Leases, CommitClaimed) in shared transactions.
	group *committer
	// cache keeps the stores owned by this process's actors (Own).
	cache ownedCache
	// statePuts writes the simulators' state (State.Put) in groups.
	statePuts statePuts
}

var (
	_ kassa.Journal    = (*DB)(nil)
	_ kassa.Reader     = (*DB)(nil)
	_ kassa.KeyValue   = (*DB)(nil)
	_ kassa.ValueCache = (*DB)(nil)
)

// Options configure Open.
type Options struct {
	// Clock tells when the small values of PutValue expire; nil means
	// the system clock.
	Clock kassa.Clock
	// Logger tells the progress of long migrations; nil logs nothing.
	Logger *slog.Logger
}

// Open connects to the database at dsn (a postgres:// URL or key=value
// string) and brings its schema up to this binary's version.
func Open(ctx context.Context, dsn string, o Options) (*DB, error) {
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: bad address: %w", down(err))
	}
	if !strings.Contains(dsn, "pool_max_conns") {
		// Readers stream rows to callbacks that may read again; pgx's
		// default of max(4, CPUs) connections is too few for that.
		cfg.MaxConns = defaultMaxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", down(err))
	}
	if err := migrate(ctx, pool, o.Logger); err != nil {
		pool.Close()
		return nil, err
	}
	ucfg := cfg.Copy()
	ucfg.MaxConns = min(cfg.MaxConns, unsyncedConns)
	ucfg.MinConns = 0
	ucfg.ConnConfig.RuntimeParams["synchronous_commit"] = "off"
	unsynced, err := pgxpool.NewWithConfig(ctx, ucfg)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: %w", down(err))
	}
	d := &DB{pool: pool, unsynced: unsynced, clock: o.Clock, group: &committer{pool: pool, maxRunning: maxRunning}}
	if d.clock == nil {
		d.clock = kassa.SystemClock{}
	}
	return d, nil
}

// defaultMaxConns is the pool size unless the address sets
// pool_max_conns.
const defaultMaxConns = 32

// unsyncedConns bounds the connections of the unsynced pool.
const unsyncedConns = 8

// Close closes the connections once the queries in flight are done.
func (d *DB) Close() error {
	d.pool.Close()
	d.unsynced.Close()
	return nil
}

// ErrSeqTaken is the error of a commit whose event sequence number is
// already in its stream: another activation of the same actor wrote
// first. It has the code Conflict; the actor reloads from the journal.
var ErrSeqTaken = kassa.Errorf(kassa.Conflict, "event sequence number already taken: the actor's state is stale")

// seqTaken wraps ErrSeqTaken with the error PostgreSQL gave.
type seqTaken struct{ err error }

func (e *seqTaken) Error() string   { return ErrSeqTaken.Error() + ": " + e.err.Error() }
func (e *seqTaken) Unwrap() []error { return []error{ErrSeqTaken, e.err} }

// ms is a time as milliseconds since 1970, as the Pebble store orders
// and pages by; times before 1970 count as 0.
func ms(t time.Time) int64 { return max(t.UnixMilli(), 0) }

// GetValue returns the value at key unless it expired.
func (d *DB) GetValue(ctx context.Context, key string) ([]byte, bool, error) {
	var v []byte
	err := d.pool.QueryRow(ctx, `SELECT value FROM kv WHERE key = $1 AND expires_ms > $2`, key, d.clock.Now().UnixMilli()).Scan(&v)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("postgres: get value: %w", down(err))
	}
	if v == nil {
		v = []byte{}
	}
	return v, true, nil
}

const upsertValue = `INSERT INTO kv (key, value, expires_ms) VALUES ($1, $2, $3)
	ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms`

// PutValue stores value at key until expires.
func (d *DB) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	if value == nil {
		value = []byte{}
	}
	if _, err := d.pool.Exec(ctx, upsertValue, key, value, expires.UnixMilli()); err != nil {
		return fmt.Errorf("postgres: put value: %w", down(err))
	}
	return nil
}

// SwapValue sets key to value until expires only while key holds old
// (nil: no value, or an expired one), and says whether it did: the
// check is the write's own condition, so of two nodes that swap over
// one value one wins.
func (d *DB) SwapValue(ctx context.Context, key string, old, value []byte, expires time.Time) (bool, error) {
	if value == nil {
		value = []byte{}
	}
	now := d.clock.Now().UnixMilli()
	var (
		tag pgconn.CommandTag
		err error
	)
	if old == nil {
		tag, err = d.pool.Exec(ctx, `INSERT INTO kv (key, value, expires_ms) VALUES ($1, $2, $3)
			ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, expires_ms = EXCLUDED.expires_ms
			WHERE kv.expires_ms <= $4`, key, value, expires.UnixMilli(), now)
	} else {
		tag, err = d.pool.Exec(ctx, `UPDATE kv SET value = $2, expires_ms = $3
			WHERE key = $1 AND value = $4 AND expires_ms > $5`, key, value, expires.UnixMilli(), old, now)
	}
	if err != nil {
		return false, fmt.Errorf("postgres: swap value: %w", down(err))
	}
	return tag.RowsAffected() == 1, nil
}

// CacheValue stores value at key until expires without waiting for the
// WAL's flush (kassa.ValueCache), on the unsynced pool as the
// simulators' state is: a crash of PostgreSQL within a moment of the
// write may lose it, a crash of Kassa does not.
func (d *DB) CacheValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	if value == nil {
		value = []byte{}
	}
	if err := d.execUnsynced(ctx, upsertValue, key, value, expires.UnixMilli()); err != nil {
		return fmt.Errorf("postgres: cache value: %w", down(err))
	}
	return nil
}

// SweepExpired deletes the small values whose expiry passed before now
// and the request records older than kassa.RequestWindow, and returns
// how many it deleted.
func (d *DB) SweepExpired(ctx context.Context, now time.Time) (int, error) {
	requests, err := d.sweepRequests(ctx, now.Add(-kassa.RequestWindow))
	if err != nil {
		return 0, err
	}
	tag, err := d.pool.Exec(ctx, `DELETE FROM kv WHERE expires_ms <= $1`, now.UnixMilli())
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep values: %w", down(err))
	}
	return requests + int(tag.RowsAffected()), nil
}

// Batch is a kassa.Batch on PostgreSQL: statements queued to run in one
// transaction by Commit.
type Batch struct {
	db  *DB
	b   pgx.Batch
	err error
	// stores and deltas are the snapshots and balance changes the batch
	// writes, for the owned cache once committed.
	stores []cachedStore
	deltas map[string]int64
	// newInvoices are the rows of the new invoices the batch inserts, by
	// their queued INSERT: the committer may write one again with
	// takeLookups first.
	newInvoices map[*pgx.QueuedQuery]newInvoiceRow
}

// NewBatch starts a batch.
func (d *DB) NewBatch() kassa.Batch { return &Batch{db: d} }

func (b *Batch) queue(sql string, args ...any) { b.b.Queue(sql, args...) }

// newInvoiceRow is a new invoice's row: insertNewInvoice's arguments.
type newInvoiceRow struct {
	ID, StoreID    string
	CreatedMS, Seq int64
	Doc            []byte
	Address        string // "" for none
	PaymentHash    string // "" for none
	// OrderKey and EmailKey are the invoice's search terms
	// (Invoice.SearchTerms), "" for none.
	OrderKey, EmailKey string
	// AddressIndex is the address's derivation index, -1 for none;
	// Confirmations the invoice's ConfirmationsRequired (watched.go).
	AddressIndex, Confirmations int64
}

// queueNewInvoice queues the INSERT of a new invoice's row.
func (b *Batch) queueNewInvoice(r newInvoiceRow) {
	q := b.b.Queue(insertNewInvoice, r.ID, r.StoreID, r.CreatedMS, r.Seq, r.Doc, r.Address, r.PaymentHash, r.OrderKey, r.EmailKey,
		r.AddressIndex, r.Confirmations)
	if b.newInvoices == nil {
		b.newInvoices = make(map[*pgx.QueuedQuery]newInvoiceRow)
	}
	b.newInvoices[q] = r
}

// takeLookups is the statement that takes the row's address and payment
// hash from the other invoices that have them.
func (r newInvoiceRow) takeLookups() *pgx.QueuedQuery {
	return &pgx.QueuedQuery{SQL: takeLookups, Arguments: []any{r.ID, r.Address, r.PaymentHash}}
}

// json encodes the document v in its format (package format).
func (b *Batch) json(v any) []byte {
	data, err := format.Marshal(v)
	if err != nil && b.err == nil {
		b.err = err
	}
	return data
}

// next takes the next number of a sequence. Batch methods have no
// context; the numbers must be known before Commit (callers read tx.ID
// and d.OutboxSeq), so they are taken as the batch is built.
func (b *Batch) next(seq string) int64 {
	var n int64
	if b.err != nil {
		return 0
	}
	if err := b.db.pool.QueryRow(context.Background(), `SELECT nextval('`+seq+`')`).Scan(&n); err != nil {
		b.err = fmt.Errorf("postgres: next %s: %w", seq, down(err))
	}
	return n
}

// AppendEvent appends an event to a stream. The sequence number must be
// free: Commit fails with ErrSeqTaken otherwise.
func (b *Batch) AppendEvent(s kassa.Stream, seq uint64, event []byte) {
	if event == nil {
		event = []byte{}
	}
	b.queue(insertEvent, s.Kind, s.ID, int64(seq), event)
}

// insertEvent appends an event (merged in a group: merge.go).
const insertEvent = `INSERT INTO events (kind, stream, seq, data) VALUES ($1, $2, $3, $4)`

// apiKeyHash is how an API key is indexed: its SHA-256, never the key.
func apiKeyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// PutStore writes a store's snapshot and its API key index.
func (b *Batch) PutStore(st *kassa.Store, seq uint64) {
	b.queue(`INSERT INTO stores (id, seq, doc) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, doc = EXCLUDED.doc`, st.ID, int64(seq), b.json(st))
	for _, k := range st.APIKeys {
		b.queue(`INSERT INTO api_keys (key_hash, store_id) VALUES ($1, $2)
			ON CONFLICT (key_hash) DO UPDATE SET store_id = EXCLUDED.store_id`, apiKeyHash(k.Key), st.ID)
	}
	copied := *st
	b.stores = append(b.stores, cachedStore{store: &copied, seq: seq})
}

// PutInvoice writes an invoice's snapshot and updates its indexes. A
// new invoice (prev nil) is inserted with plain INSERTs, which cost the
// server one index search per row less than an upsert: its snapshot and
// open row cannot exist yet (a second first write of one invoice also
// takes its event's sequence number, and either conflict is
// ErrSeqTaken). Its address and payment hash are columns of its row,
// unique where set; in the rare case that another invoice has one of
// them, the committer writes the batch again with the value taken from
// the older invoice first (takeLookups), so that an address or hash
// written again names the newest invoice, as on Pebble. A later write
// of the invoice leaves both columns as they are (Pebble, too, indexes
// them only when the invoice is new).
func (b *Batch) PutInvoice(inv, prev *kassa.Invoice, seq uint64) {
	terms := inv.SearchTerms()
	if prev == nil {
		b.queueNewInvoice(newInvoiceRow{ID: inv.ID, StoreID: inv.StoreID, CreatedMS: ms(inv.CreatedAt), Seq: int64(seq),
			Doc: b.json(inv), Address: inv.OnchainAddress, PaymentHash: inv.PaymentHash, OrderKey: terms.OrderID, EmailKey: terms.Email,
			AddressIndex: addressIndex(inv), Confirmations: int64(inv.ConfirmationsRequired)})
		if next, ok := inv.Deadline(); ok {
			b.queue(insertOpenInvoice, inv.ID, inv.StoreID, ms(next))
		}
		return
	}
	b.queue(`INSERT INTO invoices (id, store_id, created_ms, seq, doc, order_key, email_key)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), nullif($7, ''))
		ON CONFLICT (id) DO UPDATE SET seq = EXCLUDED.seq, doc = EXCLUDED.doc,
			order_key = EXCLUDED.order_key, email_key = EXCLUDED.email_key`,
		inv.ID, inv.StoreID, ms(inv.CreatedAt), int64(seq), b.json(inv), terms.OrderID, terms.Email)
	if next, ok := inv.Deadline(); ok {
		b.queue(`INSERT INTO open_invoices (invoice_id, store_id, deadline_ms) VALUES ($1, $2, $3)
			ON CONFLICT (invoice_id) DO UPDATE SET store_id = EXCLUDED.store_id, deadline_ms = EXCLUDED.deadline_ms,
				claimed_by = NULL, claim_expires_ms = 0`,
			inv.ID, inv.StoreID, ms(next))
	} else {
		b.queue(`DELETE FROM open_invoices WHERE invoice_id = $1`, inv.ID)
	}
}

// The rows of a new invoice (merged in a group: merge.go): its
// snapshot with its address and payment hash ("" stored as NULL) and
// what the chain watcher's feed reads of it (watched.go), and its open
// row.
const (
	insertNewInvoice = `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address, payment_hash, order_key, email_key,
			address_index, confirmations)
		VALUES ($1, $2, $3, $4, $5, nullif($6, ''), nullif($7, ''), nullif($8, ''), nullif($9, ''), nullif($10, -1), $11)`
	insertOpenInvoice = `INSERT INTO open_invoices (invoice_id, store_id, deadline_ms) VALUES ($1, $2, $3)`
)

// takeLookups takes a new invoice's address and payment hash ($2, $3;
// "" for none) from the other invoices that have them, for
// insertNewInvoice to run next in the batch that writes it again.
const takeLookups = `UPDATE invoices SET
		address = CASE WHEN address = $2 THEN NULL ELSE address END,
		payment_hash = CASE WHEN payment_hash = $3 THEN NULL ELSE payment_hash END
	WHERE id <> $1 AND (address = $2 OR payment_hash = $3)`

// lookupIndexes are the unique indexes whose violation by a new
// invoice's INSERT makes the committer write its batch again with
// takeLookups.
var lookupIndexes = map[string]bool{"invoices_by_address": true, "invoices_by_payment_hash": true}

// PutTransaction assigns tx an ID, writes it and applies its balance
// delta to the store's balance.
func (b *Batch) PutTransaction(tx *kassa.Transaction) {
	tx.ID = b.next("transaction_ids")
	var invoice *string
	if tx.InvoiceID != "" {
		invoice = &tx.InvoiceID
	}
	b.queue(`INSERT INTO transactions (id, store_id, invoice_id, created_ms, doc) VALUES ($1, $2, $3, $4, $5)`,
		tx.ID, tx.StoreID, invoice, ms(tx.CreatedAt), b.json(tx))
	if delta := tx.BalanceDelta(); delta != 0 {
		b.queue(`INSERT INTO balances (store_id, balance) VALUES ($1, $2)
			ON CONFLICT (store_id) DO UPDATE SET balance = balances.balance + EXCLUDED.balance`, tx.StoreID, int64(delta))
		if b.deltas == nil {
			b.deltas = map[string]int64{}
		}
		b.deltas[tx.StoreID] += int64(delta)
	}
}

// PutPaymentRequest writes a pay link.
func (b *Batch) PutPaymentRequest(pr *kassa.PaymentRequest) {
	b.queue(`INSERT INTO payment_requests (id, store_id, created_ms, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`, pr.ID, pr.StoreID, ms(pr.CreatedAt), b.json(pr))
}

// MarkPaymentRequestPaid records the invoice that paid a pay link, in a
// row of its own so that the invoice actor never rewrites the pay link,
// which the store actor owns.
func (b *Batch) MarkPaymentRequestPaid(paymentRequestID, invoiceID string) {
	b.queue(`INSERT INTO payment_requests_paid (id, invoice_id) VALUES ($1, $2)
		ON CONFLICT (id) DO UPDATE SET invoice_id = EXCLUDED.invoice_id`, paymentRequestID, invoiceID)
}

// PutWebhook writes a webhook.
func (b *Batch) PutWebhook(w *kassa.Webhook) {
	b.queue(`INSERT INTO webhooks (id, store_id, doc) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET store_id = EXCLUDED.store_id, doc = EXCLUDED.doc`, w.ID, w.StoreID, b.json(w))
}

// DeleteWebhook removes a webhook; its deliveries stay readable.
func (b *Batch) DeleteWebhook(w *kassa.Webhook) {
	b.queue(`DELETE FROM webhooks WHERE id = $1`, w.ID)
}

// PutDelivery writes a delivery and keeps it in the outbox while
// pending, with its not-before time rounded up to the millisecond (a
// claim takes no delivery before it is due). A delivery entering the outbox takes the next outbox number
// (d.OutboxSeq), so an endpoint's pending deliveries are read back in
// the order their batches were built.
func (b *Batch) PutDelivery(dl *kassa.Delivery, pending bool) {
	if pending && dl.OutboxSeq == 0 {
		dl.OutboxSeq = uint64(b.next("outbox_seqs"))
	}
	b.queue(`INSERT INTO deliveries (id, webhook_id, created_ms, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET doc = EXCLUDED.doc`, dl.ID, dl.WebhookID, ms(dl.CreatedAt), b.json(dl))
	switch {
	case pending:
		b.queue(`INSERT INTO outbox (webhook_id, seq, delivery_id, not_before_ms) VALUES ($1, $2, $3, $4)
			ON CONFLICT (webhook_id, seq) DO UPDATE SET delivery_id = EXCLUDED.delivery_id, not_before_ms = EXCLUDED.not_before_ms`,
			dl.WebhookID, int64(dl.OutboxSeq), dl.ID, ms(dl.NotBefore.Add(time.Millisecond-1)))
	default:
		b.queue(`DELETE FROM outbox WHERE webhook_id = $1 AND delivery_id = $2`, dl.WebhookID, dl.ID)
	}
}

// Commit writes the batch in one transaction, shared with the batches
// of other actors committed at the same time (group commit); it
// returns once that transaction committed, so the batch is durable
// (synchronous_commit is the server's setting). A batch whose event
// sequence number is taken fails alone with ErrSeqTaken.
func (d *DB) Commit(ctx context.Context, kb kassa.Batch) error {
	b, ok := kb.(*Batch)
	if !ok {
		return fmt.Errorf("postgres: foreign batch %T", kb)
	}
	return d.commit(ctx, b, nil, "postgres: commit batch")
}

// Events calls fn for each event of s after seq, in order.
func (d *DB) Events(ctx context.Context, s kassa.Stream, after uint64, fn func(uint64, []byte) error) error {
	if after >= math.MaxInt64 {
		return nil
	}
	rows, err := d.pool.Query(ctx, `SELECT seq, data FROM events WHERE kind = $1 AND stream = $2 AND seq > $3 ORDER BY seq`, s.Kind, s.ID, int64(after))
	if err != nil {
		return fmt.Errorf("postgres: events: %w", down(err))
	}
	defer rows.Close()
	for rows.Next() {
		var seq int64
		var data []byte
		if err := rows.Scan(&seq, &data); err != nil {
			return fmt.Errorf("postgres: events: %w", down(err))
		}
		if err := fn(uint64(seq), data); err != nil {
			return err
		}
	}
	return rows.Err()
}

// StreamSeq returns the sequence number of the last event of s, or 0.
func (d *DB) StreamSeq(ctx context.Context, s kassa.Stream) (uint64, error) {
	var seq int64
	err := d.pool.QueryRow(ctx, `SELECT coalesce(max(seq), 0) FROM events WHERE kind = $1 AND stream = $2`, s.Kind, s.ID).Scan(&seq)
	if err != nil {
		return 0, fmt.Errorf("postgres: stream seq: %w", down(err))
	}
	return uint64(seq), nil
}

// Redact returns dsn with every password it carries (in the user part,
// or as a password or sslpassword parameter) replaced by "xxxxx", for
// logs and error messages.
func Redact(dsn string) string {
	u, err := url.Parse(dsn)
	if err != nil || u.Scheme == "" {
		// key=value form, or no URL at all: say nothing of it.
		return "(not shown)"
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	q := u.Query()
	hidden := false
	for k := range q {
		// password, sslpassword and any spelling of them.
		if strings.Contains(strings.ToLower(k), "password") {
			q.Set(k, "xxxxx")
			hidden = true
		}
	}
	if hidden {
		u.RawQuery = q.Encode()
	}
	return u.String()
}
