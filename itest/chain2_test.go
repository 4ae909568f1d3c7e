//go:build itest

package itest

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

func TestRBFBumpToSameAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	coin := e.wallet.Coin(t, e.node)
	outs := []harness.Output{{Address: inv.OnchainAddress, Amount: 50_000}}
	first := e.wallet.Build(t, []harness.Coin{coin}, outs, 2)
	e.wallet.Send(t, e.node, first)
	e.hooks.Wait(inv.ID, "Processing")

	bump := e.wallet.Build(t, []harness.Coin{coin}, outs, 20)
	e.wallet.Send(t, e.node, bump)
	e.waitPayments(e.store, inv.ID, func(ps []harness.Payment) error {
		if len(ps) != 2 || ps[0].TransactionID != first.TxHash().String() || !ps[0].ReplacedByFee ||
			ps[1].TransactionID != bump.TxHash().String() || ps[1].ReplacedByFee || ps[1].FeeRate < 20 {
			return fmt.Errorf("payments %+v", ps)
		}
		return nil
	})
	if got := e.kassa.Invoice(e.store, inv.ID); got.Status != "Processing" || got.TotalPaid != 50_000 {
		t.Fatalf("after the bump: %+v", got)
	}
	e.node.Mine(1)
	e.hooks.Wait(inv.ID, "Settled")
	got := e.kassa.WaitStatus(e.store, inv.ID, "Settled", "None")
	if got.TotalPaid != 50_000 {
		t.Fatalf("total paid %d: the replaced payment counted", got.TotalPaid)
	}
	expectHooks(t, e.hooks, inv.ID, "New", "Processing", "Settled")
}

func TestDoubleSpendToElsewhere(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	coin := e.wallet.Coin(t, e.node)
	pay := e.wallet.Build(t, []harness.Coin{coin}, []harness.Output{{Address: inv.OnchainAddress, Amount: 50_000}}, 2)
	e.wallet.Send(t, e.node, pay)
	e.hooks.Wait(inv.ID, "Processing")

	// The same coin, to the customer's own address, with a higher fee.
	steal := e.wallet.Build(t, []harness.Coin{coin}, []harness.Output{{Address: e.wallet.Address(), Amount: 50_000}}, 20)
	e.wallet.Send(t, e.node, steal)
	e.kassa.WaitStatus(e.store, inv.ID, "New", "")
	e.node.Mine(1)
	waitHeight(t, e.kassa, e.node.Height())
	got := e.kassa.Invoice(e.store, inv.ID)
	if got.Status != "New" || got.TotalPaid != 0 {
		t.Fatalf("after the double spend confirmed: %+v", got)
	}
	ps := e.kassa.Payments(e.store, inv.ID)
	if len(ps) != 1 || ps[0].ReplacedByFee {
		t.Fatalf("payments %+v", ps)
	}
	expectHooks(t, e.hooks, inv.ID, "New", "Processing")
}

// waitHeight waits until Kassa's chain watcher processed height.
func waitHeight(t *testing.T, k *harness.Kassa, height int64) {
	t.Helper()
	kassatest.Eventually(t, 30*time.Second, fmt.Sprintf("watcher at height %d", height), func() error {
		h := k.Health().Chain
		if h.Height < height || !h.Synced {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})
}

// TestBtcdRestartedWhileAPaymentIsMade: Kassa watches node A; A stops,
// the payment is made and mined through node B, A comes back (a regtest
// btcd starts empty and syncs again from B). Health says the node is
// down meanwhile; invoices still get addresses; the payment settles.
func TestBtcdRestartedWhileAPaymentIsMade(t *testing.T) {
	t.Parallel()
	w := harness.NewWallet(t, harness.ParamsOf("regtest"))
	b := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
	b.Mine(102)
	a := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address(), Connect: []string{b.P2PAddr}})
	harness.WaitSynced(t, a, b)

	k := harness.StartKassa(t, "", "--chain", chainURL(a))
	store := k.CreateStore("--name", "Outage", "--xpub", testXpub(t), "--confirmations", "1")
	hooks := k.ListenWebhooks(store)
	inv := k.CreateInvoice(store, 50_000)
	waitHeight(t, k, 102)

	a.Stop()
	// The watcher learns that the node is gone when its call fails, after
	// rpcclient's own ten tries (0.5 s, 1 s, … 4.5 s apart: 22.5 s), and
	// health reads it at most 5 s late: about 28 s, beyond 30 s under load.
	kassatest.Eventually(t, 60*time.Second, "health reports the node down", func() error {
		if h := k.Health().Chain; h.Error == "" || h.Synced {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})
	during := k.CreateInvoice(store, 10_000)
	if during.OnchainAddress == "" || during.OnchainAddress == inv.OnchainAddress {
		t.Fatalf("invoice during the outage got address %q", during.OnchainAddress)
	}
	w.Pay(t, b, harness.Output{Address: inv.OnchainAddress, Amount: 50_000})
	b.Mine(1)

	a.Start()
	harness.WaitSynced(t, a, b)
	hooks.Wait(inv.ID, "Settled")
	k.WaitStatus(store, inv.ID, "Settled", "None")
	waitHeight(t, k, 103)
}

// reorgEnv is two nodes that share a chain, Kassa watching A, and the
// nodes split apart.
func reorgEnv(t *testing.T) (w *harness.Wallet, a, b *harness.Node, k *harness.Kassa, store harness.Store, hooks *harness.Webhooks) {
	w = harness.NewWallet(t, harness.ParamsOf("regtest"))
	a = harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
	a.Mine(103)
	b = harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
	b.Connect(a)
	harness.WaitSynced(t, a, b)
	b.Disconnect(a)
	k = harness.StartKassa(t, "", "--chain", chainURL(a))
	store = k.CreateStore("--name", "Reorg", "--xpub", testXpub(t), "--confirmations", "1")
	hooks = k.ListenWebhooks(store)
	return
}

// TestReorgOrphansThePayingBlock: the block that settled the invoice is
// orphaned by a longer branch without the payment. The invoice does not
// stay Settled; when the payment confirms on the new branch it is
// Settled again, with one Settled webhook and one ledger line.
func TestReorgOrphansThePayingBlock(t *testing.T) {
	t.Parallel()
	w, a, b, k, store, hooks := reorgEnv(t)
	inv := k.CreateInvoice(store, 50_000)
	w.Pay(t, a, harness.Output{Address: inv.OnchainAddress, Amount: 50_000})
	a.Mine(1)
	hooks.Wait(inv.ID, "Settled")

	b.Mine(2)
	a.Connect(b)
	harness.WaitSynced(t, a, b)
	k.WaitStatus(store, inv.ID, "Processing", "")

	a.Mine(1)
	k.WaitStatus(store, inv.ID, "Settled", "None")
	waitHeight(t, k, a.Height())
	expectHooks(t, hooks, inv.ID, "New", "Processing", "Settled")
	if n := transfers(t, k, store, inv.ID); n != 1 {
		t.Fatalf("%d transfer lines for the invoice, want 1", n)
	}
}

// TestReorgDoubleSpendsThePayment: the winning branch spends the
// payment's coin elsewhere. btcd keeps the payment in its mempool after
// the sync; the watcher checks the chain and drops it.
func TestReorgDoubleSpendsThePayment(t *testing.T) {
	t.Parallel()
	w, a, b, k, store, hooks := reorgEnv(t)
	inv := k.CreateInvoice(store, 50_000)
	coin := w.Coin(t, a)
	pay := w.Build(t, []harness.Coin{coin}, []harness.Output{{Address: inv.OnchainAddress, Amount: 50_000}}, 2)
	w.Send(t, a, pay)
	a.Mine(1)
	hooks.Wait(inv.ID, "Settled")

	steal := w.Build(t, []harness.Coin{coin}, []harness.Output{{Address: w.Address(), Amount: 50_000}}, 5)
	w.Send(t, b, steal)
	b.Mine(2)
	a.Connect(b)
	harness.WaitSynced(t, a, b)
	k.WaitStatus(store, inv.ID, "New", "")
	a.Mine(1)
	waitHeight(t, k, a.Height())
	if got := k.Invoice(store, inv.ID); got.Status != "New" || got.TotalPaid != 0 {
		t.Fatalf("after the double spend won: %+v", got)
	}
	kassatest.Eventually(t, 10*time.Second, "health's alert for the reverted settlement", func() error {
		if h := k.Health().Chain; h.Warning == "" {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})
	expectHooks(t, hooks, inv.ID, "New", "Processing", "Settled")
}

// transfers counts the invoice's transfer lines in the store's ledger.
func transfers(t *testing.T, k *harness.Kassa, store harness.Store, invoiceID string) int {
	t.Helper()
	var raw json.RawMessage
	k.Do("GET", "/api/v1/stores/"+store.StoreID+"/transactions", store.APIKey, nil, &raw)
	var list []map[string]any
	if err := json.Unmarshal(raw, &list); err != nil {
		var wrapped struct {
			Data []map[string]any `json:"data"`
		}
		if err := json.Unmarshal(raw, &wrapped); err != nil {
			t.Fatalf("transactions %s: %v", raw, err)
		}
		list = wrapped.Data
	}
	n := 0
	for _, tx := range list {
		if tx["invoiceId"] == invoiceID && fmt.Sprint(tx["type"]) == "transfer" {
			n++
		}
	}
	return n
}
