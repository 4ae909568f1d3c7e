package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	_ kassa.HistoryBatch  = (*Batch)(nil)
	_ kassa.HistoryReader = (*DB)(nil)
)

// PutHistory writes a line of a store's history in the batch's
// transaction.
func (b *Batch) PutHistory(l *kassa.HistoryLine) {
	b.queue(`INSERT INTO store_history (store_id, seq, at_ns, kind, actor, doc) VALUES ($1, $2, $3, $4, $5, $6)`,
		l.StoreID, int64(l.Seq), l.At.UnixNano(), l.Kind, l.Actor.ID, b.json(l))
}

// History calls fn for the lines of the store's history that q selects,
// newest first, by the primary key.
func (d *DB) History(ctx context.Context, storeID string, q kassa.HistoryQuery, fn func(*kassa.HistoryLine) error) (string, error) {
	below, err := kassa.HistoryCursorSeq(q.Cursor)
	if err != nil {
		return "", err
	}
	var from, to int64
	if !q.From.IsZero() {
		from = q.From.UnixNano()
	}
	if !q.To.IsZero() {
		to = q.To.UnixNano()
	}
	limit := q.PageSize()
	rows, err := d.pool.Query(ctx, `SELECT doc FROM store_history WHERE store_id = $1
		AND ($2::text = '' OR kind = $2) AND ($3::text = '' OR actor = $3)
		AND ($4::bigint = 0 OR at_ns >= $4) AND ($5::bigint = 0 OR at_ns < $5) AND ($6::bigint = 0 OR seq < $6)
		ORDER BY seq DESC LIMIT $7`, storeID, q.Kind, q.Actor, from, to, int64(below), limit+1)
	if err != nil {
		return "", fmt.Errorf("postgres: read history: %w", down(err))
	}
	docs, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		return "", fmt.Errorf("postgres: read history: %w", down(err))
	}
	var last uint64
	for i, doc := range docs {
		if i == limit {
			return kassa.HistoryCursor(last), nil
		}
		var l kassa.HistoryLine
		if err := format.Unmarshal(doc, &l); err != nil {
			return "", fmt.Errorf("postgres: decode history line: %w", err)
		}
		if err := fn(&l); err != nil {
			return "", err
		}
		last = l.Seq
	}
	return "", nil
}
