//go:build itest

package itest

import (
	"testing"

	"github.com/kassapay/kassa/kassatest/harness"
)

// TestBtcdStartsAndMines proves that the harness can build btcd, start it
// in regtest, mine spendable coins to the test wallet and pay with them.
func TestBtcdStartsAndMines(t *testing.T) {
	t.Parallel()
	w := harness.NewWallet(t, harness.ParamsOf("regtest"))
	n := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
	n.Mine(101)
	if h := n.Height(); h != 101 {
		t.Fatalf("height %d after mining 101 blocks", h)
	}
	tx := w.Pay(t, n, harness.Output{Address: w.Address(), Amount: 100_000})
	mempool, err := n.Client.GetRawMempool()
	if err != nil {
		t.Fatal(err)
	}
	if len(mempool) != 1 || *mempool[0] != tx.TxHash() {
		t.Fatalf("mempool %v, want only %s", mempool, tx.TxHash())
	}
	hashes := n.Mine(1)
	block, err := n.Client.GetBlock(hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(block.Transactions) != 2 || block.Transactions[1].TxHash() != tx.TxHash() {
		t.Fatalf("block holds %d transactions, want the coinbase and %s", len(block.Transactions), tx.TxHash())
	}
	n.Stop()
}
