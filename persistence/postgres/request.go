package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	_ kassa.RequestBatch  = (*Batch)(nil)
	_ kassa.RequestReader = (*DB)(nil)
)

// PutRequest records a create's request id with what it created,
// stamped with the store's clock when r.At is zero; the primary key
// makes a second commit of the id fail (kassa.ErrRequestDone).
func (b *Batch) PutRequest(r kassa.RequestRecord) {
	if r.At.IsZero() {
		r.At = b.db.clock.Now().UTC()
	}
	b.queue(insertRequest, r.StoreID, r.ID, b.json(r), r.Kind, r.At.UnixMilli())
}

// insertRequest records a request id (merged in a group: merge.go).
const insertRequest = `INSERT INTO requests (store_id, request_id, doc, kind, at_ms) VALUES ($1, $2, $3, $4, $5)`

// sweepRequests deletes the request records that expire and were
// written before cutoff.
func (d *DB) sweepRequests(ctx context.Context, cutoff time.Time) (int, error) {
	tag, err := d.pool.Exec(ctx, `DELETE FROM requests WHERE at_ms < $1 AND kind <> $2`, cutoff.UnixMilli(), kassa.RequestPoolAddress)
	if err != nil {
		return 0, fmt.Errorf("postgres: sweep request records: %w", down(err))
	}
	return int(tag.RowsAffected()), nil
}

// Request returns the record of request id of the store.
func (d *DB) Request(ctx context.Context, storeID, id string) (*kassa.RequestRecord, error) {
	var doc []byte
	err := d.pool.QueryRow(ctx, `SELECT doc FROM requests WHERE store_id = $1 AND request_id = $2`, storeID, id).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, kassa.Errorf(kassa.NotFound, "request not found")
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: read request: %w", down(err))
	}
	var r kassa.RequestRecord
	if err := format.Unmarshal(doc, &r); err != nil {
		return nil, fmt.Errorf("postgres: decode request: %w", down(err))
	}
	return &r, nil
}

// requestDone wraps kassa.ErrRequestDone with the error PostgreSQL gave.
type requestDone struct{ err error }

func (e *requestDone) Error() string   { return kassa.ErrRequestDone.Error() + ": " + e.err.Error() }
func (e *requestDone) Unwrap() []error { return []error{kassa.ErrRequestDone, e.err} }
