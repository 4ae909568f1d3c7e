package main

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/egress"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lnurl"
	"github.com/kassapay/kassa/metrics"
)

// newLND connects the lnd backend of `--lightning lnd://…`. It does not
// wait for lnd: while lnd is unreachable health says so and the watcher
// reconnects with backoff.
func newLND(raw string, db storage, cluster bool, clock kassa.Clock, log *slog.Logger) (*lnd.Node, error) {
	target, err := lnd.ParseTarget(raw)
	if err != nil {
		return nil, err
	}
	rpc, err := lnd.Dial(target)
	if err != nil {
		return nil, err
	}
	return lnd.New(rpc, lnd.Config{
		Cursor:            db,
		OpenPaymentHashes: openPaymentHashes(db),
		Clock:             clock,
		Logger:            log,
		Cluster:           cluster,
	})
}

// openPaymentHashes lists the payment hashes of the invoices that still
// wait for their payment, for the lnd backend's reconcile pass.
func openPaymentHashes(r kassa.Reader) func(context.Context, func(string) error) error {
	return func(ctx context.Context, fn func(string) error) error {
		return r.OpenInvoices(ctx, func(id, _ string, _ time.Time) error {
			inv, err := r.Invoice(ctx, id)
			if err != nil {
				if kassa.ErrorCode(err) == kassa.NotFound {
					return nil
				}
				return err
			}
			if inv.PaymentHash == "" || inv.Status != kassa.InvoiceNew {
				return nil
			}
			return fn(inv.PaymentHash)
		})
	}
}

// newForwarder forwards stores' Lightning money from the service's node
// to their Lightning addresses, and pays approved refund payouts: the
// one sender of its Lightning payments (lnd's node, or the simulated
// one). Lightning addresses resolve through the egress client (public
// addresses and https only, unless --dev) into invoices on the node's
// network (net nil: lnd's, learnt once it answers).
// onchain says that the chain backend watches lnd's wallet addresses
// (lndWallet), so that confirmed payments to them are forwarded. wallet
// (nil: none) pays on-chain payouts.
// In cluster mode the forwarder stands by until it holds the forwarder
// lease (leases.go).
func newForwarder(payer actors.LightningPayer, wallet actors.OnchainWallet, net networker, db storage, dev, onchain, cluster bool, clock kassa.Clock, stats *metrics.Set, log *slog.Logger) *actors.Forwarder {
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate = dev
	cfg.RequireHTTPS = !dev
	cfg.Timeout = lnurl.DefaultTimeout
	cfg.UserAgent = "Kassa-LNURL/1"
	return actors.NewForwarder(actors.ForwarderConfig{
		Journal: db, Store: db, Reader: db, Payer: payer, Wallet: wallet, Values: db,
		Addresses: &lnurlAddresses{node: net, http: egress.New(cfg), allowHTTP: dev},
		Clock:     clock, Logger: log, Onchain: onchain, Standby: cluster, Metrics: stats,
	})
}

// networker names the network of a Lightning node.
type networker interface {
	Network(ctx context.Context) (string, error)
}

// simNetwork is the simulated node's network.
type simNetwork struct{}

func (simNetwork) Network(context.Context) (string, error) { return "regtest", nil }

// lndWallet gives the real chain backend the addresses of stores
// without an xpub when --lightning is lnd: addresses of lnd's wallet,
// through its address pool once it is set (the chain backend is made
// first), so that an lnd outage does not stop their on-chain invoices.
type lndWallet struct{ pool *lnd.AddressPool }

var _ chainrpc.WalletPool = (*lndWallet)(nil)

func (w *lndWallet) Address(ctx context.Context, invoiceID string) (string, error) {
	if w.pool == nil {
		return "", errors.New("lnd is not set up")
	}
	return w.pool.Address(ctx, invoiceID)
}

func (w *lndWallet) Left(ctx context.Context) (int, error) {
	if w.pool == nil {
		return 0, errors.New("lnd is not set up")
	}
	return w.pool.Left(ctx)
}

// lnurlAddresses is the LNURL-pay client for the network of the lnd node,
// which is known once lnd has answered.
type lnurlAddresses struct {
	node      networker
	http      lnurl.Doer
	allowHTTP bool

	mu     sync.Mutex
	client *lnurl.Client
}

func (a *lnurlAddresses) get(ctx context.Context) (lnurl.Addresses, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.client == nil {
		network, err := a.node.Network(ctx)
		if err != nil {
			return lnurl.Addresses{}, kassa.ErrLightningNodeUnreachable
		}
		params, err := lnd.NetParams(network)
		if err != nil {
			return lnurl.Addresses{}, err
		}
		a.client = lnurl.New(lnurl.Config{HTTP: a.http, Net: params, AllowHTTP: a.allowHTTP})
	}
	return lnurl.Addresses{Client: a.client}, nil
}

func (a *lnurlAddresses) PayRequest(ctx context.Context, address string) (kassa.PayRequest, error) {
	c, err := a.get(ctx)
	if err != nil {
		return kassa.PayRequest{}, err
	}
	return c.PayRequest(ctx, address)
}

func (a *lnurlAddresses) Invoice(ctx context.Context, p kassa.PayRequest, amount kassa.MSat, comment string) (kassa.AddressInvoice, error) {
	c, err := a.get(ctx)
	if err != nil {
		return kassa.AddressInvoice{}, err
	}
	return c.Invoice(ctx, p, amount, comment)
}
