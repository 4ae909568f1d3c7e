package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	_ kassa.RequestBatch  = (*Batch)(nil)
	_ kassa.RequestReader = (*DB)(nil)
)

// PutRequest records a create's request id with what it created; the
// primary key makes a second commit of the id fail (kassa.ErrRequestDone).
func (b *Batch) PutRequest(r kassa.RequestRecord) {
	b.queue(insertRequest, r.StoreID, r.ID, b.json(r))
}

// insertRequest records a request id (merged in a group: merge.go).
const insertRequest = `INSERT INTO requests (store_id, request_id, doc) VALUES ($1, $2, $3)`

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
