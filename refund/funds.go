package refund

import (
	"context"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Funds says what the service's node can pay out now; lightning/lnd's
// Node and the simulators implement it. The approval of a payout asks
// it, so that a payout the node cannot pay is refused before the
// store's balance is debited (docs/decisions.md, "Payouts through
// lnd").
type Funds interface {
	// LightningSendable is what the node's active channels can send now
	// (their local balances above their reserves).
	LightningSendable(ctx context.Context) (kassa.Sats, error)
	// OnchainSpendable is the wallet's confirmed balance that a
	// transaction may spend now.
	OnchainSpendable(ctx context.Context) (kassa.Sats, error)
	// OnchainFee estimates the network fee of a transaction of the
	// wallet paying amount to address now.
	OnchainFee(ctx context.Context, address string, amount kassa.Sats) (kassa.Sats, error)
}

// OnchainFeeMargin multiplies the fee estimated at approval into an
// on-chain payout's fee limit: fees may rise before the transaction is
// funded, a moment later.
const OnchainFeeMargin = 2

var errNoWallet = kassa.Errorf(kassa.Unavailable, "this server has no wallet to pay on-chain payouts from (it needs --lightning lnd://…): mark the payout paid once paid by other means, or cancel it")

// payoutFunds returns the fee limit of an on-chain payout (zero for a
// Lightning one: the store's forwarding fee bounds set it) and checks
// that the node can pay first, of the store, at rate: for Lightning its
// channels' spendable capacity, for on-chain its wallet's confirmed
// balance must cover the amount and the fee limit. It returns those
// funds too, for the store's turn to check again less the payouts
// approved and not yet sent (kassa.RefundApproval). Without Funds
// (tests) Lightning payouts are not checked and on-chain ones refused.
// A node that cannot pay is Unavailable (503 with Retry-After): the
// operator's node, not the merchant's request, has to change.
func (s *Service) payoutFunds(ctx context.Context, storeID string, first *kassa.Payout, rate decimal.Decimal) (feeLimit kassa.Sats, funds *kassa.Sats, err error) {
	onchain := first.Destination.Kind == kassa.DestinationOnchain
	if s.cfg.Funds == nil {
		if onchain {
			return 0, nil, errNoWallet
		}
		return 0, nil, nil
	}
	amount, err := first.SatsAt(rate)
	if err != nil {
		return 0, nil, err
	}
	if !onchain {
		st, err := s.cfg.Reader.Store(ctx, storeID)
		if err != nil {
			return 0, nil, err
		}
		feeLimit := kassa.PayoutFeeLimit(st, amount)
		can, err := s.cfg.Funds.LightningSendable(ctx)
		if err != nil {
			return 0, nil, kassa.Errorf(kassa.Unavailable, "the service's Lightning node does not answer: %s", kassa.ErrorMessage(err))
		}
		if amount+feeLimit > can {
			return 0, nil, kassa.Errorf(kassa.Unavailable, "the service's Lightning node can send %d sat now; the payout needs %d sat and up to %d sat of routing fees: try again once its channels can pay it", can, amount, feeLimit)
		}
		return 0, &can, nil
	}
	fee, err := s.cfg.Funds.OnchainFee(ctx, first.Destination.Address, amount)
	if err != nil {
		return 0, nil, kassa.Errorf(kassa.Unavailable, "the service's wallet cannot estimate the network fee: %s", kassa.ErrorMessage(err))
	}
	feeLimit = max(fee, 1) * OnchainFeeMargin
	can, err := s.cfg.Funds.OnchainSpendable(ctx)
	if err != nil {
		return 0, nil, kassa.Errorf(kassa.Unavailable, "the service's wallet does not answer: %s", kassa.ErrorMessage(err))
	}
	if amount+feeLimit > can {
		return 0, nil, kassa.Errorf(kassa.Unavailable, "the service's wallet has %d sat confirmed; the payout needs %d sat and up to %d sat of network fees: try again once the wallet holds enough", can, amount, feeLimit)
	}
	return feeLimit, &can, nil
}
