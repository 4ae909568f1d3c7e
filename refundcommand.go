package kassa

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// RefundCommand is a change of a store's refunds as data: what was
// decided outside the store's turn (ids, times, rates, the parsed
// destination, the pull payment a refund of an invoice makes), which
// Decide turns into the change in the store's turn. Being data, it
// crosses the cluster to the node that runs the store (docs/
// decisions.md, "Refunds: pull payments and payouts"). Exactly
// one of Create, Claim, Approve, Cancel, MarkPaid, Attempt, Succeeded
// and Failed is set; the last six change the payout PayoutID.
type RefundCommand struct {
	// Create is a new pull payment (a refund of an invoice is one).
	Create *PullPayment
	// Claim claims a pull payment: the new payout is PayoutID.
	Claim *RefundClaim
	// PayoutID is the payout the command makes or changes.
	PayoutID string
	// Approve, Cancel and MarkPaid are the merchant's; Attempt,
	// Succeeded and Failed the sender's records of a payment.
	Approve   *RefundApproval
	Cancel    *PayoutCancel
	MarkPaid  *PayoutMarkPaid
	Attempt   *PayoutAttempt
	Succeeded *PayoutSucceeded
	Failed    *PayoutPaymentFailed
	// LineRate values the change's ledger lines in the store's
	// currency (zero: valued at zero, as a top-up without a rate).
	LineRate decimal.Decimal
}

// RefundClaim is a claim of Amount (in the pull payment's currency;
// zero: a Lightning invoice's amount, or all that is left) of pull
// payment PullPaymentID for Destination at At. Rate is the price of one
// bitcoin in the pull payment's currency at the claim (zero: none, or
// SATS), for a Lightning invoice's value and the automatic approval.
type RefundClaim struct {
	PullPaymentID string
	Destination   Destination
	Amount        decimal.Decimal
	Rate          decimal.Decimal
	At            time.Time
}

// RefundApproval is the merchant's approval of a payout at At: Rate is
// the price of one bitcoin in its currency now (zero for SATS), and
// OnchainFeeLimit the fee limit of an on-chain payout (a Lightning
// payout's is the store's: PayoutFeeLimit). NodeFunds, when
// NodeFundsKnown, is what the service's node could pay a payout of its
// kind with just before (Lightning: its channels' spendable capacity;
// on-chain: its wallet's confirmed balance), of which the payouts
// approved and not yet sent take their share first.
type RefundApproval struct {
	Rate            decimal.Decimal
	OnchainFeeLimit Sats
	NodeFunds       Sats
	NodeFundsKnown  bool
	At              time.Time
}

// RefundReader reads, in the store's turn, the pull payments and
// payouts a refund command changes.
type RefundReader interface {
	PullPayment(ctx context.Context, id string) (*PullPayment, error)
	Payout(ctx context.Context, id string) (*Payout, error)
	// PayoutsToSend calls fn for each Approved or InProgress payout of
	// any store.
	PayoutsToSend(ctx context.Context, fn func(*Payout) error) error
}

// Decide returns the change command c makes to the refunds of store st,
// whose prepaid balance available for refunds is available, reading
// its pull payments and payouts through r: in the store's turn, so that
// what it reads moves only by what the store writes. A command already
// applied (a retried create or claim, by its id) returns what it made,
// with Repeat set: nothing is written again.
func (c *RefundCommand) Decide(ctx context.Context, st *Store, available Sats, r RefundReader) (*RefundChange, error) {
	switch {
	case c.Create != nil:
		if c.Create.StoreID != st.ID {
			return nil, Errorf(Invalid, "pull payment %s of store %q in a command about store %q", c.Create.ID, c.Create.StoreID, st.ID)
		}
		if pp, err := r.PullPayment(ctx, c.Create.ID); err == nil {
			return &RefundChange{PullPayment: pp, Repeat: true}, nil
		} else if ErrorCode(err) != NotFound {
			return nil, err
		}
		return &RefundChange{PullPayment: c.Create}, nil
	case c.Claim != nil:
		return c.claim(ctx, st, available, r)
	}
	if c.PayoutID == "" {
		return nil, Errorf(Invalid, "a refund command without a payout")
	}
	p, err := r.Payout(ctx, c.PayoutID)
	if err != nil {
		return nil, err
	}
	if p.StoreID != st.ID {
		return nil, Errorf(NotFound, "payout not found")
	}
	var in PayoutInput
	if c.Approve != nil {
		in, err = approval(ctx, st, p, available, c.Approve, r)
	} else {
		in, err = c.payoutInput()
	}
	if err != nil {
		return nil, err
	}
	next, effects, err := p.Apply(in)
	if err != nil {
		return nil, err
	}
	ch := &RefundChange{Payout: &next, Events: PayoutEvents(p.State, next.State)}
	for _, e := range effects {
		if rc, ok := e.(ReleaseClaim); ok {
			pp, err := r.PullPayment(ctx, p.PullPaymentID)
			if err != nil {
				return nil, err
			}
			pp.Release(rc.Amount)
			ch.PullPayment = pp
		}
	}
	ch.Lines = PayoutTransactions(st, &next, effects, c.LineRate, next.UpdatedAt)
	return ch, nil
}

// payoutInput is the input c applies to its payout, but for an
// approval, which is decided in the store's turn (approval).
func (c *RefundCommand) payoutInput() (PayoutInput, error) {
	switch {
	case c.Cancel != nil:
		return *c.Cancel, nil
	case c.MarkPaid != nil:
		return *c.MarkPaid, nil
	case c.Attempt != nil:
		return *c.Attempt, nil
	case c.Succeeded != nil:
		return *c.Succeeded, nil
	case c.Failed != nil:
		return *c.Failed, nil
	}
	return nil, Errorf(Invalid, "a refund command that does nothing")
}

// claim makes the payout of c's claim, re-reading the pull payment in
// the store's turn (another claim may have taken what was left), and
// approves it in the same change when the store approves it without
// the merchant (autoApproval).
func (c *RefundCommand) claim(ctx context.Context, st *Store, available Sats, r RefundReader) (*RefundChange, error) {
	cl := c.Claim
	if c.PayoutID == "" {
		return nil, Errorf(Invalid, "a claim without its payout's id")
	}
	pp, err := r.PullPayment(ctx, cl.PullPaymentID)
	if err != nil {
		return nil, err
	}
	if pp.StoreID != st.ID {
		return nil, Errorf(NotFound, "pull payment not found")
	}
	if p, err := r.Payout(ctx, c.PayoutID); err == nil {
		return &RefundChange{PullPayment: pp, Payout: p, Repeat: true}, nil
	} else if ErrorCode(err) != NotFound {
		return nil, err
	}
	p, err := ClaimPayout(c.PayoutID, pp, cl.Destination, cl.Amount, cl.Rate, cl.At)
	if err != nil {
		return nil, err
	}
	ch := &RefundChange{PullPayment: pp, Payout: p}
	if in, ok := autoApproval(st, pp, p, available, cl.Rate, cl.At); ok {
		if approved, effects, err := p.Apply(in); err == nil {
			ch.Payout = &approved
			ch.Lines = PayoutTransactions(st, &approved, effects, c.LineRate, approved.UpdatedAt)
		}
	}
	ch.Events = PayoutEvents(0, ch.Payout.State)
	return ch, nil
}

// autoApproval is the approval of new payout p on pull payment pp that
// store st makes without the merchant, and whether it makes one: a
// Lightning payout whose amount in satoshis (at rate, the price of one
// bitcoin in its currency now, when it is in fiat) is within the
// store's limit, or of a pull payment that approves its claims, and,
// with its fee limit, within the available prepaid balance. A payout
// left out waits for the merchant, who is told why on approval.
func autoApproval(st *Store, pp *PullPayment, p *Payout, available Sats, rate decimal.Decimal, now time.Time) (PayoutInput, bool) {
	if p.Destination.Kind == DestinationOnchain {
		return nil, false
	}
	amount, err := p.SatsAt(rate)
	if err != nil { // no rate for a claim in fiat
		return nil, false
	}
	feeLimit := PayoutFeeLimit(st, amount)
	if !(pp.AutoApproveClaims && amount > 0 || st.AutoApproves(amount)) || amount+feeLimit > available {
		return nil, false
	}
	return PayoutApprove{Rate: rate, FeeLimit: feeLimit, At: now}, true
}

// approval is the merchant's approval a of payout p of store st: its
// amount (converted at a's rate when it is in fiat) with its fee limit
// must be within the available prepaid balance, without the credit
// limit, and within the node's funds that the payouts approved and not
// yet sent leave (nodeFundsLeft).
func approval(ctx context.Context, st *Store, p *Payout, available Sats, a *RefundApproval, r RefundReader) (PayoutInput, error) {
	amount, err := p.SatsAt(a.Rate)
	if err != nil {
		return nil, err
	}
	feeLimit := PayoutFeeLimit(st, amount)
	if p.Destination.Kind == DestinationOnchain {
		feeLimit = a.OnchainFeeLimit
	}
	if amount+feeLimit > available {
		return nil, errBalanceTooLow(available, amount, feeLimit)
	}
	if a.NodeFundsKnown {
		onchain := p.Destination.Kind == DestinationOnchain
		held, err := heldForApproved(ctx, r, p.ID, onchain)
		if err != nil {
			return nil, err
		}
		if amount+feeLimit > a.NodeFunds-held {
			if onchain {
				return nil, Errorf(Unavailable, "the service's wallet has confirmed %d sat, of which %d sat are held for payouts approved and not yet sent; the payout needs %d sat and up to %d sat of network fees: try again once those are sent",
					a.NodeFunds, held, amount, feeLimit)
			}
			return nil, Errorf(Unavailable, "the service's Lightning node can send %d sat, of which %d sat are held for payouts approved and not yet sent; the payout needs %d sat and up to %d sat of network fees: try again once those are sent",
				a.NodeFunds, held, amount, feeLimit)
		}
	}
	return PayoutApprove{Rate: a.Rate, FeeLimit: feeLimit, At: a.At}, nil
}

// heldForApproved is what the payouts approved and not yet sent, on
// chain or by Lightning, but payout except, will take of the node's
// funds: their amounts and fee limits. A payout in progress is paid
// from them already (a Lightning payment in flight, a funded
// transaction).
func heldForApproved(ctx context.Context, r RefundReader, except string, onchain bool) (Sats, error) {
	var held Sats
	err := r.PayoutsToSend(ctx, func(q *Payout) error {
		if q.State == PayoutApproved && q.ID != except && (q.Destination.Kind == DestinationOnchain) == onchain {
			held += q.Amount + q.FeeLimit
		}
		return nil
	})
	return held, err
}

// errBalanceTooLow refuses an approval that the store's prepaid balance
// does not cover (its credit limit does not count for refunds).
func errBalanceTooLow(available, amount, feeLimit Sats) error {
	return Errorf(PaymentRequired,
		"the store's prepaid balance available for refunds is %d sat; the payout needs %d sat and up to %d sat of network fees: top up the balance to approve it",
		available, amount, feeLimit)
}

// PayoutFeeLimit is the most a Lightning payout of amount of st may
// spend on routing: the store's forwarding fee bounds
// (ForwardFeeLimit), rounded up to a satoshi.
func PayoutFeeLimit(st *Store, amount Sats) Sats {
	percent, limit := DefaultForwardFeePercent, DefaultForwardFeeCap
	if st.ForwardFeePercent != nil {
		percent = *st.ForwardFeePercent
	}
	if st.ForwardFeeMax > 0 {
		limit = st.ForwardFeeMax.MSat()
	}
	return (ForwardFeeLimit(amount.MSat(), percent, limit) + 999).Sats()
}
