package persistence

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

var (
	errStoreNotFound          = kassa.Errorf(kassa.NotFound, "store not found")
	errInvoiceNotFound        = kassa.Errorf(kassa.NotFound, "invoice not found")
	errTransactionNotFound    = kassa.Errorf(kassa.NotFound, "transaction not found")
	errPaymentRequestNotFound = kassa.Errorf(kassa.NotFound, "payment request not found")
	errBadCursor              = kassa.Errorf(kassa.Invalid, "cursor is not one this server gave out")
)

// Store returns a store.
func (d *DB) Store(ctx context.Context, id string) (*kassa.Store, error) {
	st, _, err := d.StoreSnapshot(ctx, id)
	return st, err
}

// StoreSnapshot returns a store and the sequence number of its snapshot.
// The store is the caller's copy; its slices are shared and read-only.
func (d *DB) StoreSnapshot(ctx context.Context, id string) (*kassa.Store, uint64, error) {
	if c, ok := d.stores.get(id); ok {
		copied := *c.store
		return &copied, c.seq, nil
	}
	v, err := d.get(storeKey(id))
	if err != nil {
		return nil, 0, err
	}
	if len(v) < 8 {
		return nil, 0, errStoreNotFound
	}
	var st kassa.Store
	if err := format.Unmarshal(v[8:], &st); err != nil {
		return nil, 0, fmt.Errorf("decode store %s: %w", id, err)
	}
	seq := binary.BigEndian.Uint64(v[:8])
	cached := st
	d.stores.put(cachedStore{store: &cached, seq: seq})
	return &st, seq, nil
}

// StoreByAPIKey returns the store that owns apiKey.
func (d *DB) StoreByAPIKey(ctx context.Context, apiKey string) (*kassa.Store, error) {
	k := apiKeyKey(apiKey)
	if id, ok := d.stores.byKey(string(k)); ok {
		return d.Store(ctx, id)
	}
	v, err := d.get(k)
	if err != nil {
		return nil, err
	}
	if v == nil {
		return nil, errStoreNotFound
	}
	d.stores.putKey(string(k), string(v))
	return d.Store(ctx, string(v))
}

// Stores calls fn for every store.
func (d *DB) Stores(ctx context.Context, fn func(*kassa.Store) error) error {
	return d.scanPrefix(ctx, []byte("sto/"), func(id, v []byte) error {
		var st kassa.Store
		if err := format.Unmarshal(v[8:], &st); err != nil {
			return fmt.Errorf("decode store %s: %w", id, err)
		}
		return fn(&st)
	})
}

// Balance returns the store's prepaid balance.
func (d *DB) Balance(ctx context.Context, storeID string) (kassa.Sats, error) {
	// A failed or closed store answers its error, cached or not.
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.leave()
	bal, err := d.balances.Load(storeID, func() (int64, error) {
		v, err := d.get(balanceKey(storeID))
		if err != nil || len(v) != 8 {
			return 0, err
		}
		return int64(binary.BigEndian.Uint64(v)), nil
	}, nil)
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
	v, err := d.get(invoiceKey(id))
	if err != nil {
		return nil, 0, err
	}
	if len(v) < 8 {
		return nil, 0, errInvoiceNotFound
	}
	var inv kassa.Invoice
	if err := format.Unmarshal(v[8:], &inv); err != nil {
		return nil, 0, fmt.Errorf("decode invoice %s: %w", id, err)
	}
	return &inv, binary.BigEndian.Uint64(v[:8]), nil
}

// InvoiceIDByAddress returns the invoice an address was made for.
func (d *DB) InvoiceIDByAddress(ctx context.Context, address string) (string, error) {
	v, err := d.get(addressKey(address))
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", errInvoiceNotFound
	}
	return string(v), nil
}

// InvoiceIDByPaymentHash returns the invoice of a Lightning payment hash.
func (d *DB) InvoiceIDByPaymentHash(ctx context.Context, hash string) (string, error) {
	v, err := d.get(paymentHashKey(hash))
	if err != nil {
		return "", err
	}
	if v == nil {
		return "", errInvoiceNotFound
	}
	return string(v), nil
}

// Invoices calls fn for the store's invoices in q, newest first.
func (d *DB) Invoices(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Invoice) error) (string, error) {
	return d.scanRange(ctx, invoiceByStorePrefix(storeID), q, func(suffix []byte) error {
		inv, err := d.Invoice(ctx, string(suffix[8:]))
		if err != nil {
			return err
		}
		return fn(inv)
	})
}

// OpenInvoices calls fn for each invoice that waits for a timer, by
// deadline.
func (d *DB) OpenInvoices(ctx context.Context, fn func(invoiceID, storeID string, deadline time.Time) error) error {
	return d.scanPrefix(ctx, []byte("iop/"), func(k, storeID []byte) error {
		return fn(string(k[8:]), string(storeID), time.UnixMilli(int64(binary.BigEndian.Uint64(k[:8]))))
	})
}

// Transaction returns a transaction.
func (d *DB) Transaction(ctx context.Context, id int64) (*kassa.Transaction, error) {
	return getJSON[kassa.Transaction](d, transactionKey(id), errTransactionNotFound)
}

// TransactionsByInvoice returns the ledger lines of an invoice, oldest
// first.
func (d *DB) TransactionsByInvoice(ctx context.Context, invoiceID string) ([]kassa.Transaction, error) {
	var out []kassa.Transaction
	err := d.scanPrefix(ctx, transactionByInvoicePrefix(invoiceID), func(k, _ []byte) error {
		tx, err := d.Transaction(ctx, int64(binary.BigEndian.Uint64(k)))
		if err != nil {
			return err
		}
		out = append(out, *tx)
		return nil
	})
	return out, err
}

// Transactions calls fn for the store's transactions in q, newest first.
func (d *DB) Transactions(ctx context.Context, storeID string, q kassa.ListQuery, fn func(*kassa.Transaction) error) (string, error) {
	return d.scanRange(ctx, transactionByStorePrefix(storeID), q, func(suffix []byte) error {
		tx, err := d.Transaction(ctx, int64(binary.BigEndian.Uint64(suffix[8:16])))
		if err != nil {
			return err
		}
		return fn(tx)
	})
}

// PaymentRequest returns a pay link.
func (d *DB) PaymentRequest(ctx context.Context, id string) (*kassa.PaymentRequest, error) {
	pr, err := getJSON[kassa.PaymentRequest](d, paymentRequestKey(id), errPaymentRequestNotFound)
	if err != nil {
		return nil, err
	}
	if pr.PaidInvoiceID == "" {
		paid, err := d.get(paymentRequestPaidKey(id))
		if err != nil {
			return nil, err
		}
		pr.PaidInvoiceID = string(paid)
	}
	return pr, nil
}

// PaymentRequests calls fn for the store's pay links, newest first.
func (d *DB) PaymentRequests(ctx context.Context, storeID string, fn func(*kassa.PaymentRequest) error) error {
	_, err := d.scanRange(ctx, paymentRequestByStorePrefix(storeID), kassa.ListQuery{}, func(suffix []byte) error {
		pr, err := d.PaymentRequest(ctx, string(suffix[8:]))
		if err != nil {
			return err
		}
		return fn(pr)
	})
	return err
}

// scanRange walks the index keys under prefix whose 8-byte time follows
// the prefix, newest first, within q's dates, limit and cursor. fn gets
// the key's suffix after prefix.
func (d *DB) scanRange(ctx context.Context, prefix []byte, q kassa.ListQuery, fn func(suffix []byte) error) (string, error) {
	lower := prefix
	if !q.From.IsZero() {
		lower = key(string(prefix), ms(q.From.Truncate(time.Second)))
	}
	upper := prefixEnd(prefix)
	if !q.To.IsZero() {
		upper = key(string(prefix), ms(q.To.Truncate(time.Second).Add(time.Second)))
	}
	if q.Cursor != "" {
		after, err := base64.RawURLEncoding.DecodeString(q.Cursor)
		if err != nil || len(after) < 8 {
			return "", errBadCursor
		}
		if c := key(string(prefix), after); bytes.Compare(c, upper) < 0 {
			upper = c
		}
	}
	if bytes.Compare(lower, upper) >= 0 {
		return "", nil
	}
	if err := d.enter(); err != nil {
		return "", err
	}
	defer d.leave()
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: lower, UpperBound: upper})
	if err != nil {
		return "", err
	}
	defer it.Close()
	n := 0
	var lastSuffix []byte
	for valid := it.Last(); valid; valid = it.Prev() {
		if q.Limit > 0 && n == q.Limit {
			return base64.RawURLEncoding.EncodeToString(lastSuffix), nil
		}
		suffix := append([]byte(nil), it.Key()[len(prefix):]...)
		if len(suffix) < 8 {
			return "", fmt.Errorf("malformed index key %q", it.Key())
		}
		if err := fn(suffix); err != nil {
			return "", err
		}
		lastSuffix = suffix
		n++
	}
	return "", it.Error()
}

// TransactionNumber is tx's place in its store's ledger, counted from 1
// for the store's oldest line, in the order the store's list shows them
// (creation time, then id): a number that says nothing of other stores.
// It counts index keys only; no line is read.
func (d *DB) TransactionNumber(ctx context.Context, tx *kassa.Transaction) (int64, error) {
	if err := d.enter(); err != nil {
		return 0, err
	}
	defer d.leave()
	upper := append(transactionByStoreKey(tx.StoreID, tx.CreatedAt, tx.ID), 0)
	it, err := d.db.NewIterWithContext(ctx, &pebble.IterOptions{LowerBound: transactionByStorePrefix(tx.StoreID), UpperBound: upper})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	var n int64
	for valid := it.First(); valid; valid = it.Next() {
		n++
	}
	return n, it.Error()
}
