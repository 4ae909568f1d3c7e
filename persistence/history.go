package persistence

import (
	"context"
	"fmt"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	_ kassa.HistoryBatch  = (*Batch)(nil)
	_ kassa.HistoryReader = (*DB)(nil)
)

// historyKey is where a line of a store's history is kept, by the
// sequence number of its change's event: hist/<store>\0<seq:8> → the
// JSON kassa.HistoryLine.
func historyKey(store string, seq uint64) []byte { return key("hist/", str(store), sepb, u64(seq)) }
func historyPrefix(store string) []byte          { return key("hist/", str(store), sepb) }

// PutHistory writes a line of a store's history in the batch.
func (b *Batch) PutHistory(l *kassa.HistoryLine) {
	b.setJSON(historyKey(l.StoreID, l.Seq), nil, l)
}

// History calls fn for the lines of the store's history that q selects,
// newest first. The filters are applied to the lines read: a store's
// history is made by people's changes and stays small.
func (d *DB) History(ctx context.Context, storeID string, q kassa.HistoryQuery, fn func(*kassa.HistoryLine) error) (string, error) {
	below, err := kassa.HistoryCursorSeq(q.Cursor)
	if err != nil {
		return "", err
	}
	if err := d.enter(); err != nil {
		return "", err
	}
	defer d.leave()
	prefix := historyPrefix(storeID)
	upper := prefixEnd(prefix)
	if below > 0 {
		upper = historyKey(storeID, below)
	}
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: prefix, UpperBound: upper})
	if err != nil {
		return "", err
	}
	defer it.Close()
	n, limit := 0, q.PageSize()
	var last uint64
	for valid := it.Last(); valid; valid = it.Prev() {
		var l kassa.HistoryLine
		if err := format.Unmarshal(it.Value(), &l); err != nil {
			return "", fmt.Errorf("decode history line %q: %w", it.Key(), err)
		}
		if !q.Matches(&l) {
			continue
		}
		if n == limit {
			return kassa.HistoryCursor(last), nil
		}
		if err := fn(&l); err != nil {
			return "", err
		}
		last = l.Seq
		n++
	}
	return "", it.Error()
}
