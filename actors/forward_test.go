package actors

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/lnd"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/lnurl"
	"github.com/kassapay/kassa/persistence"
)

// The ports the forwarder is given, and what implements them.
var (
	_ LightningPayer     = (*lnd.Node)(nil)
	_ LightningPayer     = (*lnsim.Payer)(nil)
	_ LightningAddresses = lnurl.Addresses{}
)

// merchant is a store's own Lightning wallet: a simulated node behind an
// LNURL-pay server, as a Lightning address is.
type merchant struct {
	node     *lnsim.Node
	srv      *httptest.Server
	tries    atomic.Int64 // pay requests asked for
	payReqs  atomic.Int64 // pay request answers given
	invoices atomic.Int64 // invoices made
	down     atomic.Bool  // the LNURL server answers 503
	asked    atomic.Int64 // invoices asked for (before gate)
	// gate, when set, is called as an invoice is asked for, before it
	// is made: a test holds requests there.
	gate func()

	mu          sync.Mutex
	minSendable kassa.MSat
	maxSendable kassa.MSat
	hashes      []string
	amounts     map[string]kassa.MSat // by hash
	comments    []string
}

func newMerchant(t *testing.T) *merchant {
	node, err := lnsim.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &merchant{node: node, minSendable: 1000, maxSendable: 100_000_000_000, amounts: map[string]kassa.MSat{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/lnurlp/shop", func(w http.ResponseWriter, r *http.Request) {
		m.tries.Add(1)
		if m.down.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		m.mu.Lock()
		min, max := m.minSendable, m.maxSendable
		m.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{
			"tag": "payRequest", "callback": "http://" + r.Host + "/cb", "minSendable": min,
			"maxSendable": max, "metadata": `[["text/plain","shop"]]`, "commentAllowed": 100,
		})
		m.payReqs.Add(1)
	})
	mux.HandleFunc("GET /cb", func(w http.ResponseWriter, r *http.Request) {
		m.asked.Add(1)
		if m.gate != nil {
			m.gate()
		}
		amount, _ := strconv.ParseInt(r.URL.Query().Get("amount"), 10, 64)
		li, err := node.CreateInvoice(r.Context(), kassa.MSat(amount), "shop", time.Hour)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		m.mu.Lock()
		m.hashes = append(m.hashes, li.PaymentHash)
		m.amounts[li.PaymentHash] = kassa.MSat(amount)
		m.comments = append(m.comments, r.URL.Query().Get("comment"))
		m.mu.Unlock()
		m.invoices.Add(1)
		json.NewEncoder(w).Encode(map[string]any{"pr": li.PaymentRequest, "routes": []any{}})
	})
	m.srv = httptest.NewServer(mux)
	t.Cleanup(m.srv.Close)
	return m
}

func (m *merchant) address() string { return "shop@" + strings.TrimPrefix(m.srv.URL, "http://") }

// paid returns the payment hashes of the merchant's invoices that were
// paid.
func (m *merchant) paid() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for _, h := range m.hashes {
		if _, ok := m.node.Preimage(h); ok {
			out = append(out, h)
		}
	}
	return out
}

type forwardHarness struct {
	*harness
	merchant *merchant
	payer    *lnsim.Payer
	fwd      *Forwarder
}

func newForwardHarness(t *testing.T, db *persistence.DB, clock *kassatest.TestClock, m *merchant, payer *lnsim.Payer, configure ...func(*ForwarderConfig)) *forwardHarness {
	t.Helper()
	cfg := ForwarderConfig{
		Journal: db, Store: db, Reader: db, Payer: payer, Values: db,
		Addresses: lnurl.Addresses{Client: lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})},
		Clock:     clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, c := range configure {
		c(&cfg)
	}
	fwd := NewForwarder(cfg)
	t.Cleanup(fwd.Shutdown)
	h := newHarnessWith(t, db, clock, func(c *Config) { c.Forwarder = fwd })
	return &forwardHarness{harness: h, merchant: m, payer: payer, fwd: fwd}
}

func (h *forwardHarness) createStore() *kassa.Store {
	h.t.Helper()
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1),
		ConfirmationsRequired: 1, LightningAddress: h.merchant.address(),
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
	return st
}

// transfer returns the transfer line of an invoice.
func (h *forwardHarness) transfer(invoiceID string) kassa.Transaction {
	h.t.Helper()
	txs, err := h.db.TransactionsByInvoice(context.Background(), invoiceID)
	if err != nil {
		h.t.Fatal(err)
	}
	for _, tx := range txs {
		if tx.Type == kassa.TransactionTransfer {
			return tx
		}
	}
	h.t.Fatalf("invoice %s has no transfer line", invoiceID)
	return kassa.Transaction{}
}

func (h *forwardHarness) waitSettled(invoiceID string) kassa.Transaction {
	h.t.Helper()
	var tx kassa.Transaction
	eventually(h.t, "the transfer of "+invoiceID+" to settle", func() bool {
		tx = h.transfer(invoiceID)
		return tx.Status == kassa.TransactionSettled
	})
	return tx
}

// retryUntilSettled steps the clock through the armed timers until the
// transfer of invoiceID settles; the first retry is due ForwardRetryMin
// after the failure, so the clock never needs to pass twice that.
func (h *forwardHarness) retryUntilSettled(clock *kassatest.TestClock, invoiceID string) kassa.Transaction {
	h.t.Helper()
	var tx kassa.Transaction
	clock.StepUntil(h.t, "the retried forward of "+invoiceID+" to settle", clock.Now().Add(2*kassa.ForwardRetryMin), func() bool {
		tx = h.transfer(invoiceID)
		return tx.Status == kassa.TransactionSettled
	})
	return tx
}

func TestForwardPaysTheStoresLightningAddress(t *testing.T) {
	m := newMerchant(t)
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node))
	h.createStore()
	inv := h.invoice("10", kassa.EUR) // 20,000 sat at 50,000 EUR/BTC
	h.payLightning(inv, inv.Amount)

	// Right after the settle the transfer is Pending: the money is on the
	// service's node.
	tx := h.waitSettled(inv.ID)
	paid := m.paid()
	if len(paid) != 1 {
		t.Fatalf("merchant invoices paid: %d, want 1", len(paid))
	}
	if tx.Hash != paid[0] || tx.DepositMethod != kassa.MethodLightning || tx.FullAmount != inv.Amount || tx.Amount != inv.Amount {
		t.Fatalf("transfer %+v; want hash %s, amount = full amount %d (no routing fee)", tx, paid[0], inv.Amount)
	}
	if h.payer.Sent() != 1 {
		t.Fatalf("%d payments sent, want 1", h.payer.Sent())
	}
}

func TestTransferIsPendingUntilForwarded(t *testing.T) {
	m := newMerchant(t)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, lnsim.NewPayer(m.node))
	h.createStore()
	m.down.Store(true)
	tries := m.tries.Load()
	inv := h.invoice("10", kassa.EUR)
	h.payLightning(inv, inv.Amount)
	if tx := h.transfer(inv.ID); tx.Status != kassa.TransactionPending || tx.Hash != "" {
		t.Fatalf("transfer right after the settle: %+v, want Pending without a hash", tx)
	}
	// The address is down: the actor asked (positive control) and waits.
	eventually(t, "the forward actor to try the address", func() bool { return m.tries.Load() > tries })
	if tx := h.transfer(inv.ID); tx.Status != kassa.TransactionPending || h.payer.Sent() != 0 {
		t.Fatalf("transfer while the address is down: %+v", tx)
	}
	m.down.Store(false)
	h.retryUntilSettled(clock, inv.ID)
}

func TestForwardRetriedWhileTheMerchantNodeIsOffline(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	var offline atomic.Bool
	offline.Store(true)
	payer.Before = func(string) error {
		if offline.Load() {
			return errors.New("no route: the merchant's node is offline")
		}
		return nil
	}
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, payer)
	h.createStore()
	inv := h.invoice("10", kassa.EUR)
	h.payLightning(inv, inv.Amount)

	eventually(t, "a failed attempt", func() bool { return payer.Sent() == 1 })
	if tx := h.transfer(inv.ID); tx.Status != kassa.TransactionPending {
		t.Fatalf("transfer after a failed attempt: %+v", tx)
	}
	offline.Store(false)
	tx := h.retryUntilSettled(clock, inv.ID)
	paid := m.paid()
	if len(paid) != 1 || tx.Hash != paid[0] {
		t.Fatalf("paid %v, transfer hash %s: want exactly one merchant invoice paid, the transfer's", paid, tx.Hash)
	}
	if payer.Sent() != 2 {
		t.Fatalf("%d payments sent, want 2 (one failed, one retried)", payer.Sent())
	}
}

func TestAmountsBelowTheMinimumAccumulate(t *testing.T) {
	m := newMerchant(t)
	m.minSendable = 30_000_000 // 30,000 sat
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node))
	h.createStore()
	asked := m.payReqs.Load()           // the store's creation read the bounds
	first := h.invoice("10", kassa.EUR) // 20,000 sat
	h.payLightning(first, first.Amount)
	eventually(t, "the forward actor to read the address's minimum", func() bool { return m.payReqs.Load() > asked })
	if m.invoices.Load() != 0 || h.transfer(first.ID).Status != kassa.TransactionPending {
		t.Fatal("an amount below the minimum was forwarded")
	}
	second := h.invoice("10", kassa.EUR)
	h.payLightning(second, second.Amount)
	a, b := h.waitSettled(first.ID), h.waitSettled(second.ID)
	paid := m.paid()
	if len(paid) != 1 || a.Hash != paid[0] || b.Hash != paid[0] {
		t.Fatalf("paid %v; transfers %s and %s: want both in one forward", paid, a.Hash, b.Hash)
	}
	if a.Amount+b.Amount != first.Amount+second.Amount {
		t.Fatalf("amounts %d + %d", a.Amount, b.Amount)
	}
}

// A crash after an attempt was recorded: on restart the node is asked
// what became of it, and the invoice is paid at most once.
func TestRecordedAttemptIsTrackedAfterARestart(t *testing.T) {
	for _, alreadyPaid := range []bool{true, false} {
		t.Run("paid="+strconv.FormatBool(alreadyPaid), func(t *testing.T) {
			m := newMerchant(t)
			db := openMem(t)
			clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
			payer := lnsim.NewPayer(m.node)
			h := newForwardHarness(t, db, clock, m, payer)
			h.createStore()
			m.down.Store(true) // the first run never gets to pay
			tries := m.tries.Load()
			inv := h.invoice("10", kassa.EUR)
			h.payLightning(inv, inv.Amount)
			eventually(t, "the first run to try the address", func() bool { return m.tries.Load() > tries })
			h.fwd.Shutdown()
			m.down.Store(false)

			// What the crashed run had recorded: an attempt with its invoice.
			var queued []kassa.QueuedTransfer
			db.QueuedTransfers(context.Background(), h.store.ID, func(q kassa.QueuedTransfer) error { queued = append(queued, q); return nil })
			if len(queued) != 1 {
				t.Fatalf("%d queued transfers", len(queued))
			}
			c := lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})
			pr, err := c.FetchPayRequest(context.Background(), m.address())
			if err != nil {
				t.Fatal(err)
			}
			li, err := c.Invoice(context.Background(), pr, queued[0].Amount, "")
			if err != nil {
				t.Fatal(err)
			}
			now := clock.Now()
			fw := &kassa.Forward{ID: "fwd_crashed", StoreID: h.store.ID, Status: kassa.ForwardOpen, Address: m.address(),
				Transfers: queued, Amount: queued[0].Amount, CreatedAt: now, UpdatedAt: now}
			fw.Attempt(li.PaymentRequest, li.PaymentHash, li.Amount, 0, now)
			b := db.NewBatch()
			b.(kassa.ForwardBatch).PutForward(fw)
			if err := db.Commit(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			if alreadyPaid {
				if _, err := payer.PayInvoice(context.Background(), li.PaymentRequest, 0, time.Second); err != nil {
					t.Fatal(err)
				}
			}
			sentBefore := payer.Sent()

			h2 := newForwardHarness(t, db, clock, m, payer)
			if n, err := h2.fwd.Recover(context.Background()); err != nil || n != 1 {
				t.Fatalf("recover: %d stores, %v", n, err)
			}
			tx := h2.waitSettled(inv.ID)
			if tx.Hash != li.PaymentHash {
				t.Fatalf("transfer hash %s, want the recorded attempt's %s", tx.Hash, li.PaymentHash)
			}
			want := 1
			if alreadyPaid {
				want = 0
			}
			if got := payer.Sent() - sentBefore; got != want {
				t.Fatalf("%d payments sent after the restart, want %d", got, want)
			}
			if paid := m.paid(); len(paid) != 1 {
				t.Fatalf("merchant invoices paid: %v", paid)
			}
		})
	}
}

func TestForwardRules(t *testing.T) {
	q := func(id int64, amount kassa.MSat) kassa.QueuedTransfer {
		return kassa.QueuedTransfer{TransactionID: id, Amount: amount}
	}
	take, total := kassa.PlanForward([]kassa.QueuedTransfer{q(1, 500), q(2, 400)}, 1000, 10_000)
	if take != nil || total != 0 {
		t.Fatalf("below the minimum: %v %d", take, total)
	}
	take, total = kassa.PlanForward([]kassa.QueuedTransfer{q(1, 500), q(2, 600), q(3, 9000)}, 1000, 10_000)
	if len(take) != 2 || total != 1100 {
		t.Fatalf("up to the maximum: %v %d", take, total)
	}
	take, total = kassa.PlanForward([]kassa.QueuedTransfer{q(1, 20_000), q(2, 600)}, 1000, 10_000)
	if len(take) != 1 || total != 20_000 {
		t.Fatalf("one above the maximum alone: %v %d", take, total)
	}
	if got := kassa.ForwardFeeLimit(1_000_000, decimal.NewFromInt(1), 5000); got != 5000 {
		t.Fatalf("fee limit capped: %d", got)
	}
	if got := kassa.ForwardFeeLimit(100_000, decimal.NewFromInt(1), 5000); got != 1000 {
		t.Fatalf("fee limit 1%%: %d", got)
	}
	if kassa.ForwardRetryAfter(1) != kassa.ForwardRetryMin || kassa.ForwardRetryAfter(100) != kassa.ForwardRetryMax {
		t.Fatal("retry bounds")
	}
	fw := &kassa.Forward{Amount: 3000, InvoiceAmount: 2900, PaymentHash: "h",
		Transfers: []kassa.QueuedTransfer{q(1, 1000), q(2, 2000)}}
	lines := fw.SettledTransfers([]kassa.Transaction{{ID: 1, FullAmount: 1}, {ID: 2, FullAmount: 2}})
	// 100 msat of routing fee: 33 to the first, 67 to the second.
	if lines[0].Amount != 0 || lines[1].Amount != 1 || lines[0].Hash != "h" || lines[1].Status != kassa.TransactionSettled {
		t.Fatalf("settled lines %+v", lines)
	}
}

func TestStoreTakesItsWalletBoundsFromTheLightningAddress(t *testing.T) {
	m := newMerchant(t)
	m.minSendable = 12_000
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node))
	st := h.createStore()
	if st.WalletMinSendable != 12_000 || st.WalletMaxSendable != 100_000_000_000 {
		t.Fatalf("wallet bounds %d..%d, want the address's 12000..100000000000", st.WalletMinSendable, st.WalletMaxSendable)
	}
	stored, err := h.db.Store(context.Background(), st.ID)
	if err != nil || stored.WalletMinSendable != 12_000 {
		t.Fatalf("stored store: %+v %v", stored, err)
	}
	m.down.Store(true)
	_, err = h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "Down", Currency: kassa.EUR, LightningAddress: m.address()})
	if kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("a store whose Lightning address does not answer: %v, want invalid", err)
	}
}

// An on-chain payment to the service's wallet (the store has no xpub)
// is forwarded once it settles at the store's depth, by Lightning; a
// mempool sighting forwards nothing.
func TestOnchainPaymentWithoutXpubIsForwarded(t *testing.T) {
	m := newMerchant(t)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, lnsim.NewPayer(m.node), func(c *ForwarderConfig) { c.Onchain = true })
	h.createStore()
	inv := h.invoice("10", kassa.EUR)
	h.pay(inv, inv.Amount, 0, "aa")
	// Positive control: the invoice took the mempool payment.
	if got := h.get(inv.ID); got.Status != kassa.InvoiceProcessing {
		t.Fatalf("invoice after the mempool sighting: %s", got.Status)
	}
	if txs, _ := h.db.TransactionsByInvoice(context.Background(), inv.ID); len(txs) != 0 || h.payer.Sent() != 0 {
		t.Fatalf("lines or payments before the confirmation: %+v, %d sent", txs, h.payer.Sent())
	}
	h.pay(inv, inv.Amount, 1, "aa")
	tx := h.waitSettled(inv.ID)
	paid := m.paid()
	if len(paid) != 1 || tx.Hash != paid[0] || tx.DepositMethod != kassa.MethodLightning || tx.FullAmount != inv.Amount {
		t.Fatalf("transfer %+v; merchant paid %v", tx, paid)
	}
	// The confirmation delivered again (a replay) forwards nothing more.
	h.pay(inv, inv.Amount, 2, "aa")
	if err := h.sys.Service.HandleChainEvent(context.Background(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: kassa.Payment{
		ID: "aa:0", TxID: "aa", Amount: inv.Amount, Destination: inv.OnchainAddress, Confirmations: 1,
	}}); err != nil {
		t.Fatal(err)
	}
	second := h.invoice("10", kassa.EUR) // positive control: a later forward
	h.payLightning(second, second.Amount)
	h.waitSettled(second.ID)
	if got := len(m.paid()); got != 2 || h.payer.Sent() != 2 {
		t.Fatalf("merchant invoices paid %d, payments sent %d: want 2 and 2", got, h.payer.Sent())
	}
}

// Without a service wallet behind on-chain addresses (forwarding of
// on-chain money off), or for a store with an xpub, an on-chain payment
// reached the store's own wallet: its transfer is Settled at once and
// nothing is forwarded.
func TestOnchainPaymentToTheStoresWalletIsNotForwarded(t *testing.T) {
	for _, withXpub := range []bool{false, true} {
		t.Run("xpub="+strconv.FormatBool(withXpub), func(t *testing.T) {
			m := newMerchant(t)
			// With an xpub the forwarder takes on-chain money, but the
			// store's addresses are its own.
			h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node),
				func(c *ForwarderConfig) { c.Onchain = withXpub })
			settings := kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1, LightningAddress: m.address()}
			if withXpub {
				settings.Xpub = testTpub(t)
			}
			st, err := h.sys.Service.CreateStore(context.Background(), settings)
			if err != nil {
				t.Fatal(err)
			}
			h.store = st
			inv := h.invoice("10", kassa.EUR)
			h.pay(inv, inv.Amount, 1, "bb")
			if tx := h.transfer(inv.ID); tx.Status != kassa.TransactionSettled || tx.DepositMethod != kassa.MethodOnchain || tx.Hash != "bb" {
				t.Fatalf("transfer %+v, want Settled on-chain with the txid", tx)
			}
			second := h.invoice("10", kassa.EUR)
			h.payLightning(second, second.Amount)
			h.waitSettled(second.ID) // positive control: the forwarder runs
			if h.payer.Sent() != 1 {
				t.Fatalf("%d payments sent, want 1 (the Lightning invoice's)", h.payer.Sent())
			}
		})
	}
}

// The store's forward fee limit is what the route may cost: the forward
// asks the node for a route within it, pays an invoice smaller by the
// route's fee, and the transfer line shows the fee taken off.
func TestForwardFeeLimitIsTheStoresSetting(t *testing.T) {
	m := newMerchant(t)
	payer := lnsim.NewPayer(m.node)
	var limits []kassa.MSat
	var mu sync.Mutex
	payer.Estimate = func(_ kassa.Payee, _, feeLimit kassa.MSat) (kassa.MSat, error) {
		mu.Lock()
		defer mu.Unlock()
		limits = append(limits, feeLimit)
		return 30_000, nil // a route costing 30 sat
	}
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, payer)
	half := decimal.RequireFromString("0.5")
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1, LightningAddress: m.address(),
		ForwardFeePercent: &half, ForwardFeeMax: 80,
	})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	small := h.invoice("10", kassa.EUR) // 20,000 sat: 0.5% is 100 sat, capped at 80
	h.payLightning(small, small.Amount)
	tx := h.waitSettled(small.ID)
	if tx.Amount != small.Amount-30 || tx.FullAmount != small.Amount {
		t.Fatalf("transfer %+v: want the 30-sat routing fee taken off %d sat", tx, small.Amount)
	}
	other, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Default", Currency: kassa.EUR, ConfirmationsRequired: 1, LightningAddress: m.address(),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.store = other
	def := h.invoice("2", kassa.EUR) // 4,000 sat: the default 1% is 40 sat
	h.payLightning(def, def.Amount)
	h.waitSettled(def.ID)
	mu.Lock()
	defer mu.Unlock()
	if len(limits) != 2 || limits[0] != 80_000 || limits[1] != 40_000 {
		t.Fatalf("fee limits asked of the node %v, want [80000 40000] msat", limits)
	}
}

// A transfer above the address's maxSendable is paid in parts, each its
// own invoice recorded before it is paid; a part that fails is paid again
// with a new invoice, and no part is paid twice.
func TestTransferAboveTheMaximumIsPaidInParts(t *testing.T) {
	m := newMerchant(t)
	m.maxSendable = 8_000_000 // 8,000 sat
	payer := lnsim.NewPayer(m.node)
	var calls atomic.Int64
	payer.Before = func(string) error {
		if calls.Add(1) == 2 {
			return errors.New("temporary channel failure")
		}
		return nil
	}
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := newForwardHarness(t, openMem(t), clock, m, payer)
	h.createStore()
	inv := h.invoice("10", kassa.EUR) // 20,000 sat: three parts
	h.payLightning(inv, inv.Amount)
	eventually(t, "the failed second part", func() bool { return payer.Sent() >= 2 })
	tx := h.retryUntilSettled(clock, inv.ID)

	paid := m.paid()
	if len(paid) != 3 {
		t.Fatalf("merchant invoices paid: %v, want 3 parts", paid)
	}
	m.mu.Lock()
	var sum kassa.MSat
	for _, hash := range paid {
		if a := m.amounts[hash]; a > m.maxSendable || a <= 0 {
			t.Errorf("part %s of %d msat, above the maximum", hash, a)
		}
		sum += m.amounts[hash]
	}
	m.mu.Unlock()
	if sum != inv.Amount.MSat() {
		t.Fatalf("parts add up to %d msat, want %d", sum, inv.Amount.MSat())
	}
	if tx.Hash != strings.Join(paid, ",") || tx.Amount != inv.Amount || tx.FullAmount != inv.Amount {
		t.Fatalf("transfer %+v; want the parts' hashes %v and the full amount", tx, paid)
	}
	if payer.Sent() != 4 {
		t.Fatalf("%d payments sent, want 4 (three parts, one retried)", payer.Sent())
	}
}

func TestNextPart(t *testing.T) {
	for _, c := range []struct{ remaining, min, max, want kassa.MSat }{
		{5000, 1000, 10_000, 5000},         // fits
		{500, 1000, 10_000, 0},             // below the minimum
		{20_000, 1000, 8000, 6667},         // three parts: 6667, 6667, 6666
		{13_333, 1000, 8000, 6667},         // what is left after the first
		{6666, 1000, 8000, 6666},           // the last
		{16_000, 1000, 8000, 8000},         // two full parts
		{10_000, 6000, 8000, 0},            // two parts of 5000 are below the minimum
		{100_000_000, 1, 100_000, 100_000}, // many parts
	} {
		if got := kassa.NextPart(c.remaining, c.min, c.max); got != c.want {
			t.Errorf("NextPart(%d, %d, %d) = %d, want %d", c.remaining, c.min, c.max, got, c.want)
		}
	}
}

// An invoice of a store with an xpub paid partly on-chain (to the
// store's own wallet) and then in full by Lightning forwards only the
// Lightning payment: the on-chain part reached the store directly and
// is not paid out a second time from the service's node.
func TestMixedPaymentForwardsOnlyWhatTheServiceReceived(t *testing.T) {
	m := newMerchant(t)
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node))
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1, LightningAddress: m.address(), Xpub: testTpub(t),
	})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	inv := h.invoice("10", kassa.EUR) // 20,000 sat
	h.pay(inv, 5000, 1, "cc")         // to the store's xpub address
	h.payLightning(inv, inv.Amount)
	tx := h.waitSettled(inv.ID)
	paid := m.paid()
	if len(paid) != 1 {
		t.Fatalf("merchant invoices paid: %v", paid)
	}
	m.mu.Lock()
	forwarded := m.amounts[paid[0]]
	m.mu.Unlock()
	if forwarded != inv.Amount.MSat() {
		t.Fatalf("forwarded %d msat, want the Lightning payment's %d (not the on-chain part again)", forwarded, inv.Amount.MSat())
	}
	if tx.FullAmount != inv.Amount+5000 || tx.Amount != inv.Amount+5000 || tx.DepositMethod != kassa.MethodLightning {
		t.Fatalf("transfer %+v: want %d sat paid and reached (5000 directly, the rest forwarded)", tx, inv.Amount+5000)
	}
}

// A crash in the middle of a split forward: one part paid and recorded,
// the next part's invoice recorded and perhaps paid. After the restart
// the recorded part is looked up, never paid again, and the rest is
// paid; every part is paid exactly once.
func TestSplitForwardResumesAfterARestart(t *testing.T) {
	for _, alreadyPaid := range []bool{true, false} {
		t.Run("paid="+strconv.FormatBool(alreadyPaid), func(t *testing.T) {
			m := newMerchant(t)
			m.maxSendable = 8_000_000
			db := openMem(t)
			clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
			payer := lnsim.NewPayer(m.node)
			h := newForwardHarness(t, db, clock, m, payer)
			h.createStore()
			m.down.Store(true) // the first run never gets to pay
			tries := m.tries.Load()
			inv := h.invoice("10", kassa.EUR) // 20,000 sat: three parts
			h.payLightning(inv, inv.Amount)
			eventually(t, "the first run to try the address", func() bool { return m.tries.Load() > tries })
			h.fwd.Shutdown()
			m.down.Store(false)

			// What the crashed run had recorded: the first part paid, the
			// second one's invoice recorded.
			var queued []kassa.QueuedTransfer
			db.QueuedTransfers(context.Background(), h.store.ID, func(q kassa.QueuedTransfer) error { queued = append(queued, q); return nil })
			if len(queued) != 1 {
				t.Fatalf("%d queued transfers", len(queued))
			}
			c := lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})
			pr, err := c.FetchPayRequest(context.Background(), m.address())
			if err != nil {
				t.Fatal(err)
			}
			now := clock.Now()
			fw := &kassa.Forward{ID: "fwd_split", StoreID: h.store.ID, Status: kassa.ForwardOpen, Address: m.address(),
				Transfers: queued, Amount: queued[0].Amount, CreatedAt: now, UpdatedAt: now}
			for i := range 2 {
				part := kassa.NextPart(fw.Remaining(), pr.MinSendable, pr.MaxSendable)
				li, err := c.Invoice(context.Background(), pr, part, "")
				if err != nil {
					t.Fatal(err)
				}
				fw.AttemptPart(li.PaymentRequest, li.PaymentHash, part, li.Amount, 0, now)
				if i == 0 || alreadyPaid {
					if _, err := payer.PayInvoice(context.Background(), li.PaymentRequest, 0, time.Second); err != nil {
						t.Fatal(err)
					}
				}
				if i == 0 {
					fw.PartPaid(0, now)
				}
			}
			b := db.NewBatch()
			b.(kassa.ForwardBatch).PutForward(fw)
			if err := db.Commit(context.Background(), b); err != nil {
				t.Fatal(err)
			}
			recorded := fw.PaymentHash
			sentBefore := payer.Sent()

			h2 := newForwardHarness(t, db, clock, m, payer)
			if _, err := h2.fwd.Recover(context.Background()); err != nil {
				t.Fatal(err)
			}
			tx := h2.waitSettled(inv.ID)
			paid := m.paid()
			if len(paid) != 3 || !strings.Contains(tx.Hash, recorded) || tx.Hash != strings.Join(paid, ",") {
				t.Fatalf("merchant paid %v; transfer hash %q: want three parts, the recorded one among them", paid, tx.Hash)
			}
			want := 2 // the recorded part and the last one
			if alreadyPaid {
				want = 1
			}
			if got := payer.Sent() - sentBefore; got != want {
				t.Fatalf("%d payments sent after the restart, want %d", got, want)
			}
			if tx.Amount != inv.Amount {
				t.Fatalf("transfer amount %d, want %d", tx.Amount, inv.Amount)
			}
		})
	}
}
