// Package refund runs a store's refunds (docs/decisions.md, "Refunds:
// pull payments and payouts"): it makes pull payments (a refund of an
// invoice is one), takes claims on them as payouts, and approves,
// cancels or marks payouts paid. Its rules are the domain's (kassa.
// PullPayment, kassa.Payout); it reads through kassa.Reader and
// kassa.PayoutStore and writes through kassa.RefundLedger, which
// serializes each change with the store's other balance changes and
// commits it with its ledger lines in one batch.
package refund

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Config holds the ports of a Service.
type Config struct {
	Reader  kassa.Reader
	Payouts kassa.PayoutStore
	Ledger  kassa.RefundLedger
	Rates   kassa.Rates
	Clock   kassa.Clock
	// Network says which network destinations must be on (nil:
	// mainnet).
	Network Network
	// Sender, when set, is told of each payout approved, so that it
	// pays it now (the forwarder: actors.Forwarder).
	Sender Sender
	// Funds, when set, is asked at approval whether the node can pay
	// the payout, and for an on-chain payout's fee (funds.go).
	Funds Funds
}

// Network gives the network the service runs on, which its backends
// know.
type Network interface {
	Params(ctx context.Context) (*chaincfg.Params, error)
}

// Fixed is a Network known in advance.
type Fixed struct{ Net *chaincfg.Params }

// Params returns f's network.
func (f Fixed) Params(context.Context) (*chaincfg.Params, error) { return f.Net, nil }

// Sender pays approved payouts: the one sender of the service's
// Lightning payments, which forwards use too.
type Sender interface {
	// Wake has the sender look at the store's payouts to send.
	Wake(storeID string)
}

// Service offers the refund commands.
type Service struct{ cfg Config }

// New returns a Service over cfg's ports.
func New(cfg Config) *Service {
	if cfg.Clock == nil {
		cfg.Clock = kassa.SystemClock{}
	}
	if cfg.Network == nil {
		cfg.Network = Fixed{Net: &chaincfg.MainNetParams}
	}
	return &Service{cfg: cfg}
}

func (s *Service) now() time.Time { return s.cfg.Clock.Now().UTC() }

// CreatePullPayment makes a pull payment of the store that refunds no
// invoice.
func (s *Service) CreatePullPayment(ctx context.Context, storeID string, in kassa.PullPaymentInput) (*kassa.PullPayment, error) {
	pp, err := kassa.NewPullPayment(kassa.NewID("pp_"), storeID, in, s.now())
	if err != nil {
		return nil, err
	}
	ch, err := s.cfg.Ledger.ChangeRefunds(ctx, storeID, func(context.Context, *kassa.Store, kassa.Sats) (*kassa.RefundChange, error) {
		return &kassa.RefundChange{PullPayment: pp}, nil
	})
	if err != nil {
		return nil, err
	}
	return ch.PullPayment, nil
}

// RefundInvoice makes the pull payment that refunds the store's invoice
// by r.
func (s *Service) RefundInvoice(ctx context.Context, storeID, invoiceID string, r kassa.RefundRequest) (*kassa.PullPayment, error) {
	inv, err := s.cfg.Reader.Invoice(ctx, invoiceID)
	if err != nil {
		return nil, err
	}
	if inv.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "invoice not found")
	}
	// A custom refund in a fiat currency the invoice has no rate of is
	// valued at today's rate: the domain bounds it by what was paid.
	if c, err := kassa.ParseCurrency(string(r.CustomCurrency)); r.Choice == kassa.RefundCustom && err == nil &&
		c != kassa.SATS && c != kassa.BTC && c != inv.Currency && c != inv.StoreCurrency {
		if r.Rate, err = s.cfg.Rates.Rate(ctx, c); err != nil {
			return nil, err
		}
	}
	pp, err := kassa.NewRefund(kassa.NewID("pp_"), inv, r, s.now())
	if err != nil {
		return nil, err
	}
	ch, err := s.cfg.Ledger.ChangeRefunds(ctx, storeID, func(context.Context, *kassa.Store, kassa.Sats) (*kassa.RefundChange, error) {
		return &kassa.RefundChange{PullPayment: pp}, nil
	})
	if err != nil {
		return nil, err
	}
	return ch.PullPayment, nil
}

// Claim claims amount (in the pull payment's currency; zero: a
// Lightning invoice's amount, or all that is left) of pull payment
// ppID for destination: the new payout awaits approval, or is approved
// in the same batch when the store approves payouts of its amount
// automatically (kassa.Store.AutoApproves) and its prepaid balance
// covers it with its fee limit.
func (s *Service) Claim(ctx context.Context, ppID, destination string, amount decimal.Decimal) (*kassa.Payout, error) {
	net, err := s.cfg.Network.Params(ctx)
	if err != nil {
		return nil, err
	}
	dest, err := kassa.ParseDestination(destination, net, s.now())
	if err != nil {
		return nil, err
	}
	first, err := s.cfg.Payouts.PullPayment(ctx, ppID)
	if err != nil {
		return nil, err
	}
	var rate decimal.Decimal
	if first.Currency != kassa.SATS && dest.Kind == kassa.DestinationBOLT11 {
		if rate, err = s.cfg.Rates.Rate(ctx, first.Currency); err != nil {
			return nil, err
		}
	} else if first.Currency != kassa.SATS {
		// For an automatic approval only: without a rate the payout
		// waits for the merchant.
		rate, _ = s.cfg.Rates.Rate(ctx, first.Currency)
	}
	lineRate, err := s.lineRate(ctx, first.StoreID)
	if err != nil {
		return nil, err
	}
	ch, err := s.cfg.Ledger.ChangeRefunds(ctx, first.StoreID, func(ctx context.Context, st *kassa.Store, available kassa.Sats) (*kassa.RefundChange, error) {
		// Read again in the store's turn: another claim may have taken
		// what was left.
		pp, err := s.cfg.Payouts.PullPayment(ctx, ppID)
		if err != nil {
			return nil, err
		}
		p, err := kassa.ClaimPayout(kassa.NewID("po_"), pp, dest, amount, rate, s.now())
		if err != nil {
			return nil, err
		}
		ch := &kassa.RefundChange{PullPayment: pp, Payout: p}
		if in, ok := autoApproval(st, pp, p, available, rate, s.now()); ok {
			if approved, effects, err := p.Apply(in); err == nil {
				ch.Payout = &approved
				ch.Lines = kassa.PayoutTransactions(st, &approved, effects, lineRate, approved.UpdatedAt)
			}
		}
		ch.Events = kassa.PayoutEvents(0, ch.Payout.State)
		return ch, nil
	})
	if err != nil {
		return nil, err
	}
	if ch.Payout.State == kassa.PayoutApproved && s.cfg.Sender != nil {
		s.cfg.Sender.Wake(ch.Payout.StoreID)
	}
	return ch.Payout, nil
}

// autoApproval is the approval of new payout p on pull payment pp that
// store st makes without the merchant, and whether it makes one: a
// Lightning payout whose amount in satoshis (at rate, the price of one
// bitcoin in its currency now, when it is in fiat) is within the
// store's limit, or of a pull payment that approves its claims, and,
// with its fee limit, within the available prepaid balance. A payout
// left out waits for the merchant, who is told why on approval.
func autoApproval(st *kassa.Store, pp *kassa.PullPayment, p *kassa.Payout, available kassa.Sats, rate decimal.Decimal, now time.Time) (kassa.PayoutInput, bool) {
	if p.Destination.Kind == kassa.DestinationOnchain {
		return nil, false
	}
	amount := p.Amount
	if p.Currency != kassa.SATS && p.Destination.Kind != kassa.DestinationBOLT11 {
		if !rate.IsPositive() {
			return nil, false
		}
		var err error
		if amount, err = kassa.ToSats(p.Claimed, p.Currency, rate); err != nil {
			return nil, false
		}
	}
	feeLimit := FeeLimit(st, amount)
	if !(pp.AutoApproveClaims && amount > 0 || st.AutoApproves(amount)) || amount+feeLimit > available {
		return nil, false
	}
	return kassa.PayoutApprove{Rate: rate, FeeLimit: feeLimit, At: now}, true
}

// ErrBalanceTooLow refuses an approval that the store's prepaid balance
// does not cover (its credit limit does not count for refunds).
func errBalanceTooLow(available, amount, feeLimit kassa.Sats) error {
	return kassa.Errorf(kassa.PaymentRequired,
		"the store's prepaid balance available for refunds is %d sat; the payout needs %d sat and up to %d sat of network fees: top up the balance to approve it",
		available, amount, feeLimit)
}

// Approve approves the store's payout: its amount (converted now, at
// today's rate, when it is in fiat) is debited from the store's prepaid
// balance in the batch that records the approval, which the balance must
// cover with the payout's fee limit, without the credit limit.
func (s *Service) Approve(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	first, err := s.payout(ctx, storeID, payoutID)
	if err != nil {
		return nil, err
	}
	var rate decimal.Decimal
	if first.Currency != kassa.SATS {
		if rate, err = s.cfg.Rates.Rate(ctx, first.Currency); err != nil {
			return nil, err
		}
	}
	onchainFeeLimit, err := s.payoutFunds(ctx, storeID, first, rate)
	if err != nil {
		return nil, err
	}
	ch, err := s.change(ctx, storeID, payoutID, func(st *kassa.Store, p *kassa.Payout, available kassa.Sats) (kassa.PayoutInput, error) {
		amount := p.Amount
		if p.Currency != kassa.SATS && p.Destination.Kind != kassa.DestinationBOLT11 {
			if amount, err = kassa.ToSats(p.Claimed, p.Currency, rate); err != nil {
				return nil, err
			}
		}
		feeLimit := FeeLimit(st, amount)
		if p.Destination.Kind == kassa.DestinationOnchain {
			feeLimit = onchainFeeLimit
		}
		if amount+feeLimit > available {
			return nil, errBalanceTooLow(available, amount, feeLimit)
		}
		return kassa.PayoutApprove{Rate: rate, FeeLimit: feeLimit, At: s.now()}, nil
	})
	if err != nil {
		return nil, err
	}
	if s.cfg.Sender != nil {
		s.cfg.Sender.Wake(storeID)
	}
	return ch.Payout, nil
}

// FeeLimit is the most a Lightning payout of amount of st may spend on
// routing: the store's forwarding fee bounds (kassa.ForwardFeeLimit),
// rounded up to a satoshi.
func FeeLimit(st *kassa.Store, amount kassa.Sats) kassa.Sats {
	percent, limit := kassa.DefaultForwardFeePercent, kassa.DefaultForwardFeeCap
	if st.ForwardFeePercent != nil {
		percent = *st.ForwardFeePercent
	}
	if st.ForwardFeeMax > 0 {
		limit = st.ForwardFeeMax.MSat()
	}
	return (kassa.ForwardFeeLimit(amount.MSat(), percent, limit) + 999).Sats()
}

// Cancel cancels the store's payout that nothing was sent for: its debit,
// if any, goes back on the balance and its claim back on its pull
// payment.
func (s *Service) Cancel(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	ch, err := s.change(ctx, storeID, payoutID, func(*kassa.Store, *kassa.Payout, kassa.Sats) (kassa.PayoutInput, error) {
		return kassa.PayoutCancel{At: s.now()}, nil
	})
	if err != nil {
		return nil, err
	}
	return ch.Payout, nil
}

// MarkPaid records that the merchant paid the store's payout outside
// Kassa: its debit, if any, goes back on the balance, since Kassa paid
// nothing.
func (s *Service) MarkPaid(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	ch, err := s.change(ctx, storeID, payoutID, func(*kassa.Store, *kassa.Payout, kassa.Sats) (kassa.PayoutInput, error) {
		return kassa.PayoutMarkPaid{At: s.now()}, nil
	})
	if err != nil {
		return nil, err
	}
	return ch.Payout, nil
}

// Record applies in to the store's payout, in the store's turn: how the
// sender records an attempt and its outcome.
func (s *Service) Record(ctx context.Context, storeID, payoutID string, in kassa.PayoutInput) (*kassa.Payout, error) {
	ch, err := s.change(ctx, storeID, payoutID, func(*kassa.Store, *kassa.Payout, kassa.Sats) (kassa.PayoutInput, error) {
		return in, nil
	})
	if err != nil {
		return nil, err
	}
	return ch.Payout, nil
}

// ToSend returns the payouts to pay or to look up (Approved or
// InProgress) of the store, or of every store when storeID is empty,
// oldest first.
func (s *Service) ToSend(ctx context.Context, storeID string) ([]*kassa.Payout, error) {
	var out []*kassa.Payout
	err := s.cfg.Payouts.PayoutsToSend(ctx, func(p *kassa.Payout) error {
		if storeID == "" || p.StoreID == storeID {
			out = append(out, p)
		}
		return nil
	})
	slices.SortFunc(out, func(a, b *kassa.Payout) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return out, err
}

// payout reads the store's payout.
func (s *Service) payout(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	p, err := s.cfg.Payouts.Payout(ctx, payoutID)
	if err != nil {
		return nil, err
	}
	if p.StoreID != storeID {
		return nil, kassa.Errorf(kassa.NotFound, "payout not found")
	}
	return p, nil
}

// lineRate is the rate the store's refund ledger lines are valued at in
// its currency: the rate of the day, read before the store's turn;
// without one they are valued at zero, like a top-up's, and the balance
// in satoshis is right either way.
func (s *Service) lineRate(ctx context.Context, storeID string) (decimal.Decimal, error) {
	st, err := s.cfg.Reader.Store(ctx, storeID)
	if err != nil {
		return decimal.Zero, err
	}
	if st.Currency == kassa.SATS || st.Currency == kassa.BTC {
		return decimal.Zero, nil
	}
	if r, err := s.cfg.Rates.Rate(ctx, st.Currency); err == nil {
		return r, nil
	}
	return decimal.Zero, nil
}

// change applies the input that input decides to the store's payout in
// the store's turn, with the ledger lines of its effects and the
// release of its claim on its pull payment.
func (s *Service) change(ctx context.Context, storeID, payoutID string, input func(st *kassa.Store, p *kassa.Payout, available kassa.Sats) (kassa.PayoutInput, error)) (*kassa.RefundChange, error) {
	rate, err := s.lineRate(ctx, storeID)
	if err != nil {
		return nil, err
	}
	return s.cfg.Ledger.ChangeRefunds(ctx, storeID, func(ctx context.Context, st *kassa.Store, available kassa.Sats) (*kassa.RefundChange, error) {
		p, err := s.payout(ctx, storeID, payoutID)
		if err != nil {
			return nil, err
		}
		in, err := input(st, p, available)
		if err != nil {
			return nil, err
		}
		next, effects, err := p.Apply(in)
		if err != nil {
			return nil, err
		}
		ch := &kassa.RefundChange{Payout: &next, Events: kassa.PayoutEvents(p.State, next.State)}
		for _, e := range effects {
			if r, ok := e.(kassa.ReleaseClaim); ok {
				pp, err := s.cfg.Payouts.PullPayment(ctx, p.PullPaymentID)
				if err != nil {
					return nil, err
				}
				pp.Release(r.Amount)
				ch.PullPayment = pp
			}
		}
		ch.Lines = kassa.PayoutTransactions(st, &next, effects, rate, next.UpdatedAt)
		return ch, nil
	})
}
