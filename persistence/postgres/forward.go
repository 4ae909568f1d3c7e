package postgres

import (
	"context"
	"fmt"

	"github.com/kassapay/kassa"
)

// Forwards to stores' Lightning addresses (docs/decisions.md,
// "Forwarding"): the queue of transfers waiting, keyed by store and
// transaction ID, and the forwards with a partial index of the open ones.

var (
	_ kassa.ForwardBatch = (*Batch)(nil)
	_ kassa.ForwardStore = (*DB)(nil)
)

var errForwardNotFound = kassa.Errorf(kassa.NotFound, "forward not found")

// QueueTransfer queues a Pending transfer line for forwarding.
func (b *Batch) QueueTransfer(q kassa.QueuedTransfer) {
	b.queue(`INSERT INTO forward_queue (store_id, transaction_id, doc) VALUES ($1, $2, $3)
		ON CONFLICT (store_id, transaction_id) DO UPDATE SET doc = EXCLUDED.doc`, q.StoreID, q.TransactionID, b.json(q))
}

// PutForward writes a forward and takes its transfers out of the queue.
func (b *Batch) PutForward(f *kassa.Forward) {
	b.queue(`INSERT INTO forwards (id, store_id, open, doc) VALUES ($1, $2, $3, $4)
		ON CONFLICT (id) DO UPDATE SET store_id = EXCLUDED.store_id, open = EXCLUDED.open, doc = EXCLUDED.doc`,
		f.ID, f.StoreID, f.Status == kassa.ForwardOpen, b.json(f))
	for _, q := range f.Transfers {
		b.queue(`DELETE FROM forward_queue WHERE store_id = $1 AND transaction_id = $2`, q.StoreID, q.TransactionID)
	}
}

// RewriteTransaction writes tx again under its ID. Its store, creation
// time and invoice must be unchanged, and its balance delta is not
// applied again.
func (b *Batch) RewriteTransaction(tx *kassa.Transaction) {
	if tx.ID <= 0 {
		if b.err == nil {
			b.err = fmt.Errorf("rewrite a transaction without an ID")
		}
		return
	}
	b.queue(`UPDATE transactions SET doc = $2 WHERE id = $1`, tx.ID, b.json(tx))
}

// QueuedTransfers calls fn for each transfer of the store waiting to be
// forwarded, oldest first.
func (d *DB) QueuedTransfers(ctx context.Context, storeID string, fn func(kassa.QueuedTransfer) error) error {
	return eachDoc(ctx, d, func(q *kassa.QueuedTransfer) error { return fn(*q) },
		`SELECT doc FROM forward_queue WHERE store_id = $1 ORDER BY transaction_id`, storeID)
}

// OpenForwards calls fn for each open forward of the store.
func (d *DB) OpenForwards(ctx context.Context, storeID string, fn func(*kassa.Forward) error) error {
	return eachDoc(ctx, d, fn, `SELECT doc FROM forwards WHERE store_id = $1 AND open ORDER BY id`, storeID)
}

// Forward returns a forward, or NotFound.
func (d *DB) Forward(ctx context.Context, id string) (*kassa.Forward, error) {
	return getDoc[kassa.Forward](ctx, d, errForwardNotFound, `SELECT doc FROM forwards WHERE id = $1`, id)
}

// ForwardingStores returns the stores with queued transfers or open
// forwards, so that their forward actors start after a restart.
func (d *DB) ForwardingStores(ctx context.Context) ([]string, error) {
	rows, err := d.pool.Query(ctx, `SELECT store_id FROM forward_queue UNION SELECT store_id FROM forwards WHERE open ORDER BY 1`)
	if err != nil {
		return nil, fmt.Errorf("postgres: forwarding stores: %w", down(err))
	}
	var stores []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return nil, fmt.Errorf("postgres: forwarding stores: %w", down(err))
		}
		stores = append(stores, s)
	}
	rows.Close()
	return stores, rows.Err()
}
