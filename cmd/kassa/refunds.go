package main

import (
	"context"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	chainsim "github.com/kassapay/kassa/chain/sim"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/refund"
)

// newRefunds makes the refund service over the actors (docs/decisions.md,
// "Refunds: pull payments and payouts") and, with --lightning lnd, has
// the forwarder pay its approved payouts: the one sender of the
// service's Lightning payments. Call it before the forwarder's Recover.
func (m *Main) newRefunds(b backends) *refund.Service {
	cfg := refund.Config{Reader: m.db, Payouts: m.db, Ledger: m.sys.Service, Rates: b.rates, Clock: m.Clock,
		Network: refund.Fixed{Net: m.chainNetwork()}, Funds: m.funds}
	if m.forwarder != nil {
		cfg.Sender = m.forwarder
	}
	r := refund.New(cfg)
	if m.forwarder != nil {
		m.forwarder.PayPayouts(r)
	}
	return r
}

// chainNetwork is the network of --chain: its rpc URL's, regtest for
// the simulated chain.
func (m *Main) chainNetwork() *chaincfg.Params {
	if conn, err := chainrpc.ParseURL(m.Config.Chain); err == nil {
		if p, ok := chainrpc.Networks[conn.Network]; ok {
			return p
		}
	}
	return &chaincfg.RegressionNetParams
}

// simFunds is what the simulated node and, with --chain sim, the
// simulated chain's wallet can pay (refund.Funds).
type simFunds struct {
	node  *lnsim.Node
	chain *chainsim.Chain // nil: no wallet
}

var errNoSimWallet = kassa.Errorf(kassa.Unavailable, "no wallet pays on-chain payouts with --lightning sim and --chain rpc://")

func (f simFunds) LightningSendable(ctx context.Context) (kassa.Sats, error) {
	return f.node.LightningSendable(ctx)
}

func (f simFunds) OnchainSpendable(ctx context.Context) (kassa.Sats, error) {
	if f.chain == nil {
		return 0, errNoSimWallet
	}
	return f.chain.OnchainSpendable(ctx)
}

func (f simFunds) OnchainFee(ctx context.Context, address string, amount kassa.Sats) (kassa.Sats, error) {
	if f.chain == nil {
		return 0, errNoSimWallet
	}
	return f.chain.OnchainFee(ctx, address, amount)
}
