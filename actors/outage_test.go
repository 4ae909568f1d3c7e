package actors

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
)

// downLightning is a Lightning backend whose node cannot be reached.
type downLightning struct{ fakeLightning }

func (downLightning) CreateInvoice(context.Context, kassa.MSat, string, time.Duration) (kassa.LightningInvoice, error) {
	return kassa.LightningInvoice{}, errors.New("lnd is unreachable")
}

func TestLightningOutageOffersOnchainOnly(t *testing.T) {
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), func(c *Config) { c.Lightning = downLightning{} })
	h.createStore("0", "0")
	inv := h.invoice("10", kassa.EUR)
	if inv.Accepts(kassa.MethodLightning) || !inv.Accepts(kassa.MethodOnchain) || inv.OnchainAddress == "" || inv.LightningInvoice != "" {
		t.Fatalf("invoice while Lightning is down: methods %v, address %q, bolt11 %q", inv.EnabledMethods, inv.OnchainAddress, inv.LightningInvoice)
	}
	if stored := h.get(inv.ID); stored.Accepts(kassa.MethodLightning) {
		t.Fatalf("stored invoice still offers Lightning: %v", stored.EnabledMethods)
	}
	_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR,
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodLightning},
	})
	if kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("a Lightning-only invoice while Lightning is down: %v, want unavailable (503)", err)
	}
}

// walletLnd is lnd's RPC for the address pool test: it gives fresh
// regtest addresses and invoices while up, and fails every call while
// down (the one failure injected: lnd unreachable).
type walletLnd struct {
	mu   sync.Mutex
	down bool
	n    byte
}

var errLndRefused = errors.New("rpc error: code = Unavailable desc = connection refused")

func (l *walletLnd) setDown(down bool) {
	l.mu.Lock()
	l.down = down
	l.mu.Unlock()
}

func (l *walletLnd) up() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.down {
		return errLndRefused
	}
	return nil
}

func (l *walletLnd) GetInfo(context.Context) (*lnrpc.GetInfoResponse, error) {
	if err := l.up(); err != nil {
		return nil, err
	}
	return &lnrpc.GetInfoResponse{IdentityPubkey: "02aa", SyncedToChain: true}, nil
}

func (l *walletLnd) NewAddress(context.Context) (string, error) {
	if err := l.up(); err != nil {
		return "", err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	hash := make([]byte, 20)
	hash[0] = l.n
	addr, err := btcutil.NewAddressWitnessPubKeyHash(hash, &chaincfg.RegressionNetParams)
	if err != nil {
		return "", err
	}
	return addr.EncodeAddress(), nil
}

func (l *walletLnd) AddInvoice(_ context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error) {
	if err := l.up(); err != nil {
		return nil, err
	}
	var hash [32]byte
	_, _ = rand.Read(hash[:])
	return &lnrpc.AddInvoiceResponse{PaymentRequest: fmt.Sprintf("lnbcrt%dfake", in.ValueMsat), RHash: hash[:]}, nil
}

func (l *walletLnd) LookupInvoice(context.Context, []byte) (*lnrpc.Invoice, error) {
	return nil, errLndRefused
}
func (l *walletLnd) SubscribeInvoices(context.Context, uint64) (func() (*lnrpc.Invoice, error), error) {
	return nil, errLndRefused
}
func (l *walletLnd) CancelInvoice(context.Context, []byte) error { return errLndRefused }
func (l *walletLnd) SendPayment(context.Context, *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
	return nil, errLndRefused
}
func (l *walletLnd) TrackPayment(context.Context, []byte) (func() (*lnrpc.Payment, error), error) {
	return nil, errLndRefused
}
func (l *walletLnd) QueryRoutes(context.Context, *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error) {
	return nil, errLndRefused
}
func (l *walletLnd) Close() error { return nil }

// TestLndOutageStoreWithoutXpubInvoicesFromPool (issue 20, finding 1):
// a store without an xpub takes its on-chain addresses from lnd's
// wallet. While lnd is unreachable, its invoices are offered on-chain
// only, to the addresses of the pool taken ahead, each once; once the
// pool is used up too, creation answers 503 naming Lightning, not the
// chain. On the old main every such invoice answered 503 "the chain
// backend cannot give an address right now".
func TestLndOutageStoreWithoutXpubInvoicesFromPool(t *testing.T) {
	ctx := context.Background()
	db := openMem(t)
	rpc := &walletLnd{}
	node, err := lnd.New(rpc, lnd.Config{Cursor: db, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := lnd.NewPool(node, lnd.PoolConfig{Store: db, Size: 2, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := chainrpc.ParseURL("rpc://u:p@127.0.0.1:1?network=regtest&notls=1")
	if err != nil {
		t.Fatal(err)
	}
	chain, err := chainrpc.New(chainrpc.Config{Conn: conn, State: db, Reader: db, Wallet: pool, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, db, kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), func(c *Config) {
		c.Chain, c.Lightning = chain, node
	})
	h.createStore("0", "0")
	if err := pool.Fill(ctx); err != nil {
		t.Fatal(err)
	}

	up := h.invoice("10", kassa.EUR)
	if !up.Accepts(kassa.MethodLightning) || !up.Accepts(kassa.MethodOnchain) || up.OnchainAddress == "" {
		t.Fatalf("invoice with lnd up: methods %v, address %q", up.EnabledMethods, up.OnchainAddress)
	}
	if n, _ := pool.Left(ctx); n != 2 {
		t.Fatalf("lnd up: the pool has %d left, want 2 (untouched)", n)
	}

	rpc.setDown(true)
	seen := map[string]bool{up.OnchainAddress: true}
	for i := range 2 {
		inv := h.invoice("10", kassa.EUR)
		if inv.Accepts(kassa.MethodLightning) || !inv.Accepts(kassa.MethodOnchain) || inv.LightningInvoice != "" || inv.OnchainAddress == "" {
			t.Fatalf("invoice %d with lnd down: methods %v, address %q, bolt11 %q; want on-chain only", i, inv.EnabledMethods, inv.OnchainAddress, inv.LightningInvoice)
		}
		if seen[inv.OnchainAddress] {
			t.Fatalf("address %s handed out twice", inv.OnchainAddress)
		}
		seen[inv.OnchainAddress] = true
		if id, err := db.InvoiceIDByAddress(ctx, inv.OnchainAddress); err != nil || id != inv.ID {
			t.Fatalf("the pool address %s is not indexed to invoice %s: %q %v", inv.OnchainAddress, inv.ID, id, err)
		}
		if n, _ := pool.Left(ctx); n != 1-i {
			t.Fatalf("after %d outage invoices: %d left", i+1, n)
		}
	}
	_, err = h.sys.Service.CreateInvoice(ctx, h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
	if kassa.ErrorCode(err) != kassa.Unavailable || !strings.Contains(kassa.ErrorMessage(err), "Lightning (lnd) is unreachable") || strings.Contains(kassa.ErrorMessage(err), "chain backend") {
		t.Fatalf("pool used up, lnd down: %v; want 503 naming Lightning, not the chain", err)
	}
	if info := chain.Info(ctx); info.AddressPool == nil || *info.AddressPool != 0 || !strings.Contains(info.Warning, "address pool") {
		t.Fatalf("chain health with the pool used up: %+v", info)
	}

	rpc.setDown(false)
	if err := pool.Fill(ctx); err != nil {
		t.Fatal(err)
	}
	back := h.invoice("10", kassa.EUR)
	if !back.Accepts(kassa.MethodLightning) || seen[back.OnchainAddress] {
		t.Fatalf("invoice with lnd back: methods %v, address %q (seen before: %v)", back.EnabledMethods, back.OnchainAddress, seen[back.OnchainAddress])
	}
	if info := chain.Info(ctx); info.AddressPool == nil || *info.AddressPool != 2 {
		t.Fatalf("chain health after the refill: %+v", info)
	}
}
