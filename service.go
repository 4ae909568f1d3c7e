package kassa

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// The interfaces below are what the core consumes from its adapters and
// what the HTTP adapter consumes from the core. Adapters implement them;
// only cmd/kassa knows every concrete type.

// StoreService changes stores.
type StoreService interface {
	CreateStore(ctx context.Context, s StoreSettings) (*Store, error)
	// TopUp credits the store's prepaid balance. A non-empty reference
	// names the payment credited: a second top-up with a reference the
	// store already credited writes nothing and returns the first one's
	// ledger line, whatever its amount (docs/decisions.md, "Top-ups
	// credited once").
	TopUp(ctx context.Context, storeID string, amount Sats, reference string) (*Transaction, error)
	// UpdateStore applies u to the store (Store.Apply) and returns it:
	// the settings named in only, in the store actor's turn, so that a
	// concurrent change of the others is kept; none named: every one.
	UpdateStore(ctx context.Context, storeID string, u StoreUpdate, only ...StoreField) (*Store, error)
}

// InvoiceService creates and changes invoices.
type InvoiceService interface {
	CreateInvoice(ctx context.Context, storeID string, r *InvoiceRequest) (*Invoice, error)
	MarkInvoiceInvalid(ctx context.Context, storeID, invoiceID string) (*Invoice, error)
	// ArchiveInvoice archives an invoice (Invoice.Archived); archiving
	// an archived one returns it unchanged.
	ArchiveInvoice(ctx context.Context, storeID, invoiceID string) (*Invoice, error)
}

// PaymentRequestService creates and changes pay links.
type PaymentRequestService interface {
	CreatePaymentRequest(ctx context.Context, storeID string, in *PaymentRequestInput) (*PaymentRequest, error)
	UpdatePaymentRequest(ctx context.Context, storeID, id string, in *PaymentRequestInput) (*PaymentRequest, error)
	ArchivePaymentRequest(ctx context.Context, storeID, id string) error
	// PayPaymentRequest returns the invoice a customer pays pay link id
	// with: the invoice of the same session (an opaque token the customer
	// page keeps in a cookie) while it is still New and unexpired, else a
	// new one. An empty session always makes a new invoice.
	PayPaymentRequest(ctx context.Context, storeID, id, session string) (*Invoice, error)
}

// ListQuery selects a range of a store's invoices or transactions, newest
// first. Zero times leave that end open. Limit zero means no limit; Cursor
// continues a previous page.
type ListQuery struct {
	From, To time.Time
	Limit    int
	Cursor   string
}

// Reader reads what the actors stored. Reads need no actor: every write
// is committed before the request that caused it is answered.
type Reader interface {
	Store(ctx context.Context, id string) (*Store, error)
	// StoreByAPIKey returns the store that owns key, or NotFound.
	StoreByAPIKey(ctx context.Context, key string) (*Store, error)
	Stores(ctx context.Context, fn func(*Store) error) error
	// Balance is the store's prepaid balance.
	Balance(ctx context.Context, storeID string) (Sats, error)

	Invoice(ctx context.Context, id string) (*Invoice, error)
	InvoiceIDByAddress(ctx context.Context, address string) (string, error)
	InvoiceIDByPaymentHash(ctx context.Context, hash string) (string, error)
	// Invoices calls fn for each invoice of the store in q, newest first,
	// and returns the cursor of the next page when q.Limit cut the list.
	Invoices(ctx context.Context, storeID string, q ListQuery, fn func(*Invoice) error) (next string, err error)
	// SearchInvoices calls fn for each invoice of the store that q
	// finds, newest first, and returns the cursor of the next page when
	// q.Limit cut the list. It reads indexes that the invoice's own
	// writes keep (PutInvoice): its cost grows with the invoices found,
	// not with the store's. A query without text is Invalid.
	SearchInvoices(ctx context.Context, storeID string, q SearchQuery, fn func(*Invoice) error) (next string, err error)
	// OpenInvoices calls fn for each invoice that waits for a timer, by
	// deadline.
	OpenInvoices(ctx context.Context, fn func(invoiceID, storeID string, deadline time.Time) error) error

	Transaction(ctx context.Context, id int64) (*Transaction, error)
	TransactionsByInvoice(ctx context.Context, invoiceID string) ([]Transaction, error)
	Transactions(ctx context.Context, storeID string, q ListQuery, fn func(*Transaction) error) (next string, err error)

	PaymentRequest(ctx context.Context, id string) (*PaymentRequest, error)
	PaymentRequests(ctx context.Context, storeID string, fn func(*PaymentRequest) error) error

	WebhookReader
}

// Stream names the journal of one actor.
type Stream struct {
	Kind string
	ID   string
}

// Stream kinds.
const (
	KindStore   = "store"
	KindInvoice = "invoice"
)

// Batch collects writes that commit together or not at all: an actor's
// event, its new state, the indexes and ledger lines that follow from it.
type Batch interface {
	AppendEvent(s Stream, seq uint64, event []byte)
	PutStore(st *Store, seq uint64)
	// PutInvoice writes the invoice's snapshot and updates its indexes;
	// prev is its state before, nil when it is new.
	PutInvoice(inv, prev *Invoice, seq uint64)
	// PutTransaction assigns tx an ID, writes it and applies its balance
	// delta to the store's prepaid balance.
	PutTransaction(tx *Transaction)
	PutPaymentRequest(pr *PaymentRequest)
	// MarkPaymentRequestPaid records that invoiceID settled the pay link.
	MarkPaymentRequestPaid(paymentRequestID, invoiceID string)
	PutWebhook(w *Webhook)
	DeleteWebhook(w *Webhook)
	// PutDelivery writes a delivery; pending keeps it in the outbox of
	// deliveries to send, false takes it out. A delivery entering the
	// outbox gets its OutboxSeq: the outbox is read in the order the
	// batches that put them were built.
	PutDelivery(d *Delivery, pending bool)
}

// Journal stores actors' events and state durably.
type Journal interface {
	NewBatch() Batch
	// Commit writes b durably (fsynced) before it returns.
	Commit(ctx context.Context, b Batch) error
	// Events calls fn for each event of s after seq, in order.
	Events(ctx context.Context, s Stream, after uint64, fn func(seq uint64, event []byte) error) error
	// StreamSeq returns the last sequence number of s, or 0.
	StreamSeq(ctx context.Context, s Stream) (uint64, error)
	// InvoiceSnapshot returns an invoice's stored state and the sequence
	// number of the last event it includes; NotFound when there is none.
	InvoiceSnapshot(ctx context.Context, id string) (*Invoice, uint64, error)
	// StoreSnapshot does the same for a store.
	StoreSnapshot(ctx context.Context, id string) (*Store, uint64, error)
}

// KeyValue keeps small records that expire, such as idempotency keys.
type KeyValue interface {
	GetValue(ctx context.Context, key string) ([]byte, bool, error)
	PutValue(ctx context.Context, key string, value []byte, expires time.Time) error
}

// ValueCache is a KeyValue that can also keep a value without waiting
// for the disk: for a value whose loss in a crash costs only its
// recomputation (the answer to a create whose own commit recorded its
// request id). A store without it keeps such values with PutValue.
type ValueCache interface {
	CacheValue(ctx context.Context, key string, value []byte, expires time.Time) error
}

// BackendInfo describes a chain or Lightning backend for the health check.
type BackendInfo struct {
	Backend   string `json:"backend"` // "sim", "rpc", "lnd"
	Network   string `json:"network"`
	Simulated bool   `json:"simulated"`
	Height    int64  `json:"height,omitempty"`
	Synced    bool   `json:"synced"`
	Error     string `json:"error,omitempty"`
	// Node is the kind of node behind a real backend ("btcd", "bitcoind").
	Node string `json:"node,omitempty"`
	// NodeHeight and BestHash are the node's best block; Height is how far
	// the watcher processed, Lag the blocks between them.
	NodeHeight int64  `json:"nodeHeight,omitempty"`
	BestHash   string `json:"bestHash,omitempty"`
	Lag        int64  `json:"lag,omitempty"`
	// Warning names conditions the operator should look at, separated
	// by "; ".
	Warning string `json:"warning,omitempty"`
	// AddressPool is how many addresses of lnd's wallet are left for
	// the on-chain invoices of stores without an xpub while lnd is
	// unreachable; nil without such a pool.
	AddressPool *int `json:"addressPool,omitempty"`
}

// ChainEvent says what the chain watcher saw of one output paying a
// watched address: first in the mempool, then at each new depth, or that
// it was dropped.
type ChainEvent struct {
	Address string
	Payment Payment
	Dropped bool
}

// Chain is an on-chain backend.
type Chain interface {
	// NewAddress returns a fresh address for an invoice of store.
	NewAddress(ctx context.Context, store *Store, invoiceID string) (string, error)
	// Start delivers chain events to handle until ctx ends. An event is
	// acknowledged only when handle returns nil: then its effect is
	// durable. An event whose handle failed is delivered again later, so
	// handle must be idempotent.
	Start(ctx context.Context, handle func(context.Context, ChainEvent) error) error
	Info(ctx context.Context) BackendInfo
}

// ErrNoWalletAddress is the refusal of an on-chain invoice of a store
// without an xpub while lnd, whose wallet gives such stores' addresses,
// cannot be reached and its address pool is used up: Lightning is at
// fault, not the chain (docs/decisions.md, "On-chain payments without
// an xpub").
var ErrNoWalletAddress = Errorf(Unavailable, "Lightning (lnd) is unreachable and no address of its wallet is left in the pool for stores without an xpub; try again once lnd is back")

// LightningInvoice is a BOLT11 payment request made by the node.
type LightningInvoice struct {
	PaymentRequest string
	PaymentHash    string
}

// LightningEvent says that a Lightning invoice was settled.
type LightningEvent struct {
	PaymentHash string
	AmountMSat  MSat
	SettledAt   time.Time
}

// Lightning is a Lightning backend.
type Lightning interface {
	// CreateInvoice asks the node for an invoice; amount zero makes an
	// invoice for any amount.
	CreateInvoice(ctx context.Context, amount MSat, memo string, expiry time.Duration) (LightningInvoice, error)
	// Start delivers settled invoices to handle until ctx ends. A settle
	// is acknowledged (and the node's cursor advanced past it) only when
	// handle returns nil; one whose handle failed is delivered again
	// later, so handle must be idempotent.
	Start(ctx context.Context, handle func(context.Context, LightningEvent) error) error
	// CancelInvoice cancels the open invoice with paymentHash, so that no
	// payment can arrive for it any more. Cancelling an invoice that is
	// already cancelled, expired or unknown is not an error.
	CancelInvoice(ctx context.Context, paymentHash string) error
	Info(ctx context.Context) BackendInfo
}

// RateEntry is the rate of one pair for the rates endpoint.
type RateEntry struct {
	Currency Currency
	Rate     decimal.Decimal
	// Errors says what went wrong with the pair's sources.
	Errors []string
}

// Rates gives the price of one bitcoin in each currency.
type Rates interface {
	// Rate returns the current price of one bitcoin in c, or an
	// Unavailable error that names c and the failing sources. BTC and
	// SATS never fail.
	Rate(ctx context.Context, c Currency) (decimal.Decimal, error)
	// Entries returns one entry per fiat currency of Currencies.
	Entries(ctx context.Context) []RateEntry
	// Currencies lists the fiat currencies served, sorted by code: those
	// that at least one configured provider quotes.
	Currencies() []Currency
	// Source names where rates come from ("fixed" in simulation).
	Source() string
}

// Simulator drives the simulated chain and Lightning backends.
type Simulator interface {
	// Pay pays inv by method with amount sats (zero: the amount due).
	Pay(ctx context.Context, inv *Invoice, method PaymentMethod, amount Sats) (txid string, err error)
	// Mine mines n blocks and returns the new height.
	Mine(ctx context.Context, n int) (int64, error)
}
