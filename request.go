package kassa

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// A create that a caller may send more than once (a cluster node that
// forwards it retries on the store's new node after a node loss; a
// client retries with its Idempotency-Key after a 503) carries a request
// id. The create records the id in its own batch (RequestBatch), so
// that the id is durable exactly when what it created is; a repeat, on
// any node and after any restart, finds the record (RequestReader) and
// answers what the first created instead of creating again
// (docs/decisions.md, "One create per request").

// Request names a create: ID is unique per store; Fingerprint, when
// set, is a hash of what the caller asked for, so that an id reused for
// a different request is refused rather than answered.
type Request struct {
	ID          string
	Fingerprint string
}

type requestKey struct{}

// WithRequest returns ctx carrying r: the creates run in ctx record r.
func WithRequest(ctx context.Context, r Request) context.Context {
	return context.WithValue(ctx, requestKey{}, r)
}

// RequestFrom returns the request ctx carries, zero when none.
func RequestFrom(ctx context.Context) Request {
	r, _ := ctx.Value(requestKey{}).(Request)
	return r
}

// IdempotencyRequestID is the request id of a client's Idempotency-Key:
// a fixed-length hash, whatever characters the key has.
func IdempotencyRequestID(key string) string {
	sum := sha256.Sum256([]byte(key))
	return "idem_" + hex.EncodeToString(sum[:16])
}

// RequestRecord is what a create recorded under its request id: the
// kind of thing it created and its id.
type RequestRecord struct {
	StoreID     string `json:"storeId"`
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	ResultID    string `json:"resultId"`
	Fingerprint string `json:"fingerprint,omitempty"`
	// At is when the record was written; the store stamps it with its
	// clock when it is zero. A record written without it (by an older
	// build) counts from the moment the store first saw it so.
	At time.Time `json:"at,omitzero"`
}

// RequestWindow is how long a request record is kept: a repeat of a
// create within it answers what the first created; the stores' sweeper
// (SweepExpired) deletes the records older than it. It is twice the 24 h
// an Idempotency-Key's answer is kept, so that a client that retries
// within that day always finds the record behind the answer, and a
// cluster node's retry after a node loss (seconds) is far inside it.
const RequestWindow = 48 * time.Hour

// Expires reports whether r is deleted once it is older than
// RequestWindow. A pool address's record is not: it is what keeps the
// address from being handed out twice, for as long as the address is.
func (r RequestRecord) Expires() bool { return r.Kind != RequestPoolAddress }

// Kinds of RequestRecord.
const (
	RequestInvoice        = "invoice"
	RequestTopUp          = "topup"
	RequestWebhook        = "webhook"
	RequestAPIKey         = "apikey"
	RequestPaymentRequest = "paymentrequest"
	RequestStore          = "store"
	// RequestPoolAddress records that an address of lnd's address pool
	// was handed out (lightning/lnd.AddressPool): ID is the address,
	// StoreID the pool's name, ResultID the invoice.
	RequestPoolAddress = "pooladdress"
)

// RequestBatch is a Batch that records request ids. Commit fails with
// ErrRequestDone when the batch's request id is already recorded (two
// activations ran one request at once): nothing of the batch is written.
type RequestBatch interface {
	PutRequest(r RequestRecord)
}

// RequestReader reads request records: NotFound when the store has no
// record of id.
type RequestReader interface {
	Request(ctx context.Context, storeID, id string) (*RequestRecord, error)
}

// ErrRequestDone is the error of a commit whose request id another
// commit recorded first: the caller answers that commit's result.
var ErrRequestDone = Errorf(Conflict, "this request was already done")

// ErrNotMember is the error of a commit by a cluster node that lost its
// membership (its stores are other nodes' now): nothing was written. It
// has the code Unavailable: the caller may try again, and reaches a
// member then.
var ErrNotMember = Errorf(Unavailable, "this node is no longer a member of the cluster: try again")
