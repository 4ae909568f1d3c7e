//go:build itest

package itest

import (
	"crypto/rand"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// env is a btcd in regtest with a funded wallet, and Kassa watching it
// with one store whose xpub is fresh.
type env struct {
	t      *testing.T
	node   *harness.Node
	wallet *harness.Wallet
	kassa  *harness.Kassa
	store  harness.Store
	hooks  *harness.Webhooks
	args   []string
}

// testXpub returns a fresh account tpub for regtest.
func testXpub(t *testing.T) string {
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		t.Fatal(err)
	}
	master, err := hdkeychain.NewMaster(seed, &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := master.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	return pub.String()
}

// chainURL is the --chain value for node, polled every 100 ms.
func chainURL(n *harness.Node) string { return n.URL() + "&poll=100ms" }

// newEnv starts btcd, mines coins for the wallet (coins mature payments
// the test can make), starts Kassa with args and creates a store that
// needs confirmations.
func newEnv(t *testing.T, confirmations, coins int, args ...string) *env {
	t.Helper()
	e := &env{t: t, wallet: harness.NewWallet(t, harness.ParamsOf("regtest"))}
	e.node = harness.StartNode(t, harness.NodeConfig{MiningAddr: e.wallet.Address()})
	e.node.Mine(100 + coins)
	e.args = append([]string{"--chain", chainURL(e.node)}, args...)
	e.kassa = harness.StartKassa(t, "", e.args...)
	e.store = e.kassa.CreateStore("--name", "Chain shop", "--xpub", testXpub(t), "--confirmations", strconv.Itoa(confirmations))
	e.hooks = e.kassa.ListenWebhooks(e.store)
	return e
}

func (e *env) pay(inv harness.Invoice, sats int64) string {
	e.t.Helper()
	tx := e.wallet.Pay(e.t, e.node, harness.Output{Address: inv.OnchainAddress, Amount: sats})
	return tx.TxHash().String()
}

func (e *env) waitPayments(store harness.Store, id string, want func([]harness.Payment) error) []harness.Payment {
	e.t.Helper()
	var ps []harness.Payment
	kassatest.Eventually(e.t, 60*time.Second, "payments of "+id, func() error {
		ps = e.kassa.Payments(store, id)
		return want(ps)
	})
	return ps
}

func expectHooks(t *testing.T, hooks *harness.Webhooks, id string, want ...string) {
	t.Helper()
	if got := hooks.Events(id); !slices.Equal(got, want) {
		t.Fatalf("webhooks %v, want %v", got, want)
	}
}

func TestProcessingThenSettled(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	if got := e.kassa.Invoice(e.store, inv.ID); got.DerivationIndex == nil || *got.DerivationIndex != 0 || !strings.HasPrefix(got.OnchainAddress, "bcrt1q") {
		t.Fatalf("invoice address %s index %v, want m/0/0 P2WPKH", got.OnchainAddress, got.DerivationIndex)
	}
	txid := e.pay(inv, 50_000)
	e.hooks.Wait(inv.ID, "Processing")
	e.kassa.WaitStatus(e.store, inv.ID, "Processing", "")

	e.node.Mine(1)
	e.hooks.Wait(inv.ID, "Settled")
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "None")
	expectHooks(t, e.hooks, inv.ID, "New", "Processing", "Settled")

	ps := e.kassa.Payments(e.store, inv.ID)
	if len(ps) != 1 {
		t.Fatalf("payments %+v", ps)
	}
	p := ps[0]
	if p.TransactionID != txid || p.Amount != 50_000 || p.Destination != inv.OnchainAddress || p.Status != "Settled" ||
		p.Confirmations != 1 || p.BlockHeight != e.node.Height() || p.NetworkFee <= 0 || p.FeeRate < 1 {
		t.Fatalf("payment record %+v (tx %s)", p, txid)
	}
	h := e.kassa.Health().Chain
	if h.Backend != "rpc" || h.Network != "regtest" {
		t.Fatalf("health %+v", h)
	}
	// The node's kind is learnt by the watcher once the node answered, and
	// health is read from it (never from a call to the node per request).
	kassatest.Eventually(t, 10*time.Second, "health synced", func() error {
		h := e.kassa.Health().Chain
		if h.Node != "btcd" || !h.Synced || h.Height != e.node.Height() || h.BestHash != e.node.BestHash().String() || h.Lag != 0 {
			return fmt.Errorf("health %+v", h)
		}
		return nil
	})
}

func TestConfirmationsZeroAndThree(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 0, 2)
	inv := e.kassa.CreateInvoice(e.store, 40_000)
	e.pay(inv, 40_000)
	e.hooks.Wait(inv.ID, "Settled")
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "None")
	expectHooks(t, e.hooks, inv.ID, "New", "Processing", "Settled")

	three := e.kassa.CreateStore("--name", "Three", "--xpub", testXpub(t), "--confirmations", "3")
	hooks := e.kassa.ListenWebhooks(three)
	inv3 := e.kassa.CreateInvoice(three, 40_000)
	e.pay(inv3, 40_000)
	hooks.Wait(inv3.ID, "Processing")
	e.node.Mine(2)
	e.waitPayments(three, inv3.ID, func(ps []harness.Payment) error {
		if len(ps) != 1 || ps[0].Confirmations != 2 {
			return fmt.Errorf("payments %+v", ps)
		}
		return nil
	})
	if got := e.kassa.Invoice(three, inv3.ID); got.Status != "Processing" {
		t.Fatalf("after 2 of 3 confirmations: %s", got.Status)
	}
	e.node.Mine(1)
	hooks.Wait(inv3.ID, "Settled")
	expectHooks(t, hooks, inv3.ID, "New", "Processing", "Settled")
}

func TestTwoPaymentsAddUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 3)
	inv := e.kassa.CreateInvoice(e.store, 60_000)
	e.pay(inv, 25_000)
	e.waitPayments(e.store, inv.ID, func(ps []harness.Payment) error {
		if len(ps) != 1 {
			return fmt.Errorf("%d payments", len(ps))
		}
		return nil
	})
	if got := e.kassa.Invoice(e.store, inv.ID); got.Status != "New" || got.TotalPaid != 25_000 {
		t.Fatalf("after a partial payment: %+v", got)
	}
	e.pay(inv, 35_000)
	e.hooks.Wait(inv.ID, "Processing")
	e.node.Mine(1)
	e.hooks.Wait(inv.ID, "Settled")
	got := e.kassa.WaitStatus(e.store, inv.ID, "Settled", "None")
	if got.TotalPaid != 60_000 {
		t.Fatalf("total paid %d", got.TotalPaid)
	}
	expectHooks(t, e.hooks, inv.ID, "New", "Processing", "Settled")
}

func TestOverpayment(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	e.pay(inv, 80_000)
	e.hooks.Wait(inv.ID, "Processing")
	e.node.Mine(1)
	e.hooks.Wait(inv.ID, "Settled")
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "Overpaid")
	expectHooks(t, e.hooks, inv.ID, "New", "Processing", "Settled/Overpaid")
}

func TestUnderpaymentThenExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, "--invoice-expiry", "4s")
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	e.pay(inv, 20_000)
	e.node.Mine(1)
	e.waitPayments(e.store, inv.ID, func(ps []harness.Payment) error {
		if len(ps) != 1 || ps[0].Confirmations != 1 {
			return fmt.Errorf("payments %+v", ps)
		}
		return nil
	})
	e.hooks.Wait(inv.ID, "Expired")
	e.kassa.WaitStatus(e.store, inv.ID, "Expired", "Underpaid")
	expectHooks(t, e.hooks, inv.ID, "New", "Expired/Underpaid")
}

func TestPaymentAfterExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2, "--invoice-expiry", "3s")
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	e.hooks.Wait(inv.ID, "Expired")
	e.pay(inv, 50_000)
	e.node.Mine(1)
	e.hooks.Wait(inv.ID, "Settled")
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "PaidAfterExpiration")
	expectHooks(t, e.hooks, inv.ID, "New", "Expired", "Settled/PaidAfterExpiration")
}

// TestKilledWhileBlocksAreMined: Kassa is killed; the payment is made and
// confirmed while it is down; after the restart the watcher resumes from
// its cursor and finds it.
func TestKilledWhileBlocksAreMined(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2, 2)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	e.kassa.Kill()
	e.pay(inv, 50_000)
	e.node.Mine(3)
	k := harness.StartKassa(t, e.kassa.Data, e.args...)
	got := k.WaitStatus(e.store, inv.ID, "Settled", "None")
	if got.TotalPaid != 50_000 {
		t.Fatalf("total paid %d", got.TotalPaid)
	}
	// The webhook registered before the crash still receives the event.
	e.hooks.Wait(inv.ID, "Settled")
}

// TestTaprootStore: a store with --xpub-type taproot gets BIP86 P2TR
// addresses, and a payment to one settles.
func TestTaprootStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 2)
	store := e.kassa.CreateStore("--name", "Taproot", "--xpub", testXpub(t), "--xpub-type", "taproot", "--confirmations", "1")
	hooks := e.kassa.ListenWebhooks(store)
	inv := e.kassa.CreateInvoice(store, 30_000)
	if !strings.HasPrefix(inv.OnchainAddress, "bcrt1p") {
		t.Fatalf("taproot store address %s", inv.OnchainAddress)
	}
	e.pay(inv, 30_000)
	hooks.Wait(inv.ID, "Processing")
	e.node.Mine(1)
	hooks.Wait(inv.ID, "Settled")
	e.kassa.WaitStatus(store, inv.ID, "Settled", "None")
}

// TestStoreRefusesXpubOfAnotherNetwork: a mainnet key cannot make a store
// on a regtest node: no store exists whose invoices could get no address.
func TestStoreRefusesXpubOfAnotherNetwork(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 0)
	out, err := e.kassa.CLI("store", "create", "--name", "Wrong net", "--xpub",
		"zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs")
	if err == nil || !strings.Contains(err.Error(), "mainnet") {
		t.Fatalf("store create with a mainnet zpub on regtest: %q, %v", out, err)
	}
}

// TestPaidAgainAfterRestart: an invoice settles, Kassa restarts, and the
// customer pays the same address again inside the monitoring window. The
// second payment is money received: it must be found after the restart
// as it would have been before it, and recorded.
func TestPaidAgainAfterRestart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 1, 3)
	inv := e.kassa.CreateInvoice(e.store, 50_000)
	e.pay(inv, 50_000)
	e.node.Mine(1)
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "None")
	e.kassa.Stop()
	e.kassa = harness.StartKassa(t, e.kassa.Data, e.args...)
	e.pay(inv, 20_000)
	e.node.Mine(1)
	e.waitPayments(e.store, inv.ID, func(ps []harness.Payment) error {
		if len(ps) != 2 || ps[1].Confirmations < 1 {
			return fmt.Errorf("payments %+v, want the second payment confirmed", ps)
		}
		return nil
	})
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "Overpaid")
}
