package persistence

import (
	"context"
	"fmt"
	"slices"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// Forwards to stores' Lightning addresses (docs/decisions.md,
// "Forwarding"). Keys:
//
//	fwq/<store>\0<txid:8>    transfer queued for forwarding → QueuedTransfer JSON
//	fwd/<id>                 forward JSON
//	fwo/<store>\0<id>        open forwards of a store

var (
	_ kassa.ForwardBatch = (*Batch)(nil)
	_ kassa.ForwardStore = (*DB)(nil)
)

func forwardQueueKey(store string, txID int64) []byte {
	return key("fwq/", str(store), sepb, u64(uint64(txID)))
}
func forwardQueuePrefix(store string) []byte { return key("fwq/", str(store), sepb) }
func forwardKey(id string) []byte            { return key("fwd/", str(id)) }
func openForwardKey(store, id string) []byte { return key("fwo/", str(store), sepb, str(id)) }
func openForwardPrefix(store string) []byte  { return key("fwo/", str(store), sepb) }

// QueueTransfer queues a Pending transfer line for forwarding.
func (b *Batch) QueueTransfer(q kassa.QueuedTransfer) {
	b.setJSON(forwardQueueKey(q.StoreID, q.TransactionID), nil, q)
}

// PutForward writes a forward, keeps the open index, and takes its
// transfers out of the queue.
func (b *Batch) PutForward(f *kassa.Forward) {
	b.setJSON(forwardKey(f.ID), nil, f)
	if f.Status == kassa.ForwardOpen {
		b.set(openForwardKey(f.StoreID, f.ID), nil)
	} else {
		b.del(openForwardKey(f.StoreID, f.ID))
	}
	for _, q := range f.Transfers {
		b.del(forwardQueueKey(q.StoreID, q.TransactionID))
	}
}

// RewriteTransaction writes tx again under its ID. Its store, creation
// time and invoice must be unchanged (its index keys are), and its
// balance delta is not applied again.
func (b *Batch) RewriteTransaction(tx *kassa.Transaction) {
	if tx.ID <= 0 {
		if b.err == nil {
			b.err = fmt.Errorf("rewrite a transaction without an ID")
		}
		return
	}
	b.setJSON(transactionKey(tx.ID), nil, tx)
}

// QueuedTransfers calls fn for each transfer of the store waiting to be
// forwarded, oldest first.
func (d *DB) QueuedTransfers(ctx context.Context, storeID string, fn func(kassa.QueuedTransfer) error) error {
	return d.scanPrefix(ctx, forwardQueuePrefix(storeID), func(_, v []byte) error {
		var q kassa.QueuedTransfer
		if err := format.Unmarshal(v, &q); err != nil {
			return fmt.Errorf("decode queued transfer: %w", err)
		}
		return fn(q)
	})
}

// OpenForwards calls fn for each open forward of the store.
func (d *DB) OpenForwards(ctx context.Context, storeID string, fn func(*kassa.Forward) error) error {
	var ids []string
	err := d.scanPrefix(ctx, openForwardPrefix(storeID), func(rest, _ []byte) error {
		ids = append(ids, string(rest))
		return nil
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		f, err := d.Forward(ctx, id)
		if err != nil {
			return err
		}
		if err := fn(f); err != nil {
			return err
		}
	}
	return nil
}

// Forward returns a forward, or NotFound.
func (d *DB) Forward(ctx context.Context, id string) (*kassa.Forward, error) {
	return getJSON[kassa.Forward](d, forwardKey(id), kassa.Errorf(kassa.NotFound, "forward not found"))
}

// ForwardingStores returns the stores with queued transfers or open
// forwards, so that their forward actors start after a restart.
func (d *DB) ForwardingStores(ctx context.Context) ([]string, error) {
	var stores []string
	for _, prefix := range []string{"fwq/", "fwo/"} {
		err := d.scanPrefix(ctx, []byte(prefix), func(rest, _ []byte) error {
			for i, c := range rest {
				if c == sep {
					if s := string(rest[:i]); !slices.Contains(stores, s) {
						stores = append(stores, s)
					}
					break
				}
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return stores, nil
}
