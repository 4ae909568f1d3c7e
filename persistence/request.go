package persistence

import (
	"context"

	"github.com/kassapay/kassa"
)

// requestKey is where a create's request id is recorded:
// req/<store>\0<id> → the JSON kassa.RequestRecord.
func requestKey(store, id string) []byte { return key("req/", str(store), sepb, str(id)) }

var errRequestNotFound = kassa.Errorf(kassa.NotFound, "request not found")

var (
	_ kassa.RequestBatch  = (*Batch)(nil)
	_ kassa.RequestReader = (*DB)(nil)
)

// PutRequest records a create's request id with what it created. The
// commit fails with kassa.ErrRequestDone when the id is recorded already.
func (b *Batch) PutRequest(r kassa.RequestRecord) {
	k := requestKey(r.StoreID, r.ID)
	b.setJSON(k, nil, r)
	b.requests = append(b.requests, k)
}

// Request returns the record of request id of the store.
func (d *DB) Request(ctx context.Context, storeID, id string) (*kassa.RequestRecord, error) {
	return getJSON[kassa.RequestRecord](d, requestKey(storeID, id), errRequestNotFound)
}

// requestsTaken reports whether any of keys is recorded; the caller
// holds requestMu until its batch is committed, so that two batches with
// one request id never both commit.
func (d *DB) requestsTaken(keys [][]byte) (bool, error) {
	for _, k := range keys {
		v, err := d.get(k)
		if err != nil {
			return false, err
		}
		if v != nil {
			return true, nil
		}
	}
	return false, nil
}
