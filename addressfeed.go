package kassa

import (
	"context"
	"time"
)

// WatchedAddress is what a chain watcher needs of an invoice's on-chain
// address, without the invoice.
type WatchedAddress struct {
	InvoiceID, StoreID, Address string
	// Index is the address's derivation index (Invoice.DerivationIndex),
	// -1 when it has none.
	Index int64
	// Confirmations is Invoice.ConfirmationsRequired.
	Confirmations int32
	CreatedAt     time.Time
	// Deadline is when the invoice's timer fires next (Invoice.Deadline:
	// its expiry while New, the end of its monitoring after), zero when
	// it waits for none. WatchedAddresses sets it; NewAddresses does not.
	Deadline time.Time
}

// AddressFeed is a store that hands a cluster's chain watcher the
// on-chain addresses of the invoices committed since it last looked, in
// one read for all stores. A cursor orders commits: every invoice
// committed after AddressCursor returned is given by a later
// NewAddresses from that cursor or from the cursors it returns, however
// its transaction's commit interleaves with others'. An address may be
// given again by a later call.
type AddressFeed interface {
	// AddressCursor returns the cursor of now: NewAddresses from it
	// gives every invoice not committed yet.
	AddressCursor(ctx context.Context) (int64, error)
	// NewAddresses calls fn for each address of an invoice committed at
	// or after cursor, reading bounded pages, and returns the cursor of
	// the next call.
	NewAddresses(ctx context.Context, cursor int64, fn func(WatchedAddress) error) (next int64, err error)
	// WatchedAddresses calls fn for each address of an invoice created
	// at or after since and of each invoice that waits for a timer,
	// whenever created, with its Deadline: the addresses a watcher
	// loads at start, read for all stores in bounded pages of the same
	// columns as NewAddresses.
	WatchedAddresses(ctx context.Context, since time.Time, fn func(WatchedAddress) error) error
}
