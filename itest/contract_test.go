//go:build itest

package itest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/kassapay/kassa"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/persistence"
)

// TestChainContract holds the real chain backend, watching a real btcd in
// regtest, to the contract of kassa.Chain that the simulator passes too.
func TestChainContract(t *testing.T) {
	t.Parallel()
	kassatest.RunChain(t, func(t *testing.T) kassatest.ChainHarness {
		w := harness.NewWallet(t, harness.ParamsOf("regtest"))
		node := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
		node.Mine(103)
		conn, err := chainrpc.ParseURL(chainURL(node))
		if err != nil {
			t.Fatal(err)
		}
		db, err := persistence.Open("", persistence.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		chain, err := chainrpc.New(chainrpc.Config{Conn: conn, State: db, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		store := &kassa.Store{ID: "store_contract", Xpub: testXpub(t), ConfirmationsRequired: 1}
		return kassatest.ChainHarness{
			Chain: chain,
			Store: store,
			// The store actor allocates the next derivation index for
			// each invoice; here the harness does.
			Watch: func(context.Context, string) error { store.NextAddressIndex++; return nil },
			Pay: func(_ context.Context, address string, amount kassa.Sats) (string, error) {
				tx := w.Pay(t, node, harness.Output{Address: address, Amount: int64(amount)})
				return tx.TxHash().String(), nil
			},
			Mine: func(_ context.Context, n int) error { node.Mine(n); return nil },
		}
	})
}
