package main

import (
	"github.com/btcsuite/btcd/chaincfg"

	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/refund"
)

// newRefunds makes the refund service over the actors (docs/decisions.md,
// "Refunds: pull payments and payouts") and, with --lightning lnd, has
// the forwarder pay its approved payouts: the one sender of the
// service's Lightning payments. Call it before the forwarder's Recover.
func (m *Main) newRefunds(b backends) *refund.Service {
	cfg := refund.Config{Reader: m.db, Payouts: m.db, Ledger: m.sys.Service, Rates: b.rates, Clock: m.Clock,
		Network: refund.Fixed{Net: m.chainNetwork()}}
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
