package postgres

import (
	"context"
	"fmt"
	"time"

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

// addressPage is how many rows NewAddresses reads a query.
const addressPage = 2000

// AddressCursor returns the cursor of now.
func (d *DB) AddressCursor(ctx context.Context) (int64, error) {
	var xmin int64
	if err := d.pool.QueryRow(ctx, `SELECT pg_snapshot_xmin(pg_current_snapshot())::text::bigint`).Scan(&xmin); err != nil {
		return 0, fmt.Errorf("postgres: address cursor: %w", down(err))
	}
	return xmin, nil
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
	for {
		rows, err := d.pool.Query(ctx, `SELECT watch_tx, id, store_id, address, coalesce(address_index, -1),
				coalesce(confirmations, -1), created_ms, CASE WHEN confirmations IS NULL THEN doc END
			FROM invoices WHERE address IS NOT NULL AND watch_tx IS NOT NULL AND (watch_tx, id) > ($1, $2)
			ORDER BY watch_tx, id LIMIT $3`, afterTx, afterID, addressPage)
		if err != nil {
			return 0, fmt.Errorf("postgres: new addresses: %w", down(err))
		}
		var page []kassa.WatchedAddress
		for rows.Next() {
			var a kassa.WatchedAddress
			var confirmations, created int64
			var doc []byte
			if err := rows.Scan(&afterTx, &afterID, &a.StoreID, &a.Address, &a.Index, &confirmations, &created, &doc); err != nil {
				rows.Close()
				return 0, fmt.Errorf("postgres: new addresses: %w", down(err))
			}
			a.InvoiceID, a.Confirmations, a.CreatedAt = afterID, int32(confirmations), time.UnixMilli(created).UTC()
			if doc != nil {
				var inv kassa.Invoice
				if err := format.Unmarshal(doc, &inv); err != nil {
					rows.Close()
					return 0, fmt.Errorf("postgres: decode invoice %s: %w", afterID, err)
				}
				a.Confirmations, a.Index = inv.ConfirmationsRequired, addressIndex(&inv)
			}
			page = append(page, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return 0, fmt.Errorf("postgres: new addresses: %w", down(err))
		}
		for _, a := range page {
			if err := fn(a); err != nil {
				return 0, err
			}
		}
		if len(page) < addressPage {
			return next, nil
		}
	}
}

// addressIndex is the derivation index of inv's address, -1 for none.
func addressIndex(inv *kassa.Invoice) int64 {
	if inv.DerivationIndex == nil {
		return -1
	}
	return int64(*inv.DerivationIndex)
}
