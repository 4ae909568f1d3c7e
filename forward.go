package kassa

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"
)

// Forwarding sends a store's Lightning money on to its Lightning address
// (LNURL-pay): the service's node received it, the store's wallet gets
// it. A settled Lightning invoice of a store with a Lightning address
// leaves a Pending transfer line and queues it for forwarding in the
// settle's own batch; the store's forward actor takes queued transfers
// into a Forward, records the invoice it will pay (and its payment hash)
// before paying it, and settles the transfer lines once the payment
// succeeded. The rules below are pure; docs/decisions.md, "Forwarding",
// says why they are so.

// ForwardStatus is the state of a forward. The numbers are on disk.
type ForwardStatus uint8

// Forward states.
const (
	// ForwardOpen: the forward holds transfers and is being paid (or will
	// be, at NextTry). Its PaymentHash, when set, names an attempt that
	// may have been sent: its outcome must be known before another
	// attempt.
	ForwardOpen ForwardStatus = 1
	// ForwardSucceeded: the merchant's invoice was paid.
	ForwardSucceeded ForwardStatus = 2
)

func (s ForwardStatus) String() string {
	switch s {
	case ForwardOpen:
		return "Open"
	case ForwardSucceeded:
		return "Succeeded"
	}
	return "Unknown"
}

// QueuedTransfer is a Pending transfer line waiting to be forwarded.
type QueuedTransfer struct {
	TransactionID int64  `json:"transactionId"`
	StoreID       string `json:"storeId"`
	InvoiceID     string `json:"invoiceId"`
	// Amount is what the customer paid to the service's node, in
	// millisatoshis: what is forwarded.
	Amount MSat `json:"amount"`
	// Direct is what the customer paid to the store's own wallet for the
	// same line (on-chain to its xpub): not forwarded, counted in the
	// line's amount.
	Direct  Sats   `json:"direct,omitempty"`
	Comment string `json:"comment,omitempty"`
}

// Forward is one payment to a store's Lightning address, for one or more
// transfers.
type Forward struct {
	ID      string        `json:"id"`
	StoreID string        `json:"storeId"`
	Status  ForwardStatus `json:"status"`
	// Address is the Lightning address paid.
	Address   string           `json:"address"`
	Transfers []QueuedTransfer `json:"transfers"`
	// Amount is the sum of the transfers, in millisatoshis.
	Amount MSat `json:"amount"`
	// Parts are the payments already made, in order: a forward above
	// the address's maxSendable is paid in several.
	Parts []ForwardPart `json:"parts,omitempty"`
	// PaymentRequest, PaymentHash and InvoiceAmount describe the current
	// attempt: the merchant's invoice, recorded before it is paid.
	// PartAmount is the share of Amount it pays (its invoice amount plus
	// its routing fee); zero means all that is left.
	PaymentRequest string `json:"paymentRequest,omitempty"`
	PaymentHash    string `json:"paymentHash,omitempty"`
	InvoiceAmount  MSat   `json:"invoiceAmount,omitempty"`
	FeeLimit       MSat   `json:"feeLimit,omitempty"`
	PartAmount     MSat   `json:"partAmount,omitempty"`
	// RoutingFee is what the successful payments cost in fees.
	RoutingFee MSat `json:"routingFee,omitempty"`
	// FailedHashes are the payment hashes of attempts known to have
	// failed.
	FailedHashes []string  `json:"failedHashes,omitempty"`
	Attempts     int       `json:"attempts"`
	LastError    string    `json:"lastError,omitempty"`
	NextTry      time.Time `json:"nextTry"`
	CreatedAt    time.Time `json:"createdAt"`
	UpdatedAt    time.Time `json:"updatedAt"`
}

// ForwardPart is one payment of a forward that succeeded.
type ForwardPart struct {
	PaymentHash string `json:"paymentHash"`
	// Amount is the share of the forward it paid; InvoiceAmount reached
	// the store's wallet.
	Amount        MSat `json:"amount"`
	InvoiceAmount MSat `json:"invoiceAmount"`
	RoutingFee    MSat `json:"routingFee"`
}

// Forwarding defaults.
var (
	// DefaultForwardFeePercent is the routing fee a forward may spend, in
	// percent of its amount.
	DefaultForwardFeePercent = decimal.NewFromInt(1)
	// DefaultForwardFeeCap caps the routing fee of one forward.
	DefaultForwardFeeCap MSat = 5_000_000 // 5,000 sat
	// ForwardRetryMin and ForwardRetryMax bound the wait after a failed
	// attempt; it doubles from the one to the other.
	ForwardRetryMin = 10 * time.Second
	ForwardRetryMax = time.Hour
)

// ForwardFeeLimit is the most a forward of amount may spend on routing:
// percent of it, rounded down to a millisatoshi, at most cap.
func ForwardFeeLimit(amount MSat, percent decimal.Decimal, cap MSat) MSat {
	if amount <= 0 || percent.Sign() <= 0 {
		return 0
	}
	limit := MSat(decimal.NewFromInt(int64(amount)).Mul(percent).Div(decHundred).IntPart())
	if cap > 0 && limit > cap {
		limit = cap
	}
	return limit
}

// PlanForward picks the queued transfers the next forward pays, oldest
// first: as many as fit under maxSendable. It returns none when their sum
// is below minSendable (they wait for more), and the first transfer alone
// when it is above maxSendable by itself (its forward is paid in parts,
// NextPart).
func PlanForward(queued []QueuedTransfer, minSendable, maxSendable MSat) ([]QueuedTransfer, MSat) {
	var take []QueuedTransfer
	var total MSat
	for _, q := range queued {
		if maxSendable > 0 && total+q.Amount > maxSendable {
			if len(take) == 0 {
				return []QueuedTransfer{q}, q.Amount
			}
			break
		}
		take = append(take, q)
		total += q.Amount
	}
	if total < minSendable || total <= 0 {
		return nil, 0
	}
	return take, total
}

// NextPart is the share of remaining the next payment of a forward pays
// to an address that takes minSendable to maxSendable: all of it when it
// fits, else an even split into as few parts as fit (rounded up, so the
// parts never exceed maxSendable and add up to remaining). Zero when no
// split fits the bounds.
func NextPart(remaining, minSendable, maxSendable MSat) MSat {
	if remaining <= 0 || remaining < minSendable {
		return 0
	}
	if maxSendable <= 0 || remaining <= maxSendable {
		return remaining
	}
	n := (remaining + maxSendable - 1) / maxSendable
	part := (remaining + n - 1) / n
	// The smallest part of the split is remaining/n rounded down.
	if remaining/n < minSendable || part > maxSendable {
		return 0
	}
	return part
}

// Remaining is what the forward still has to pay.
func (f *Forward) Remaining() MSat {
	left := f.Amount
	for _, p := range f.Parts {
		left -= p.Amount
	}
	return left
}

// ForwardRetryAfter is the wait after the n-th failed attempt (n ≥ 1).
func ForwardRetryAfter(n int) time.Duration {
	d := ForwardRetryMin
	for i := 1; i < n && d < ForwardRetryMax; i++ {
		d *= 2
	}
	return min(d, ForwardRetryMax)
}

// Attempt records the invoice about to be paid, for all that is left of
// the forward. It must be durable before the payment is sent.
func (f *Forward) Attempt(pr, hash string, invoiceAmount, feeLimit MSat, at time.Time) {
	f.PaymentRequest, f.PaymentHash = pr, hash
	f.InvoiceAmount, f.FeeLimit = invoiceAmount, feeLimit
	f.PartAmount = 0
	f.Attempts++
	f.UpdatedAt = at
}

// AttemptPart records the invoice about to be paid for part of what is
// left (NextPart). It must be durable before the payment is sent.
func (f *Forward) AttemptPart(pr, hash string, part, invoiceAmount, feeLimit MSat, at time.Time) {
	f.Attempt(pr, hash, invoiceAmount, feeLimit, at)
	if part < f.Remaining() {
		f.PartAmount = part
	}
}

// PartPaid records that the current attempt succeeded, at routingFee,
// and reports whether the forward is paid in full.
func (f *Forward) PartPaid(routingFee MSat, at time.Time) bool {
	amount := f.PartAmount
	if amount <= 0 {
		amount = f.Remaining()
	}
	f.Parts = append(f.Parts, ForwardPart{PaymentHash: f.PaymentHash, Amount: amount, InvoiceAmount: f.InvoiceAmount, RoutingFee: routingFee})
	f.RoutingFee += routingFee
	f.PaymentRequest, f.PaymentHash, f.InvoiceAmount, f.FeeLimit, f.PartAmount = "", "", 0, 0, 0
	f.LastError = ""
	f.UpdatedAt = at
	return f.Remaining() <= 0
}

// Fail records that the current attempt (if any) failed, or that none
// could be made, and when to try again.
func (f *Forward) Fail(reason string, at time.Time) {
	if f.PaymentHash != "" {
		f.FailedHashes = append(f.FailedHashes, f.PaymentHash)
	}
	f.PaymentRequest, f.PaymentHash, f.InvoiceAmount, f.FeeLimit, f.PartAmount = "", "", 0, 0, 0
	f.LastError = reason
	n := f.Attempts
	if n < 1 {
		n = 1
	}
	f.NextTry = at.Add(ForwardRetryAfter(n))
	f.UpdatedAt = at
}

// NoteDelay records that no attempt could be made (the address is
// unreachable, say) without counting a payment attempt.
func (f *Forward) NoteDelay(reason string, at time.Time) {
	f.Attempts++
	f.Fail(reason, at)
}

// Succeed records that the forward is paid in full (PartPaid said so).
func (f *Forward) Succeed(at time.Time) {
	f.Status = ForwardSucceeded
	f.LastError = ""
	f.NextTry = time.Time{}
	f.UpdatedAt = at
}

// Hashes are the payment hashes of the forward's payments, comma
// separated in the order they were made: one unless it was split.
func (f *Forward) Hashes() string {
	if len(f.Parts) == 0 {
		return f.PaymentHash
	}
	hashes := make([]string, len(f.Parts))
	for i, p := range f.Parts {
		hashes[i] = p.PaymentHash
	}
	return strings.Join(hashes, ",")
}

// SettledTransfers returns the transfer lines of a succeeded forward:
// each transfer's amount less its share of what did not reach the
// store's wallet (the forward's amount minus what its invoices were for,
// split in proportion, rounded so the shares add up), in whole satoshis,
// with the forward's payment hashes and the line's share of the routing
// fee the payments cost, rounded up to a satoshi. Amount plus
// RoutingFee never exceeds what the line's customer paid.
func (f *Forward) SettledTransfers(lines []Transaction) []Transaction {
	delivered := f.InvoiceAmount
	if len(f.Parts) > 0 {
		delivered = 0
		for _, p := range f.Parts {
			delivered += p.InvoiceAmount
		}
	}
	cost := f.Amount - delivered
	if cost < 0 {
		cost = 0
	}
	fee := min(max(f.RoutingFee, 0), cost)
	out := make([]Transaction, 0, len(lines))
	var charged, feeCharged MSat
	for i, tx := range lines {
		var amount MSat
		var direct Sats
		for _, q := range f.Transfers {
			if q.TransactionID == tx.ID {
				amount, direct = q.Amount, q.Direct
			}
		}
		share, feeShare := proportion(cost, amount, f.Amount), proportion(fee, amount, f.Amount)
		if i == len(lines)-1 {
			share, feeShare = cost-charged, fee-feeCharged
		}
		charged += share
		feeCharged += feeShare
		reached := amount - share
		tx.Status = TransactionSettled
		tx.Hash = f.Hashes()
		// What reached the wallet, rounded down to a whole satoshi, and
		// what the customer paid to it directly.
		tx.Amount = reached.Sats() + direct
		tx.RoutingFee = (feeShare + 999).Sats()
		out = append(out, tx)
	}
	return out
}

// proportion is total's share for part of whole, rounded down.
func proportion(total, part, whole MSat) MSat {
	if whole <= 0 {
		return 0
	}
	return MSat(decimal.NewFromInt(int64(total)).Mul(decimal.NewFromInt(int64(part))).Div(decimal.NewFromInt(int64(whole))).IntPart())
}

// LightningPaymentStatus is the state of an outgoing payment.
type LightningPaymentStatus uint8

// Outgoing payment states.
const (
	// PaymentUnknown: the node knows no payment with this hash: it was
	// never sent.
	PaymentUnknown LightningPaymentStatus = iota
	PaymentInFlight
	PaymentSucceeded
	PaymentFailed
)

// LightningPayment is what the node says of an outgoing payment.
type LightningPayment struct {
	PaymentHash string
	Status      LightningPaymentStatus
	FeeMSat     MSat
	// Failure says why it failed.
	Failure string
}

// Payee is where a Lightning address's invoices are paid: the node that
// signs them (its public key in hex), with the final CLTV delta and the
// route hints of the last one seen. A forward estimates its route fee to
// it before it asks the address for an invoice (docs/decisions.md,
// "Forwarding").
type Payee struct {
	Node           string      `json:"node"`
	FinalCLTVDelta uint64      `json:"finalCltvDelta,omitempty"`
	RouteHints     [][]HopHint `json:"routeHints,omitempty"`
}

// Equal reports whether p and o name the same node with the same final
// CLTV delta and route hints (an empty list as none).
func (p Payee) Equal(o Payee) bool {
	return p.Node == o.Node && p.FinalCLTVDelta == o.FinalCLTVDelta &&
		slices.EqualFunc(p.RouteHints, o.RouteHints, slices.Equal[[]HopHint])
}

// HopHint is one hop of a route hint of an invoice (BOLT11 'r' field).
type HopHint struct {
	NodeID                    string `json:"nodeId"`
	ChannelID                 uint64 `json:"channelId"`
	FeeBaseMSat               uint32 `json:"feeBaseMsat"`
	FeeProportionalMillionths uint32 `json:"feePpm"`
	CLTVExpiryDelta           uint16 `json:"cltvExpiryDelta"`
}

// PayRequest is a Lightning address's LNURL-pay answer: the bounds of
// what it accepts, in millisatoshis, and the comment length it takes.
type PayRequest struct {
	Callback       string
	MinSendable    MSat
	MaxSendable    MSat
	Metadata       string
	CommentAllowed int
}

// AddressInvoice is an invoice a Lightning address made, checked against
// what was asked.
type AddressInvoice struct {
	PaymentRequest string
	PaymentHash    string
	Amount         MSat
	// Payee is the invoice's node and route hints.
	Payee Payee
}

// ErrLightningNodeUnreachable is what a store's Lightning address resolver answers while
// the service's Lightning node cannot be asked which network it is on:
// the address is not at fault, and a store that names one is refused
// with 503 until the node is back (docs/api.md, Stores).
var ErrLightningNodeUnreachable = Errorf(Unavailable, "lnd is unreachable, so the Lightning address cannot be checked now; try again shortly")

// ForwardBatch is what a Batch offers for forwarding, beside kassa.Batch.
type ForwardBatch interface {
	// QueueTransfer queues a Pending transfer line for forwarding.
	QueueTransfer(q QueuedTransfer)
	// PutForward writes a forward and takes its transfers out of the
	// queue.
	PutForward(f *Forward)
	// RewriteTransaction writes an existing transaction line again (its
	// status, amount and hash change when its forward succeeds).
	RewriteTransaction(tx *Transaction)
}

// ForwardStore reads what forwarding stored.
type ForwardStore interface {
	// QueuedTransfers calls fn for each transfer of the store waiting to
	// be forwarded, oldest first.
	QueuedTransfers(ctx context.Context, storeID string, fn func(QueuedTransfer) error) error
	// OpenForwards calls fn for each open forward of the store.
	OpenForwards(ctx context.Context, storeID string, fn func(*Forward) error) error
	// ForwardingStores returns the stores with queued or open forwards.
	ForwardingStores(ctx context.Context) ([]string, error)
}
