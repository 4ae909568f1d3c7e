package rpc

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
)

// A store without an xpub takes addresses from the service's wallet
// when one is configured; a payment to such an address is followed like
// a derived one (reported at its depth on the best chain).
func TestStoreWithoutXpubGetsWatchedWalletAddresses(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	addr, script := testAddress(t, 7)
	var wallet func(context.Context) (string, error)
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams, Poll: time.Second}, Node: node, State: &memKV{},
		Logger: slog.New(slog.DiscardHandler), Wallet: WalletFunc(func(ctx context.Context, _ string) (string, error) { return wallet(ctx) })})
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{c: c, node: node, log: c.log, clock: c.clock, trace: tracer}
	if _, err := w.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	mustPass(t, w, r)
	store := &kassa.Store{ID: "s1", ConfirmationsRequired: 1}

	wallet = func(context.Context) (string, error) { return "", errors.New("lnd is down") }
	if _, err := c.NewAddress(context.Background(), store, "i0"); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("wallet down: %v, want unavailable", err)
	}
	mainnet, _ := btcutil.NewAddressWitnessPubKeyHash(make([]byte, 20), &chaincfg.MainNetParams)
	wallet = func(context.Context) (string, error) { return mainnet.EncodeAddress(), nil }
	if _, err := c.NewAddress(context.Background(), store, "i1"); err == nil {
		t.Fatal("a wallet address of another network was handed out")
	}
	if c.matcher.Len() != 0 {
		t.Fatalf("%d addresses watched after refusals", c.matcher.Len())
	}

	wallet = func(context.Context) (string, error) { return addr, nil }
	got, err := c.NewAddress(context.Background(), store, "i2")
	if err != nil || got != addr {
		t.Fatalf("NewAddress: %q %v, want the wallet's %s", got, err, addr)
	}
	tx := payment(1, script, 5000)
	id := label(tx.TxHash().String())
	node.send(tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 0")
	node.mine(2, tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 1")

	// Without a wallet, such a store still gets no address.
	c2, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: node, State: &memKV{}, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.NewAddress(context.Background(), store, "i3"); kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("no wallet: %v, want invalid", err)
	}
}
