package postgres

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	errStoreNotFound          = kassa.Errorf(kassa.NotFound, "store not found")
	errInvoiceNotFound        = kassa.Errorf(kassa.NotFound, "invoice not found")
	errTransactionNotFound    = kassa.Errorf(kassa.NotFound, "transaction not found")
	errPaymentRequestNotFound = kassa.Errorf(kassa.NotFound, "payment request not found")
	errWebhookNotFound        = kassa.Errorf(kassa.NotFound, "webhook not found")
	errDeliveryNotFound       = kassa.Errorf(kassa.NotFound, "delivery not found")
	errBadCursor              = kassa.Errorf(kassa.Invalid, "cursor is not one this server gave out")
)

// getDoc decodes the JSON of the one row query returns, with its
// sequence number when withSeq; notFound when there is no row.
func getDoc[T any](ctx context.Context, d *DB, notFound error, query string, args ...any) (*T, error) {
	var doc []byte
	err := d.pool.QueryRow(ctx, query, args...).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, notFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read: %w", down(err))
	}
	var out T
	if err := format.Unmarshal(doc, &out); err != nil {
		return nil, fmt.Errorf("postgres: decode: %w", down(err))
	}
	return &out, nil
}

// eachDoc decodes the JSON of every row query returns, in order.
func eachDoc[T any](ctx context.Context, d *DB, fn func(*T) error, query string, args ...any) error {
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("postgres: read: %w", down(err))
	}
	defer rows.Close()
	for rows.Next() {
		var doc []byte
		if err := rows.Scan(&doc); err != nil {
			return fmt.Errorf("postgres: read: %w", down(err))
		}
		var v T
		if err := format.Unmarshal(doc, &v); err != nil {
			return fmt.Errorf("postgres: decode: %w", down(err))
		}
		if err := fn(&v); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Store returns a store.
func (d *DB) Store(ctx context.Context, id string) (*kassa.Store, error) {
	st, _, err := d.StoreSnapshot(ctx, id)
	return st, err
}

// StoreSnapshot returns a store and the sequence number of its snapshot.
// A store owned here is served from the owned cache: the store is then
// the caller's copy, its slices shared and read-only.
func (d *DB) StoreSnapshot(ctx context.Context, id string) (*kassa.Store, uint64, error) {
	if st, seq, ok := d.cache.store(id); ok {
		return st, seq, nil
	}
	owned, gen := d.cache.ownedGen(id)
	var seq int64
	var doc []byte
	err := d.pool.QueryRow(ctx, `SELECT seq, doc FROM stores WHERE id = $1`, id).Scan(&seq, &doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errStoreNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: read store: %w", down(err))
	}
	var st kassa.Store
	if err := format.Unmarshal(doc, &st); err != nil {
		return nil, 0, fmt.Errorf("postgres: decode store %s: %w", id, err)
	}
	if owned {
		d.cache.putRead(&st, uint64(seq), gen, "")
	}
	return &st, uint64(seq), nil
}

// StoreByAPIKey returns the store that owns key. A key seen before of a
// store owned here is answered from the owned cache.
func (d *DB) StoreByAPIKey(ctx context.Context, key string) (*kassa.Store, error) {
	hash := apiKeyHash(key)
	if id, ok := d.cache.byKey(hash); ok {
		if st, _, ok := d.cache.store(id); ok {
			return st, nil
		}
	}
	var id string
	var seq int64
	var doc []byte
	err := d.pool.QueryRow(ctx, `SELECT s.id, s.seq, s.doc FROM api_keys k JOIN stores s ON s.id = k.store_id WHERE k.key_hash = $1`,
		hash).Scan(&id, &seq, &doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errStoreNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read: %w", down(err))
	}
	// The generation is taken after the read: a snapshot read before an
	// Own is not cached, one read after it may be older than a commit
	// made since, which the sequence number keeps out.
	owned, gen := d.cache.ownedGen(id)
	var st kassa.Store
	if err := format.Unmarshal(doc, &st); err != nil {
		return nil, fmt.Errorf("postgres: decode: %w", down(err))
	}
	if owned {
		d.cache.putRead(&st, uint64(seq), gen, hash)
	}
	return &st, nil
}

// Stores calls fn for every store, by id.
func (d *DB) Stores(ctx context.Context, fn func(*kassa.Store) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM stores ORDER BY id`)
}

// Balance returns the store's prepaid balance, from the owned cache
// for a store owned here.
func (d *DB) Balance(ctx context.Context, storeID string) (kassa.Sats, error) {
	read := func() (int64, error) {
		var bal int64
		err := d.pool.QueryRow(ctx, `SELECT balance FROM balances WHERE store_id = $1`, storeID).Scan(&bal)
		if errors.Is(err, pgx.ErrNoRows) {
			return 0, nil
		}
		if err != nil {
			return 0, fmt.Errorf("postgres: read balance: %w", down(err))
		}
		return bal, nil
	}
	owned, gen := d.cache.ownedGen(storeID)
	if !owned {
		bal, err := read()
		return kassa.Sats(bal), err
	}
	bal, err := d.cache.balances.Load(storeID, read, func() bool { return d.cache.still(storeID, gen) })
	return kassa.Sats(bal), err
}

// Invoice returns an invoice.
func (d *DB) Invoice(ctx context.Context, id string) (*kassa.Invoice, error) {
	inv, _, err := d.InvoiceSnapshot(ctx, id)
	return inv, err
}

// InvoiceSnapshot returns an invoice and the sequence number of its
// snapshot.
func (d *DB) InvoiceSnapshot(ctx context.Context, id string) (*kassa.Invoice, uint64, error) {
	var seq int64
	var doc []byte
	err := d.pool.QueryRow(ctx, `SELECT seq, doc FROM invoices WHERE id = $1`, id).Scan(&seq, &doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, 0, errInvoiceNotFound
	}
	if err != nil {
		return nil, 0, fmt.Errorf("postgres: read invoice: %w", down(err))
	}
	var inv kassa.Invoice
	if err := format.Unmarshal(doc, &inv); err != nil {
		return nil, 0, fmt.Errorf("postgres: decode invoice %s: %w", id, err)
	}
	return &inv, uint64(seq), nil
}

func (d *DB) lookup(ctx context.Context, query, arg string) (string, error) {
	var id string
	err := d.pool.QueryRow(ctx, query, arg).Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", errInvoiceNotFound
	}
	if err != nil {
		return "", fmt.Errorf("postgres: read: %w", down(err))
	}
	return id, nil
}

// InvoiceIDByAddress returns the invoice an address was made for.
func (d *DB) InvoiceIDByAddress(ctx context.Context, address string) (string, error) {
	return d.lookup(ctx, `SELECT id FROM invoices WHERE address = $1`, address)
}

// InvoiceIDByPaymentHash returns the invoice of a Lightning payment hash.
func (d *DB) InvoiceIDByPaymentHash(ctx context.Context, hash string) (string, error) {
	return d.lookup(ctx, `SELECT id FROM invoices WHERE payment_hash = $1`, hash)
}

// A page cursor is, as in the Pebble store, base64 of the last row's
// creation time in milliseconds (8 bytes, big-endian) and its id (the
// rest; 8 bytes big-endian for transactions).

func cursor(createdMs int64, id []byte) string {
	b := binary.BigEndian.AppendUint64(nil, uint64(createdMs))
	return base64.RawURLEncoding.EncodeToString(append(b, id...))
}

func parseCursor(c string) (int64, []byte, error) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) < 8 {
		return 0, nil, errBadCursor
	}
	v := binary.BigEndian.Uint64(b[:8])
	if v > 1<<62 {
		return 0, nil, errBadCursor
	}
	return int64(v), b[8:], nil
}

// pageBounds turns q into bounds on created_ms: [lower, upper), as the
// Pebble store's scans (whole seconds, To inclusive).
func pageBounds(q kassa.ListQuery) (lower, upper int64) {
	lower, upper = 0, 1<<62
	if !q.From.IsZero() {
		lower = ms(q.From.Truncate(time.Second))
	}
	if !q.To.IsZero() {
		upper = ms(q.To.Truncate(time.Second).Add(time.Second))
	}
	return lower, upper
}

// Invoices calls fn for the store's invoices in q, newest first.
func (d *DB) Invoices(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Invoice) error) (string, error) {
	return keysetPage(ctx, d, "invoices", "store_id", storeID, q, stringKey, "invoice", fn)
}

// OpenInvoices calls fn for each invoice that waits for a timer, by
// deadline.
func (d *DB) OpenInvoices(ctx context.Context, fn func(invoiceID, storeID string, deadline time.Time) error) error {
	rows, err := d.pool.Query(ctx, `SELECT invoice_id, store_id, deadline_ms FROM open_invoices ORDER BY deadline_ms, invoice_id`)
	if err != nil {
		return fmt.Errorf("postgres: open invoices: %w", down(err))
	}
	defer rows.Close()
	for rows.Next() {
		var id, store string
		var deadline int64
		if err := rows.Scan(&id, &store, &deadline); err != nil {
			return fmt.Errorf("postgres: open invoices: %w", down(err))
		}
		if err := fn(id, store, time.UnixMilli(deadline)); err != nil {
			return err
		}
	}
	return rows.Err()
}

// Transaction returns a transaction.
func (d *DB) Transaction(ctx context.Context, id int64) (*kassa.Transaction, error) {
	return getDoc[kassa.Transaction](ctx, d, errTransactionNotFound, `SELECT doc FROM transactions WHERE id = $1`, id)
}

// TransactionsByInvoice returns the ledger lines of an invoice, oldest
// first.
func (d *DB) TransactionsByInvoice(ctx context.Context, invoiceID string) ([]kassa.Transaction, error) {
	var out []kassa.Transaction
	err := eachDoc(ctx, d, func(tx *kassa.Transaction) error { out = append(out, *tx); return nil },
		`SELECT doc FROM transactions WHERE invoice_id = $1 ORDER BY id`, invoiceID)
	return out, err
}

// Transactions calls fn for the store's transactions in q, newest first.
func (d *DB) Transactions(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Transaction) error) (string, error) {
	return keysetPage(ctx, d, "transactions", "store_id", storeID, q, int64Key, "transaction", fn)
}

// PaymentRequest returns a pay link.
func (d *DB) PaymentRequest(ctx context.Context, id string) (*kassa.PaymentRequest, error) {
	var doc []byte
	var paid *string
	err := d.pool.QueryRow(ctx, `SELECT p.doc, pp.invoice_id FROM payment_requests p
		LEFT JOIN payment_requests_paid pp ON pp.id = p.id WHERE p.id = $1`, id).Scan(&doc, &paid)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errPaymentRequestNotFound
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read payment request: %w", down(err))
	}
	var pr kassa.PaymentRequest
	if err := format.Unmarshal(doc, &pr); err != nil {
		return nil, fmt.Errorf("postgres: decode payment request %s: %w", id, err)
	}
	if pr.PaidInvoiceID == "" && paid != nil {
		pr.PaidInvoiceID = *paid
	}
	return &pr, nil
}

// PaymentRequests calls fn for the store's pay links, newest first.
func (d *DB) PaymentRequests(ctx context.Context, storeID string, fn func(*kassa.PaymentRequest) error) error {
	rows, err := d.pool.Query(ctx, `SELECT id FROM payment_requests WHERE store_id = $1 ORDER BY created_ms DESC, id DESC`, storeID)
	if err != nil {
		return fmt.Errorf("postgres: list payment requests: %w", down(err))
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return fmt.Errorf("postgres: list payment requests: %w", down(err))
	}
	for _, id := range ids {
		pr, err := d.PaymentRequest(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(pr); err != nil {
			return err
		}
	}
	return nil
}

// Webhook returns a webhook.
func (d *DB) Webhook(ctx context.Context, id string) (*kassa.Webhook, error) {
	return getDoc[kassa.Webhook](ctx, d, errWebhookNotFound, `SELECT doc FROM webhooks WHERE id = $1`, id)
}

// Webhooks calls fn for each webhook of the store, by id.
func (d *DB) Webhooks(ctx context.Context, storeID string, fn func(*kassa.Webhook) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM webhooks WHERE store_id = $1 ORDER BY id`, storeID)
}

// Delivery returns a delivery.
func (d *DB) Delivery(ctx context.Context, id string) (*kassa.Delivery, error) {
	return getDoc[kassa.Delivery](ctx, d, errDeliveryNotFound, `SELECT doc FROM deliveries WHERE id = $1`, id)
}

// Deliveries lists a webhook's deliveries, newest first.
func (d *DB) Deliveries(ctx context.Context, webhookID string, q kassa.ListQuery, fn func(*kassa.Delivery) error) (string, error) {
	return keysetPage(ctx, d, "deliveries", "webhook_id", webhookID, q, stringKey, "delivery", fn)
}

// PendingDeliveries calls fn for each delivery in the outbox, webhook by
// webhook, each webhook's in outbox order.
func (d *DB) PendingDeliveries(ctx context.Context, fn func(webhookID, deliveryID string) error) error {
	return d.outbox(ctx, `SELECT webhook_id, delivery_id FROM outbox ORDER BY webhook_id, seq`, nil, fn)
}

// WebhookOutbox calls fn for each pending delivery of a webhook, in
// outbox order.
func (d *DB) WebhookOutbox(ctx context.Context, webhookID string, fn func(deliveryID string) error) error {
	return d.outbox(ctx, `SELECT webhook_id, delivery_id FROM outbox WHERE webhook_id = $1 ORDER BY seq`,
		[]any{webhookID}, func(_, id string) error { return fn(id) })
}

func (d *DB) outbox(ctx context.Context, query string, args []any, fn func(webhookID, deliveryID string) error) error {
	rows, err := d.pool.Query(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("postgres: outbox: %w", down(err))
	}
	type entry struct{ webhook, delivery string }
	var entries []entry
	for rows.Next() {
		var e entry
		if err := rows.Scan(&e.webhook, &e.delivery); err != nil {
			rows.Close()
			return fmt.Errorf("postgres: outbox: %w", down(err))
		}
		entries = append(entries, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("postgres: outbox: %w", down(err))
	}
	// fn may read the store; the rows are read first so that a callback
	// does not hold a connection while it takes another.
	for _, e := range entries {
		if err := fn(e.webhook, e.delivery); err != nil {
			return err
		}
	}
	return nil
}

// pageKey turns a table's id to and from the id part of a list cursor.
type pageKey[K string | int64] struct {
	encode func(K) []byte
	decode func([]byte) (K, bool)
}

var (
	stringKey = pageKey[string]{
		encode: func(id string) []byte { return []byte(id) },
		decode: func(b []byte) (string, bool) { return string(b), true },
	}
	int64Key = pageKey[int64]{
		encode: func(id int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(id)) },
		decode: func(b []byte) (int64, bool) {
			if len(b) != 8 {
				return 0, false
			}
			return int64(binary.BigEndian.Uint64(b)), true
		},
	}
)

// keysetPage calls fn for the rows of table whose owner column is owner,
// within q's dates, newest first (created_ms, id), from q's cursor, and
// returns the cursor of the next page when q.Limit cut the list. table
// and ownerCol are constants of this package, never input.
func keysetPage[T any, K string | int64](ctx context.Context, d *DB, table, ownerCol, owner string, q kassa.ListQuery, key pageKey[K], what string, fn func(*T) error) (string, error) {
	lower, upper := pageBounds(q)
	cMs, cID := upper, *new(K)
	if q.Cursor != "" {
		m, raw, err := parseCursor(q.Cursor)
		if err != nil {
			return "", err
		}
		id, ok := key.decode(raw)
		if !ok {
			return "", errBadCursor
		}
		if m < upper {
			cMs, cID = m, id
		}
	}
	limit := int64(q.Limit)
	if q.Limit <= 0 {
		limit = 1 << 62
	}
	rows, err := d.pool.Query(ctx, `SELECT created_ms, id, doc FROM `+table+`
		WHERE `+ownerCol+` = $1 AND created_ms >= $2 AND (created_ms, id) < ($3, $4)
		ORDER BY created_ms DESC, id DESC LIMIT $5`, owner, lower, cMs, cID, limit+1)
	if err != nil {
		return "", fmt.Errorf("postgres: list %s: %w", table, err)
	}
	defer rows.Close()
	var n, lastMs int64
	var lastID K
	for rows.Next() {
		if n == limit {
			return cursor(lastMs, key.encode(lastID)), nil
		}
		var doc []byte
		if err := rows.Scan(&lastMs, &lastID, &doc); err != nil {
			return "", fmt.Errorf("postgres: list %s: %w", table, err)
		}
		v := new(T)
		if err := format.Unmarshal(doc, v); err != nil {
			return "", fmt.Errorf("postgres: decode %s %v: %w", what, lastID, err)
		}
		if err := fn(v); err != nil {
			return "", err
		}
		n++
	}
	return "", rows.Err()
}

// TransactionNumber is tx's place in its store's ledger, counted from 1
// for the store's oldest line, in the order the store's list shows them
// (creation time, then id): a number that says nothing of other stores.
func (d *DB) TransactionNumber(ctx context.Context, tx *kassa.Transaction) (int64, error) {
	var n int64
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM transactions WHERE store_id = $1 AND (created_ms, id) <= ($2, $3)`,
		tx.StoreID, ms(tx.CreatedAt), tx.ID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("postgres: number transaction: %w", down(err))
	}
	return n, nil
}
