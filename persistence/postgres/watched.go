package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var _ kassa.AddressFeed = (*DB)(nil)

// The feed of new addresses (kassa.AddressFeed) reads the invoices by
// watch_tx, the id of the transaction that inserted each (a column
// default, migration 12). Transaction ids are taken in one order and
// committed in another, so the cursor is not the highest id read but
// the oldest transaction still running when a read began
// (pg_snapshot_xmin): every transaction below it had ended, and every
// row committed after the read has an id at or above it. Rows of
// transactions that were running then, but committed before the read,
// are read again next time: the overlap lasts as long as the oldest
// transaction of the server.

// addressPage is how many rows NewAddresses and WatchedAddresses read
// a query.
const addressPage = 2000

// AddressCursor returns the cursor of now.
func (d *DB) AddressCursor(ctx context.Context) (int64, error) {
	var xmin int64
	if err := d.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
		return 0, fmt.Errorf("postgres: address cursor: %w", down(err))
	}
	return xmin, nil
}

// watchedColumns are what the watcher reads of an invoice row i after
// the page's key, in the order of watchedRow.scan, deadline last (an
// expression for the open row's, NULL for none): a row written by a binary older than migration
// 12, without the feed's columns, comes with its document.
func watchedColumns(deadline string) string {
	return `i.id, i.store_id, i.address, coalesce(i.address_index, -1), coalesce(i.confirmations, -1),
		i.created_ms, CASE WHEN i.confirmations IS NULL THEN i.doc END, ` + deadline
}

// watchedRow is a row of watchedColumns after its key.
type watchedRow struct {
	a                      kassa.WatchedAddress
	confirmations, created int64
	deadline               *int64
	doc                    []byte
}

// scan reads rows' current row: key, then watchedColumns.
func (w *watchedRow) scan(rows pgx.Rows, key any) error {
	*w = watchedRow{}
	if err := rows.Scan(key, &w.a.InvoiceID, &w.a.StoreID, &w.a.Address, &w.a.Index, &w.confirmations, &w.created,
		&w.doc, &w.deadline); err != nil {
		return down(err)
	}
	w.a.Confirmations, w.a.CreatedAt = int32(w.confirmations), time.UnixMilli(w.created).UTC()
	if w.deadline != nil {
		w.a.Deadline = time.UnixMilli(*w.deadline).UTC()
	}
	if w.doc != nil {
		var inv kassa.Invoice
		if err := format.Unmarshal(w.doc, &inv); err != nil {
			return fmt.Errorf("decode invoice %s: %w", w.a.InvoiceID, err)
		}
		w.a.Confirmations, w.a.Index = inv.ConfirmationsRequired, addressIndex(&inv)
	}
	return nil
}

// watchedPages calls fn for each row of query (a key, then
// watchedColumns), read by pages of at most addressPage rows until one
// is short. The scan of each row sets *key; args gives each page's
// arguments, after *key and *lastID are those of the previous page's
// last row.
func (d *DB) watchedPages(ctx context.Context, key any, lastID *string, query string, args func() []any, fn func(kassa.WatchedAddress) error) error {
	for {
		rows, err := d.pool.Query(ctx, query, args()...)
		if err != nil {
			return down(err)
		}
		var page []kassa.WatchedAddress
		var w watchedRow
		for rows.Next() {
			if err := w.scan(rows, key); err != nil {
				rows.Close()
				return err
			}
			page = append(page, w.a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return down(err)
		}
		for _, a := range page {
			if err := fn(a); err != nil {
				return err
			}
		}
		if len(page) < addressPage {
			return nil
		}
		*lastID = page[len(page)-1].InvoiceID
	}
}

// NewAddresses calls fn for the address of each invoice inserted by a
// transaction at or after cursor, by pages of addressPage rows in the
// order of their transactions, reading only the columns the watcher
// needs (a row written by a binary older than migration 12, without
// them, is decoded).
func (d *DB) NewAddresses(ctx context.Context, cursor int64, fn func(kassa.WatchedAddress) error) (int64, error) {
	next, err := d.AddressCursor(ctx)
	if err != nil {
		return 0, err
	}
	afterTx, afterID := cursor, ""
	err = d.watchedPages(ctx, &afterTx, &afterID, `SELECT i.watch_tx, `+watchedColumns("NULL::bigint")+`
		FROM invoices i WHERE i.address IS NOT NULL AND i.watch_tx IS NOT NULL AND (i.watch_tx, i.id) > ($1, $2)
		ORDER BY i.watch_tx, i.id LIMIT $3`,
		func() []any { return []any{afterTx, afterID, addressPage} }, fn)
	if err != nil {
		return 0, fmt.Errorf("postgres: new addresses: %w", err)
	}
	return next, nil
}

// WatchedAddresses calls fn for the address of each invoice created at
// or after since (by creation time, an index of migration 13) and of
// each older one that waits for a timer (by open_invoices), with the
// invoice's deadline, by pages of addressPage rows: a few queries for
// all stores, of the columns NewAddresses reads.
func (d *DB) WatchedAddresses(ctx context.Context, since time.Time, fn func(kassa.WatchedAddress) error) error {
	afterMs, afterID := ms(since), ""
	// The deadline is looked up row by row: a join would read all of
	// open_invoices for each page.
	err := d.watchedPages(ctx, &afterMs, &afterID, `SELECT i.created_ms, `+
		watchedColumns("(SELECT o.deadline_ms FROM open_invoices o WHERE o.invoice_id = i.id)")+`
		FROM invoices i
		WHERE i.address IS NOT NULL AND i.created_ms >= $4 AND (i.created_ms, i.id) > ($1, $2)
		ORDER BY i.created_ms, i.id LIMIT $3`,
		func() []any { return []any{afterMs, afterID, addressPage, ms(since)} }, fn)
	if err != nil {
		return fmt.Errorf("postgres: recent addresses: %w", err)
	}
	var openID string
	err = d.watchedPages(ctx, &openID, &afterID, `SELECT o.invoice_id, `+watchedColumns("o.deadline_ms")+`
		FROM open_invoices o JOIN invoices i ON i.id = o.invoice_id
		WHERE i.address IS NOT NULL AND i.created_ms < $3 AND o.invoice_id > $1
		ORDER BY o.invoice_id LIMIT $2`,
		func() []any { return []any{openID, addressPage, ms(since)} }, fn)
	if err != nil {
		return fmt.Errorf("postgres: open invoices' addresses: %w", err)
	}
	return nil
}

// addressIndex is the derivation index of inv's address, -1 for none.
func addressIndex(inv *kassa.Invoice) int64 {
	if inv.DerivationIndex == nil {
		return -1
	}
	return int64(*inv.DerivationIndex)
}
