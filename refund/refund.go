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
	"fmt"
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
	return s.create(ctx, storeID, pp)
}

// create makes pull payment pp of the store in the store's turn.
func (s *Service) create(ctx context.Context, storeID string, pp *kassa.PullPayment) (*kassa.PullPayment, error) {
	ch, err := s.cfg.Ledger.ChangeRefunds(ctx, storeID, &kassa.RefundCommand{Create: pp})
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
	return s.create(ctx, storeID, pp)
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
	// The store's turn reads the pull payment again: another claim may
	// have taken what was left (kassa.RefundCommand.Decide).
	ch, err := s.cfg.Ledger.ChangeRefunds(ctx, first.StoreID, &kassa.RefundCommand{
		Claim:    &kassa.RefundClaim{PullPaymentID: ppID, Destination: dest, Amount: amount, Rate: rate, At: s.now()},
		PayoutID: kassa.NewID("po_"), LineRate: lineRate,
	})
	if err != nil {
		return nil, err
	}
	if ch.Payout.State == kassa.PayoutApproved && s.cfg.Sender != nil {
		s.cfg.Sender.Wake(ch.Payout.StoreID)
	}
	return ch.Payout, nil
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
	onchainFeeLimit, funds, err := s.payoutFunds(ctx, storeID, first, rate)
	if err != nil {
		return nil, err
	}
	approval := &kassa.RefundApproval{Rate: rate, OnchainFeeLimit: onchainFeeLimit, At: s.now()}
	if funds != nil {
		approval.NodeFunds, approval.NodeFundsKnown = *funds, true
	}
	ch, err := s.change(ctx, storeID, &kassa.RefundCommand{PayoutID: payoutID, Approve: approval})
	if err != nil {
		return nil, err
	}
	if s.cfg.Sender != nil {
		s.cfg.Sender.Wake(storeID)
	}
	return ch.Payout, nil
}

// Cancel cancels the store's payout that nothing was sent for: its debit,
// if any, goes back on the balance and its claim back on its pull
// payment.
func (s *Service) Cancel(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	ch, err := s.change(ctx, storeID, &kassa.RefundCommand{PayoutID: payoutID, Cancel: &kassa.PayoutCancel{At: s.now()}})
	if err != nil {
		return nil, err
	}
	return ch.Payout, nil
}

// MarkPaid records that the merchant paid the store's payout outside
// Kassa: its debit, if any, goes back on the balance, since Kassa paid
// nothing.
func (s *Service) MarkPaid(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error) {
	ch, err := s.change(ctx, storeID, &kassa.RefundCommand{PayoutID: payoutID, MarkPaid: &kassa.PayoutMarkPaid{At: s.now()}})
	if err != nil {
		return nil, err
	}
	return ch.Payout, nil
}

// Record applies in to the store's payout, in the store's turn: how the
// sender records an attempt and its outcome.
func (s *Service) Record(ctx context.Context, storeID, payoutID string, in kassa.PayoutInput) (*kassa.Payout, error) {
	cmd := &kassa.RefundCommand{PayoutID: payoutID}
	switch in := in.(type) {
	case kassa.PayoutAttempt:
		cmd.Attempt = &in
	case kassa.PayoutSucceeded:
		cmd.Succeeded = &in
	case kassa.PayoutPaymentFailed:
		cmd.Failed = &in
	case kassa.PayoutCancel:
		cmd.Cancel = &in
	case kassa.PayoutMarkPaid:
		cmd.MarkPaid = &in
	default:
		return nil, fmt.Errorf("refund: the sender records no %T", in)
	}
	ch, err := s.change(ctx, storeID, cmd)
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

// change has the store decide cmd, a change of one of its payouts, in
// its turn, with the ledger lines of its effects valued at the rate of
// the day.
func (s *Service) change(ctx context.Context, storeID string, cmd *kassa.RefundCommand) (*kassa.RefundChange, error) {
	rate, err := s.lineRate(ctx, storeID)
	if err != nil {
		return nil, err
	}
	cmd.LineRate = rate
	return s.cfg.Ledger.ChangeRefunds(ctx, storeID, cmd)
}
