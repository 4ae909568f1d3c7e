// Package sim is a simulation of a Lightning node, the Lightning backend of
// `kassa serve --lightning=sim`: an in-memory regtest node with no daemon
// and no channels, which issues real, signed BOLT11 invoices and settles
// them when Pay is called.
package sim

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/kassapay/kassa/internal/simstore"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
)

var _ kassa.Lightning = (*Node)(nil)

// Params are the network parameters of the simulated node: its invoices
// start with "lnbcrt".
var Params = &chaincfg.RegressionNetParams

const (
	// DefaultExpiry is the expiry of an invoice created with none, as
	// BOLT11 assumes when an invoice does not say.
	DefaultExpiry = bolt11.DefaultExpiry

	// FinalCLTVDelta is the min_final_cltv_expiry of every invoice, lnd's
	// default.
	FinalCLTVDelta = 80

	// MaxMemoBytes is the longest description a BOLT11 invoice holds;
	// longer memos are cut at a character boundary.
	MaxMemoBytes = 639
)

var (
	// ErrUnknownInvoice is returned by Pay for a payment request that this
	// node did not make.
	ErrUnknownInvoice = kassa.Errorf(kassa.NotFound, "the simulated Lightning node made no such invoice")

	// ErrBadPaymentRequest is returned by Pay for a string that is not a
	// BOLT11 regtest payment request.
	ErrBadPaymentRequest = kassa.Errorf(kassa.Invalid, "not a valid BOLT11 regtest payment request")

	// ErrInvoiceAlreadyPaid is returned by Pay for an invoice that was
	// paid before: a Lightning invoice settles once.
	ErrInvoiceAlreadyPaid = kassa.Errorf(kassa.Conflict, "the Lightning invoice is already paid")

	// ErrNotRecorded is returned by Pay when the service did not make the
	// settle durable: the node settled the invoice, but the service's
	// invoice does not show it yet.
	ErrNotRecorded = kassa.Errorf(kassa.Unavailable, "the service did not record the payment")

	// ErrInvoiceCancelled is returned by Pay for an invoice that was
	// cancelled: its Kassa invoice expired.
	ErrInvoiceCancelled = kassa.Errorf(kassa.Conflict, "the Lightning invoice was cancelled")

	// ErrInvoiceExpired is returned by Pay for an invoice past its expiry.
	ErrInvoiceExpired = kassa.Errorf(kassa.Conflict, "the Lightning invoice has expired")

	// ErrAmountRequired is returned by Pay for an invoice without an
	// amount when the payment names none either.
	ErrAmountRequired = kassa.Errorf(kassa.Invalid, "the Lightning invoice has no amount: give one")

	// ErrAmountTooLow is returned by Pay for less than the invoice asks:
	// Lightning payments are never partial.
	ErrAmountTooLow = kassa.Errorf(kassa.Invalid, "the payment is less than the Lightning invoice asks")

	// ErrAmountTooHigh is returned by Pay for more than twice what the
	// invoice asks, which BOLT 4 lets a recipient refuse.
	ErrAmountTooHigh = kassa.Errorf(kassa.Invalid, "the payment is more than twice what the Lightning invoice asks")

	// ErrBadAmount is returned for a negative amount or one above all
	// bitcoin.
	ErrBadAmount = kassa.Errorf(kassa.Invalid, "the amount must be between 0 and 21 million bitcoin")

	// ErrBadExpiry is returned by CreateInvoice for a negative expiry.
	ErrBadExpiry = kassa.Errorf(kassa.Invalid, "the invoice expiry must not be negative")
)

// maxMSat is every bitcoin there will ever be, in millisatoshis.
var maxMSat = kassa.MaxSats.MSat()

// Node is a simulated Lightning node. CreateInvoice makes BOLT11
// invoices signed with the node's key; Pay settles them and reports each
// settlement to the handler given to Start, outside the node's lock and
// before Pay returns. A settlement whose handler failed is kept and
// delivered again, in order, until the handler accepts it: by a retry
// loop with backoff, and before any later settlement. It is safe for
// concurrent use.
//
// The node keeps its key, its closed invoices and its unacknowledged
// settlements in a Store: with Open on the service's store they survive a
// restart, and nothing of an invoice stays in memory. An open invoice of
// such a node has no record: its preimage derives from the node's key
// and the invoice's payment address, and Pay reads its amount and expiry
// from the payment request, so a create writes nothing (docs/decisions.md,
// "The simulated backends keep their state in the store"). New keeps
// the records in memory, for tests, and one for each open invoice, since
// it forgets closed ones (prune.go).
type Node struct {
	clock kassa.Clock
	key   *btcec.PrivateKey
	store Store
	// secret derives the preimage of each invoice from its payment
	// address (preimageFor); it is the node key's bytes.
	secret []byte

	// mu makes the read-modify-write of an invoice record atomic.
	mu sync.Mutex
	// settles are the settlements not acknowledged yet, pushed under mu
	// so that they keep the order of the invoice changes.
	settles *simstore.Queue[kassa.LightningEvent]

	// closed is set on a node made by New, which prunes closed invoices
	// from memory (see prune.go); lastSweep is its last sweep of expired
	// ones. n.mu guards both.
	closed    *closedSet
	lastSweep time.Time
}

// Store is where a Node keeps its state: small records under keys of its
// own. persistence.DB.State gives one on the service's store.
type Store = simstore.Store

// Keys of the node's records in its Store.
const (
	keyNodeKey       = "key"
	keyInvoicePrefix = "inv/"     // + payment hash: invoiceRecord
	keyPendingPrefix = "pending/" // + sequence, 16 hex digits: LightningEvent
)

// invoiceRecord is what the node keeps of one invoice it made: a node
// made by Open keeps one once the invoice is settled or cancelled (and
// for invoices made before it derived preimages), a node made by New one
// for each invoice it has not forgotten.
type invoiceRecord struct {
	AmountMSat kassa.MSat `json:"amountMsat"` // zero: any amount
	ExpiresAt  time.Time  `json:"expiresAt"`
	Preimage   string     `json:"preimage"` // hex
	Settled    bool       `json:"settled,omitempty"`
	Cancelled  bool       `json:"cancelled,omitempty"`
}

// New returns a node with a new random key and no invoices, which keeps
// its state in memory. clock stamps invoices and settlements; nil means
// the system clock.
func New(clock kassa.Clock) (*Node, error) {
	n, err := Open(context.Background(), clock, simstore.NewMem())
	if err != nil {
		return nil, err
	}
	n.closed = newClosedSet()
	n.lastSweep = n.clock.Now()
	return n, nil
}

// Open returns the node whose state is in store: its key, invoices and
// the settlements not acknowledged yet, which Start delivers again. An
// empty store gets a new random key.
func Open(ctx context.Context, clock kassa.Clock, store Store) (*Node, error) {
	if clock == nil {
		clock = kassa.SystemClock{}
	}
	n := &Node{clock: clock, store: store}
	// A new key is kept only if the store has none: cluster nodes that
	// start together on an empty store all keep the first one stored.
	fresh, err := btcec.NewPrivateKey()
	if err != nil {
		return nil, fmt.Errorf("simulated Lightning node key: %w", err)
	}
	raw, err := store.LoadOrStore(ctx, keyNodeKey, fresh.Serialize())
	if err != nil {
		return nil, fmt.Errorf("simulated Lightning node key: %w", err)
	}
	if len(raw) != btcec.PrivKeyBytesLen {
		return nil, fmt.Errorf("simulated Lightning node key: %d bytes stored, want %d", len(raw), btcec.PrivKeyBytesLen)
	}
	n.key, _ = btcec.PrivKeyFromBytes(raw)
	n.secret = n.key.Serialize()
	if n.settles, err = simstore.OpenQueue[kassa.LightningEvent](ctx, store, keyPendingPrefix); err != nil {
		return nil, fmt.Errorf("simulated Lightning node: %w", err)
	}
	return n, nil
}

// load returns the record of the invoice with hash, or nil.
func (n *Node) load(ctx context.Context, hash string) (*invoiceRecord, error) {
	v, ok, err := n.store.Get(ctx, keyInvoicePrefix+hash)
	if err != nil {
		return nil, err
	}
	if !ok {
		return n.closedRecord(hash), nil
	}
	var rec invoiceRecord
	if err := json.Unmarshal(v, &rec); err != nil {
		return nil, fmt.Errorf("invoice %s: %w", hash, err)
	}
	return &rec, nil
}

// preimageFor returns the preimage of the invoice with paymentAddr:
// HMAC-SHA256 under the node's key, so that only this node knows it and
// it needs no record.
func (n *Node) preimageFor(paymentAddr *[32]byte) [32]byte {
	mac := hmac.New(sha256.New, n.secret)
	mac.Write([]byte("kassa sim preimage\x00"))
	mac.Write(paymentAddr[:])
	var preimage [32]byte
	mac.Sum(preimage[:0])
	return preimage
}

// derived returns the record of an open invoice of a node made by Open
// from its decoded payment request, or nil when its payment hash is not
// that of the preimage the node derives for it (not an invoice of the
// node) or the node is one made by New, which keeps a record of every
// invoice it has not forgotten.
func (n *Node) derived(decoded *bolt11.Invoice) *invoiceRecord {
	if n.closed != nil || decoded.PaymentAddr == nil || decoded.PaymentHash == nil {
		return nil
	}
	preimage := n.preimageFor(decoded.PaymentAddr)
	if sha256.Sum256(preimage[:]) != *decoded.PaymentHash {
		return nil
	}
	rec := &invoiceRecord{ExpiresAt: decoded.Timestamp.Add(decoded.Expiry()), Preimage: hex.EncodeToString(preimage[:])}
	if decoded.MilliSat != nil {
		rec.AmountMSat = kassa.MSat(*decoded.MilliSat)
	}
	return rec
}

func (n *Node) save(ctx context.Context, hash string, rec *invoiceRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return n.store.Put(ctx, keyInvoicePrefix+hash, v)
}

// PubKey returns the node's public key, hex encoded (its node id).
func (n *Node) PubKey() string {
	return hex.EncodeToString(n.key.PubKey().SerializeCompressed())
}

// Start delivers settled invoices to handle from now until ctx ends. It
// returns at once. A second Start replaces the handler of the first.
// Settlements made while no handler runs, and those whose handler failed,
// are delivered once one runs, oldest first.
func (n *Node) Start(ctx context.Context, handle func(context.Context, kassa.LightningEvent) error) error {
	if handle == nil {
		return errors.New("start simulated Lightning node: no handler")
	}
	return n.settles.Start(ctx, handle)
}

// Info describes the simulated node: always synced.
func (n *Node) Info(ctx context.Context) kassa.BackendInfo {
	return kassa.BackendInfo{Backend: "sim", Network: "regtest", Simulated: true, Synced: true}
}

// CreateInvoice makes a BOLT11 regtest invoice for amount (zero: any
// amount) with memo as its description, valid for expiry (zero:
// DefaultExpiry), rounded up to whole seconds. Its payment hash is the
// SHA-256 of a preimage derived from the node's key and the invoice's
// random payment address (preimageFor).
func (n *Node) CreateInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	if err := ctx.Err(); err != nil {
		return kassa.LightningInvoice{}, err
	}
	if amount < 0 || amount > maxMSat {
		return kassa.LightningInvoice{}, fmt.Errorf("create invoice for %d msat: %w", amount, ErrBadAmount)
	}
	if expiry < 0 {
		return kassa.LightningInvoice{}, fmt.Errorf("create invoice expiring in %s: %w", expiry, ErrBadExpiry)
	}
	if expiry == 0 {
		expiry = DefaultExpiry
	}
	expiry = (expiry + time.Second - 1).Truncate(time.Second)

	var paymentAddr [32]byte
	if _, err := rand.Read(paymentAddr[:]); err != nil {
		return kassa.LightningInvoice{}, fmt.Errorf("create invoice: %w", err)
	}
	preimage := n.preimageFor(&paymentAddr)
	hash := sha256.Sum256(preimage[:])
	// BOLT11 timestamps are whole seconds; expiry counts from there.
	created := time.Unix(n.clock.Now().Unix(), 0)

	description, cltv := cleanMemo(memo), uint64(FinalCLTVDelta)
	inv := &bolt11.Invoice{
		Net: Params, Timestamp: created, PaymentHash: &hash, PaymentAddr: &paymentAddr,
		Description: &description, ExpiryTime: &expiry, FinalCLTV: &cltv,
		// var_onion_optin and payment_secret required, basic_mpp optional.
		Features: []int{8, 14, 17},
	}
	if amount > 0 {
		msat := uint64(amount)
		inv.MilliSat = &msat
	}
	request, err := inv.Encode(n.key)
	if err != nil {
		return kassa.LightningInvoice{}, fmt.Errorf("encode invoice: %w", err)
	}

	hashHex := hex.EncodeToString(hash[:])
	if n.closed != nil {
		rec := &invoiceRecord{AmountMSat: amount, ExpiresAt: created.Add(expiry), Preimage: hex.EncodeToString(preimage[:])}
		if err := n.save(ctx, hashHex, rec); err != nil {
			return kassa.LightningInvoice{}, fmt.Errorf("create invoice: %w", err)
		}
		n.sweepExpired(ctx)
	}
	return kassa.LightningInvoice{PaymentRequest: request, PaymentHash: hashHex}, nil
}

// cleanMemo makes memo fit a BOLT11 description: valid UTF-8 of at most
// MaxMemoBytes bytes, cut at a character boundary.
func cleanMemo(memo string) string {
	memo = strings.ToValidUTF8(memo, "\uFFFD")
	if len(memo) <= MaxMemoBytes {
		return memo
	}
	cut := MaxMemoBytes
	for cut > 0 && !utf8.RuneStart(memo[cut]) {
		cut--
	}
	return memo[:cut]
}

// Pay pays paymentRequest, an invoice of this node, with amount (zero:
// the invoice's amount), settles it, reports the settlement and returns
// its payment hash. It refuses an unknown, expired or already paid
// invoice, and an amount below the invoice's or above twice it.
func (n *Node) Pay(ctx context.Context, paymentRequest string, amount kassa.MSat) (hash string, err error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if amount < 0 || amount > maxMSat {
		return "", fmt.Errorf("pay %d msat: %w", amount, ErrBadAmount)
	}
	decoded, err := bolt11.Decode(strings.TrimSpace(paymentRequest), Params)
	if err != nil {
		return "", refuse(ErrBadPaymentRequest, "%s (%v)", ErrBadPaymentRequest.Message, err)
	}
	hash = hex.EncodeToString(decoded.PaymentHash[:])
	if decoded.Destination == nil || !decoded.Destination.IsEqual(n.key.PubKey()) {
		return "", fmt.Errorf("pay %s: %w", hash, ErrUnknownInvoice)
	}

	n.mu.Lock()
	inv, err := n.load(ctx, hash)
	if err != nil {
		n.mu.Unlock()
		return "", fmt.Errorf("pay %s: %w", hash, err)
	}
	if inv == nil {
		inv = n.derived(decoded)
	}
	now := n.clock.Now()
	switch {
	case inv == nil:
		err = fmt.Errorf("pay %s: %w", hash, ErrUnknownInvoice)
	case inv.Settled:
		err = fmt.Errorf("pay %s: %w", hash, ErrInvoiceAlreadyPaid)
	case inv.Cancelled:
		err = fmt.Errorf("pay %s: %w", hash, ErrInvoiceCancelled)
	case !now.Before(inv.ExpiresAt):
		err = refuse(ErrInvoiceExpired, "the Lightning invoice expired at %s", inv.ExpiresAt.UTC().Format(time.RFC3339))
	case amount == 0 && inv.AmountMSat == 0:
		err = ErrAmountRequired
	case amount == 0:
		amount = inv.AmountMSat
	case amount < inv.AmountMSat:
		err = refuse(ErrAmountTooLow, "the payment of %d msat is less than the %d msat the Lightning invoice asks", amount, inv.AmountMSat)
	case inv.AmountMSat > 0 && amount > 2*inv.AmountMSat:
		err = refuse(ErrAmountTooHigh, "the payment of %d msat is more than twice the %d msat the Lightning invoice asks", amount, inv.AmountMSat)
	}
	if err != nil {
		n.mu.Unlock()
		return "", err
	}
	inv.Settled = true
	if err := n.save(ctx, hash, inv); err != nil {
		n.mu.Unlock()
		return "", fmt.Errorf("pay %s: %w", hash, err)
	}
	n.closeInvoice(ctx, hash, inv, closedSettled)
	ev := kassa.LightningEvent{PaymentHash: hash, AmountMSat: amount, SettledAt: now}
	if err := n.settles.Push(ctx, ev); err != nil {
		n.mu.Unlock()
		return hash, fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	n.mu.Unlock()

	if err := n.deliver(ctx); err != nil {
		return hash, err
	}
	return hash, nil
}

// deliver hands the pending settlements to the handler
// (simstore.Queue). It returns ErrNotRecorded when the handler refused
// one.
func (n *Node) deliver(ctx context.Context) error {
	if err := n.settles.Deliver(ctx); err != nil {
		return fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return nil
}

// CancelInvoice cancels the open invoice with paymentHash, so that Pay
// refuses it. A settled or cancelled invoice is left as it is, and so is
// an unknown one on a node made by New. A node made by Open cannot tell
// an open invoice without a record from an unknown hash: it records
// either as cancelled, which no payment of an unknown hash can notice.
func (n *Node) CancelInvoice(ctx context.Context, paymentHash string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	hash := strings.ToLower(paymentHash)
	n.mu.Lock()
	defer n.mu.Unlock()
	inv, err := n.load(ctx, hash)
	if err == nil && inv == nil && n.closed == nil {
		inv = &invoiceRecord{}
	}
	if err != nil || inv == nil || inv.Settled || inv.Cancelled {
		return err
	}
	inv.Cancelled = true
	if err := n.save(ctx, hash, inv); err != nil {
		return err
	}
	n.closeInvoice(ctx, hash, inv, closedCancelled)
	return nil
}

// Preimage returns the preimage of the invoice with payment hash hash
// once it is paid: the proof of payment a payer receives.
func (n *Node) Preimage(hash string) (string, bool) {
	n.mu.Lock()
	inv, err := n.load(context.Background(), strings.ToLower(hash))
	n.mu.Unlock()
	if err != nil || inv == nil || !inv.Settled {
		return "", false
	}
	return inv.Preimage, true
}

// refusal is a refusal that tells its caller the details of the case and
// still matches its sentinel with errors.Is.
type refusal struct {
	detail   *kassa.Error
	sentinel *kassa.Error
}

// refuse returns sentinel's refusal with a message of its own.
func refuse(sentinel *kassa.Error, format string, args ...any) error {
	return &refusal{detail: kassa.Errorf(sentinel.Code, format, args...), sentinel: sentinel}
}

func (r *refusal) Error() string   { return r.detail.Error() }
func (r *refusal) Unwrap() []error { return []error{r.detail, r.sentinel} }
