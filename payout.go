package kassa

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa/lightning/bolt11"
)

// PayoutState is the state of a payout. The numbers are on disk.
type PayoutState uint8

// Payout states. A payout moves only forward: AwaitingApproval, then
// Approved (the store's balance is debited), then InProgress (a payment
// was recorded and may have been sent), then Completed or Failed; or
// Cancelled before anything was sent.
const (
	PayoutAwaitingApproval PayoutState = 1
	PayoutApproved         PayoutState = 2
	PayoutInProgress       PayoutState = 3
	PayoutCompleted        PayoutState = 4
	PayoutFailed           PayoutState = 5
	PayoutCancelled        PayoutState = 6
)

func (s PayoutState) String() string {
	switch s {
	case PayoutAwaitingApproval:
		return "AwaitingApproval"
	case PayoutApproved:
		return "Approved"
	case PayoutInProgress:
		return "InProgress"
	case PayoutCompleted:
		return "Completed"
	case PayoutFailed:
		return "Failed"
	case PayoutCancelled:
		return "Cancelled"
	}
	return "Unknown"
}

// Final reports whether the payout changes no more.
func (s PayoutState) Final() bool {
	return s == PayoutCompleted || s == PayoutFailed || s == PayoutCancelled
}

// DestinationKind says how a payout is paid. The numbers are on disk.
type DestinationKind uint8

// Destination kinds.
const (
	// DestinationBOLT11: a Lightning invoice for the exact amount.
	DestinationBOLT11 DestinationKind = 1
	// DestinationLNURL: a Lightning address (LUD-16) or an lnurl1
	// string (LUD-01) that is asked for an invoice of the amount.
	DestinationLNURL DestinationKind = 2
	// DestinationOnchain: a bitcoin address of the service's network.
	DestinationOnchain DestinationKind = 3
)

// Destination is where a payout is paid, as claimed and checked.
type Destination struct {
	Kind DestinationKind `json:"kind"`
	// Address is the invoice, Lightning address, lnurl or bitcoin
	// address, as given (trimmed; a "lightning:" prefix taken off).
	Address string `json:"address"`
	// Amount, PaymentHash and ExpiresAt are a BOLT11 invoice's.
	Amount      MSat      `json:"amount,omitempty"`
	PaymentHash string    `json:"paymentHash,omitempty"`
	ExpiresAt   time.Time `json:"expiresAt,omitzero"`
}

// MaxDestination bounds the length of a destination (a BOLT11 invoice
// with route hints is the longest).
const MaxDestination = 7089

// ParseDestination reads a destination for a payout on network net at
// now. An invoice or address of another network, an invoice without an
// amount or expired, and anything unreadable are Invalid.
func ParseDestination(raw string, net *chaincfg.Params, now time.Time) (Destination, error) {
	bad := func(format string, args ...any) (Destination, error) {
		return Destination{}, InvalidFields([]FieldError{{Field: "destination", Message: fmt.Sprintf(format, args...)}})
	}
	s := strings.TrimSpace(raw)
	if len(s) > MaxDestination {
		return bad("is too long")
	}
	if p, ok := strings.CutPrefix(strings.ToLower(s), "lightning:"); ok {
		s = s[len(s)-len(p):]
	}
	if s == "" {
		return bad("is required: a Lightning invoice, a Lightning address or a bitcoin address")
	}
	lower := strings.ToLower(s)
	switch {
	case strings.HasPrefix(lower, "lnurl1"):
		if hrp, _, err := bech32.DecodeNoLimit(lower); err != nil || hrp != "lnurl" {
			return bad("is not a valid lnurl")
		}
		return Destination{Kind: DestinationLNURL, Address: lower}, nil
	case strings.Contains(s, "@"):
		if msg := LightningAddressProblem(s); msg != "" {
			return bad("is not a Lightning address: %s", msg)
		}
		return Destination{Kind: DestinationLNURL, Address: lower}, nil
	case strings.HasPrefix(lower, "ln"):
		inv, err := bolt11.Decode(lower, net)
		if err != nil {
			if isOtherNetworkInvoice(lower, net) {
				return bad("is a Lightning invoice of another network than this server's (%s)", net.Name)
			}
			return bad("is not a valid Lightning invoice: %v", err)
		}
		if inv.MilliSat == nil || *inv.MilliSat == 0 {
			return bad("is a Lightning invoice without an amount: ask for an invoice of the amount to pay")
		}
		if *inv.MilliSat%1000 != 0 {
			return bad("is a Lightning invoice for a fraction of a satoshi")
		}
		expires := inv.Timestamp.Add(inv.Expiry())
		if !now.Before(expires) {
			return bad("is an expired Lightning invoice")
		}
		if inv.PaymentHash == nil {
			return bad("is a Lightning invoice without a payment hash")
		}
		return Destination{Kind: DestinationBOLT11, Address: lower, Amount: MSat(*inv.MilliSat),
			PaymentHash: hex.EncodeToString(inv.PaymentHash[:]), ExpiresAt: expires}, nil
	}
	addr, err := btcutil.DecodeAddress(s, net)
	if err != nil || !addr.IsForNet(net) {
		for _, other := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params, &chaincfg.RegressionNetParams, &chaincfg.SigNetParams} {
			if other.Name == net.Name {
				continue
			}
			if a, err := btcutil.DecodeAddress(s, other); err == nil && a.IsForNet(other) {
				return bad("is a bitcoin address of another network than this server's (%s)", net.Name)
			}
		}
		return bad("is not a Lightning invoice, a Lightning address or a bitcoin address")
	}
	return Destination{Kind: DestinationOnchain, Address: addr.EncodeAddress()}, nil
}

// isOtherNetworkInvoice reports whether s decodes as an invoice of a
// network other than net.
func isOtherNetworkInvoice(s string, net *chaincfg.Params) bool {
	for _, other := range []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params, &chaincfg.RegressionNetParams, &chaincfg.SigNetParams} {
		if other.Name == net.Name {
			continue
		}
		if _, err := bolt11.Decode(s, other); err == nil {
			return true
		}
	}
	return false
}

// Payout is a claim on a pull payment, paid to one destination.
type Payout struct {
	ID            string      `json:"id"`
	StoreID       string      `json:"storeId"`
	PullPaymentID string      `json:"pullPaymentId"`
	InvoiceID     string      `json:"invoiceId,omitempty"`
	Destination   Destination `json:"destination"`
	State         PayoutState `json:"state"`
	// Currency and Claimed are the claim in the pull payment's unit.
	Currency Currency        `json:"currency"`
	Claimed  decimal.Decimal `json:"claimed"`
	// Amount is what the payout pays, in satoshis: fixed at the claim
	// for a pull payment in SATS or a BOLT11 invoice, else at approval at
	// Rate (the price of one bitcoin in Currency then).
	Amount Sats            `json:"amount"`
	Rate   decimal.Decimal `json:"rate,omitzero"`
	// FeeLimit is the most the payout may spend on network fees; the
	// approval debits Amount plus it, and the payment's success gives
	// back what it did not spend.
	FeeLimit Sats `json:"feeLimit,omitempty"`
	// Debited is what the approval took from the store's balance and is
	// given back if the payout is not paid by Kassa (Failed, Cancelled,
	// marked paid); zero once paid or given back.
	Debited Sats `json:"debited,omitempty"`
	// Attempt: the payment recorded before it is sent. For Lightning,
	// the invoice paid and its payment hash; for on-chain, the signed
	// transaction and its txid. After a restart, an attempt's outcome is
	// looked up before anything else is sent.
	PaymentRequest string `json:"paymentRequest,omitempty"`
	PaymentHash    string `json:"paymentHash,omitempty"`
	RawTx          string `json:"rawTx,omitempty"`
	TxID           string `json:"txid,omitempty"`
	// Proof of a Completed payout: the preimage (Lightning) and the
	// network fee it cost (on-chain: the recorded transaction's, known
	// from the attempt).
	Preimage   string `json:"preimage,omitempty"`
	NetworkFee Sats   `json:"networkFee,omitempty"`
	// MarkedPaid: the merchant paid it outside Kassa.
	MarkedPaid bool      `json:"markedPaid,omitempty"`
	LastError  string    `json:"lastError,omitempty"`
	CreatedAt  time.Time `json:"createdAt"`
	UpdatedAt  time.Time `json:"updatedAt"`
}

// ClaimPayout claims amount (in pp's currency; zero takes a BOLT11
// invoice's amount, or what is left) of pp for dest at now, rate being
// the price of one bitcoin in pp's currency now (needed only for a
// BOLT11 invoice on a fiat pull payment). It returns the new payout;
// pp's Claimed grows by its claim.
func ClaimPayout(id string, pp *PullPayment, dest Destination, amount, rate decimal.Decimal, now time.Time) (*Payout, error) {
	p := &Payout{ID: id, StoreID: pp.StoreID, PullPaymentID: pp.ID, InvoiceID: pp.InvoiceID, Destination: dest,
		State: PayoutAwaitingApproval, Currency: pp.Currency, CreatedAt: now, UpdatedAt: now}
	if dest.Kind == DestinationBOLT11 {
		p.Amount = dest.Amount.Sats()
		invoice := decimal.NewFromInt(int64(p.Amount))
		if pp.Currency != SATS {
			if !rate.IsPositive() {
				return nil, Errorf(Unavailable, "no exchange rate for %s to value the Lightning invoice", pp.Currency)
			}
			invoice = FiatValue(p.Amount, pp.Currency, rate)
			p.Rate = rate
		}
		if amount.IsPositive() && !amount.Equal(invoice) {
			return nil, InvalidFields([]FieldError{{Field: "amount", Message: "differs from the Lightning invoice's amount"}})
		}
		amount = invoice
	} else if !amount.IsPositive() {
		amount = pp.Left()
	}
	amount = amount.RoundDown(unitDecimals(pp.Currency))
	if err := pp.Claim(amount, now); err != nil {
		return nil, err
	}
	p.Claimed = amount
	if pp.Currency == SATS {
		p.Amount = Sats(amount.IntPart())
	}
	return p, nil
}

// PayoutInput is something that happens to a payout. Inputs carry their
// time, so that the same input on the same state gives the same result.
type PayoutInput interface{ payoutInputTime() time.Time }

// PayoutApprove is the merchant's approval. Rate is the price of one
// bitcoin in the payout's currency now (ignored for SATS); FeeLimit the
// most the payment may spend on fees.
type PayoutApprove struct {
	Rate     decimal.Decimal
	FeeLimit Sats
	At       time.Time
}

// PayoutAttempt records the payment about to be sent: a Lightning
// invoice and its hash, or a signed transaction, its txid and the
// network fee it pays (Fee, at most the payout's fee limit).
type PayoutAttempt struct {
	PaymentRequest, PaymentHash string
	RawTx, TxID                 string
	Fee                         Sats
	At                          time.Time
}

// OnchainTx is a signed transaction of the service's wallet that pays an
// on-chain payout, funded but not published: Raw (hex) and TxID are
// recorded on the payout before it is published (docs/decisions.md,
// "Payouts through lnd"). Fee is what its inputs pay beyond its
// outputs; Locks name its reserved inputs, which the wallet gives back
// when the transaction is not recorded.
type OnchainTx struct {
	Raw, TxID string
	Fee       Sats
	Locks     []string
}

// PayoutSucceeded says that the attempt's payment arrived.
type PayoutSucceeded struct {
	Preimage   string
	NetworkFee Sats
	At         time.Time
}

// PayoutPaymentFailed says that the attempt's payment failed for good
// (or that none could be made) and nothing was paid.
type PayoutPaymentFailed struct {
	Reason string
	At     time.Time
}

// PayoutCancel is the merchant's cancellation.
type PayoutCancel struct{ At time.Time }

// PayoutMarkPaid says that the merchant paid the payout outside Kassa.
type PayoutMarkPaid struct{ At time.Time }

func (i PayoutApprove) payoutInputTime() time.Time       { return i.At }
func (i PayoutAttempt) payoutInputTime() time.Time       { return i.At }
func (i PayoutSucceeded) payoutInputTime() time.Time     { return i.At }
func (i PayoutPaymentFailed) payoutInputTime() time.Time { return i.At }
func (i PayoutCancel) payoutInputTime() time.Time        { return i.At }
func (i PayoutMarkPaid) payoutInputTime() time.Time      { return i.At }

// PayoutEffect is something to do with a payout's change, in the batch
// that records it.
type PayoutEffect interface{ payoutEffect() }

// DebitBalance takes Amount from the store's prepaid balance (a refund
// line).
type DebitBalance struct{ Amount Sats }

// CreditBalance gives Amount back to the store's prepaid balance (a
// refund reversal line).
type CreditBalance struct{ Amount Sats }

// ChargeNetworkFee takes a payout's network fee from the balance (a
// network fee line): its fee limit at approval, and what the payment
// cost beyond it, if anything.
type ChargeNetworkFee struct{ Amount Sats }

// ReturnUnusedFee gives back the part of the fee limit that the payment
// did not spend (a refund returned line).
type ReturnUnusedFee struct{ Amount Sats }

// ReleaseClaim gives the payout's claim back to its pull payment.
type ReleaseClaim struct{ Amount decimal.Decimal }

// SendPayout says that the payout waits to be paid.
type SendPayout struct{}

func (DebitBalance) payoutEffect()     {}
func (CreditBalance) payoutEffect()    {}
func (ChargeNetworkFee) payoutEffect() {}
func (ReturnUnusedFee) payoutEffect()  {}
func (ReleaseClaim) payoutEffect()     {}
func (SendPayout) payoutEffect()       {}

// Payout transition refusals.
var (
	ErrPayoutNotAwaitingApproval = Errorf(Conflict, "the payout is not awaiting approval")
	ErrPayoutSent                = Errorf(Conflict, "the payout's payment may have been sent: it can no longer be cancelled or marked paid")
	ErrPayoutFinal               = Errorf(Conflict, "the payout is already completed, failed or cancelled")
	ErrPayoutNotApproved         = Errorf(Conflict, "the payout is not approved")
	ErrPayoutNoAttempt           = Errorf(Conflict, "the payout has no payment under way")
)

// fiat reports whether p's amount in satoshis is set at its approval:
// a claim in a currency other than SATS, to any destination but a
// BOLT11 invoice (whose amount is its own).
func (p Payout) fiat() bool {
	return p.Currency != SATS && p.Destination.Kind != DestinationBOLT11
}

// SatsAt is p's amount in satoshis approved at rate (the price of one
// bitcoin in its currency): its claim converted at rate, rounded up,
// when it is in fiat (fiat), else its Amount. Every approval (the merchant's,
// the automatic one, the node's funds check) values a payout by it.
func (p Payout) SatsAt(rate decimal.Decimal) (Sats, error) {
	if !p.fiat() {
		return p.Amount, nil
	}
	return ToSats(p.Claimed, p.Currency, rate)
}

// Apply returns the payout after in and the effects to record with it.
// An error leaves the payout unchanged.
func (p Payout) Apply(in PayoutInput) (Payout, []PayoutEffect, error) {
	at := in.payoutInputTime()
	var effects []PayoutEffect
	switch in := in.(type) {
	case PayoutApprove:
		if p.State != PayoutAwaitingApproval {
			return p, nil, ErrPayoutNotAwaitingApproval
		}
		if p.fiat() {
			amount, err := p.SatsAt(in.Rate)
			if err != nil {
				return p, nil, err
			}
			p.Amount, p.Rate = amount, in.Rate
		}
		if p.Amount <= 0 {
			return p, nil, Errorf(Invalid, "the payout's amount is zero")
		}
		p.FeeLimit = max(in.FeeLimit, 0)
		p.State, p.Debited = PayoutApproved, p.Amount+p.FeeLimit
		effects = append(effects, DebitBalance{Amount: p.Amount})
		if p.FeeLimit > 0 {
			effects = append(effects, ChargeNetworkFee{Amount: p.FeeLimit})
		}
		effects = append(effects, SendPayout{})
	case PayoutAttempt:
		if p.State != PayoutApproved {
			return p, nil, ErrPayoutNotApproved
		}
		onchain := p.Destination.Kind == DestinationOnchain
		if onchain != (in.RawTx != "") || onchain != (in.TxID != "") {
			return p, nil, Errorf(Invalid, "an on-chain payout is paid by a transaction, a Lightning one by an invoice")
		}
		if in.Fee < 0 || in.Fee > p.FeeLimit {
			return p, nil, Errorf(Invalid, "the transaction's network fee of %d sat is beyond the payout's fee limit of %d sat", in.Fee, p.FeeLimit)
		}
		p.State = PayoutInProgress
		p.PaymentRequest, p.PaymentHash, p.RawTx, p.TxID = in.PaymentRequest, in.PaymentHash, in.RawTx, in.TxID
		// A transaction's fee is known before it is sent; a Lightning
		// payment's once it arrived.
		p.NetworkFee = in.Fee
	case PayoutSucceeded:
		if p.State != PayoutInProgress {
			return p, nil, ErrPayoutNoAttempt
		}
		p.State, p.Preimage, p.NetworkFee, p.LastError = PayoutCompleted, in.Preimage, max(in.NetworkFee, 0), ""
		// The fee limit was debited at approval: what the payment did
		// not spend of it goes back, and what it spent beyond it (a
		// payer that overshot) is charged.
		switch {
		case p.NetworkFee < p.FeeLimit:
			effects = append(effects, ReturnUnusedFee{Amount: p.FeeLimit - p.NetworkFee})
		case p.NetworkFee > p.FeeLimit:
			effects = append(effects, ChargeNetworkFee{Amount: p.NetworkFee - p.FeeLimit})
		}
		p.Debited = 0
	case PayoutPaymentFailed:
		if p.State != PayoutApproved && p.State != PayoutInProgress {
			return p, nil, ErrPayoutNotApproved
		}
		p.State, p.LastError = PayoutFailed, in.Reason
		effects = p.giveBack(effects)
	case PayoutCancel:
		if err := p.stoppable(); err != nil {
			return p, nil, err
		}
		p.State = PayoutCancelled
		effects = p.giveBack(effects)
	case PayoutMarkPaid:
		if err := p.stoppable(); err != nil {
			return p, nil, err
		}
		p.State, p.MarkedPaid = PayoutCompleted, true
		if p.Debited > 0 {
			effects = append(effects, CreditBalance{Amount: p.Debited})
			p.Debited = 0
		}
	default:
		return p, nil, errors.New("unknown payout input")
	}
	p.UpdatedAt = at
	return p, effects, nil
}

// stoppable says why the payout cannot be cancelled or marked paid, or
// nil: only one that nothing was sent for can.
func (p *Payout) stoppable() error {
	switch p.State {
	case PayoutAwaitingApproval, PayoutApproved:
		return nil
	case PayoutInProgress:
		return ErrPayoutSent
	}
	return ErrPayoutFinal
}

// giveBack appends the effects of a payout that paid nothing: its debit
// back on the balance and its claim back on the pull payment.
func (p *Payout) giveBack(effects []PayoutEffect) []PayoutEffect {
	if p.Debited > 0 {
		effects = append(effects, CreditBalance{Amount: p.Debited})
		p.Debited = 0
	}
	return append(effects, ReleaseClaim{Amount: p.Claimed})
}

// PayoutTransactions returns the ledger lines of effects of payout p
// (after them) of store st, at.
func PayoutTransactions(st *Store, p *Payout, effects []PayoutEffect, rate decimal.Decimal, at time.Time) []Transaction {
	var lines []Transaction
	line := func(t TransactionType, amount Sats, comment string) {
		lines = append(lines, Transaction{
			StoreID: st.ID, InvoiceID: p.InvoiceID, Type: t, Status: TransactionSettled,
			Amount: amount, FullAmount: p.Amount,
			AmountInPreferredCurrency: FiatValue(amount, st.Currency, rate),
			Currency:                  st.Currency, Rate: rate,
			Hash: p.PaymentHash + p.TxID, Comment: comment + " " + p.ID, CreatedAt: at,
		})
	}
	for _, e := range effects {
		switch e := e.(type) {
		case DebitBalance:
			line(TransactionRefund, e.Amount, "payout")
		case CreditBalance:
			line(TransactionRefundReturned, e.Amount, "payout not paid by Kassa:")
		case ChargeNetworkFee:
			line(TransactionNetworkFee, e.Amount, "network fee (limit) of payout")
		case ReturnUnusedFee:
			line(TransactionRefundReturned, e.Amount, "unused network fee limit of payout")
		}
	}
	return lines
}

// PayoutBatch is what a Batch offers for refunds, beside kassa.Batch: a
// payout's change, its pull payment and its ledger lines
// (PutTransaction) commit together.
type PayoutBatch interface {
	PutPullPayment(pp *PullPayment)
	// PutPayout writes a payout and keeps the index of those to send
	// (Approved or InProgress).
	PutPayout(p *Payout)
}

// PayoutStore reads pull payments and payouts.
type PayoutStore interface {
	// PullPayment returns a pull payment, or NotFound.
	PullPayment(ctx context.Context, id string) (*PullPayment, error)
	// PullPayments calls fn for each pull payment of the store, newest
	// first.
	PullPayments(ctx context.Context, storeID string, fn func(*PullPayment) error) error
	// Payout returns a payout, or NotFound.
	Payout(ctx context.Context, id string) (*Payout, error)
	// Payouts calls fn for each payout of the store, newest first.
	Payouts(ctx context.Context, storeID string, fn func(*Payout) error) error
	// PayoutsToSend calls fn for each payout of any store that is
	// Approved or InProgress: what the sender pays, or whose attempt it
	// looks up, after a restart.
	PayoutsToSend(ctx context.Context, fn func(*Payout) error) error
}

// RefundChange is what a refund command writes in one durable batch:
// the pull payment and the payout it made or changed (nil: unchanged)
// and the ledger lines of the payout's effects (PayoutTransactions),
// which move the store's prepaid balance.
type RefundChange struct {
	PullPayment *PullPayment
	Payout      *Payout
	Lines       []Transaction
	// Events are the payout's webhook events (PayoutEvents), whose
	// deliveries commit in the same batch.
	Events []EventType
	// Repeat: the command had already run (a retried call), and the
	// change is what it made; nothing is written again.
	Repeat bool
}

// RefundLedger runs the changes of a store's refunds one at a time,
// together with the store's other balance changes (top-ups, the credit
// check of new invoices): where the store's writes are serialized.
type RefundLedger interface {
	// ChangeRefunds has the store decide cmd (RefundCommand.Decide)
	// with its available balance (the prepaid balance less the fees
	// reserved for its open invoices) in its turn, on the node that
	// runs it, and commits the change as one durable batch before it
	// returns it, lines with their IDs. A refusal writes nothing.
	ChangeRefunds(ctx context.Context, storeID string, cmd *RefundCommand) (*RefundChange, error)
}

// RefundService runs refunds (package refund implements it).
type RefundService interface {
	CreatePullPayment(ctx context.Context, storeID string, in PullPaymentInput) (*PullPayment, error)
	RefundInvoice(ctx context.Context, storeID, invoiceID string, r RefundRequest) (*PullPayment, error)
	// Claim claims amount of a pull payment for destination (zero: a
	// Lightning invoice's amount, or all that is left).
	Claim(ctx context.Context, pullPaymentID, destination string, amount decimal.Decimal) (*Payout, error)
	Approve(ctx context.Context, storeID, payoutID string) (*Payout, error)
	Cancel(ctx context.Context, storeID, payoutID string) (*Payout, error)
	MarkPaid(ctx context.Context, storeID, payoutID string) (*Payout, error)
}
