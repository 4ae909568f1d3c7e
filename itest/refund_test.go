//go:build itest

package itest

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// refundEnv is a regtest network on loopback for refunds: btcd, the
// service's lnd (Kassa's) and a customer's lnd, with a channel each way
// (the customer pays invoices over one, the service pays refunds over
// the other); the customer's Lightning address is served by the LNURL
// test server on the customer's lnd.
type refundEnv struct {
	t                 *testing.T
	btcd              *harness.Node
	wallet            *harness.Wallet
	service, customer *harness.Lnd
	lnurl             *lnurlServer
	kassa             *harness.Kassa
	store             harness.Store
	key               string // a key of the store that may refund
	args              []string
}

func newRefundEnv(t *testing.T) *refundEnv {
	t.Helper()
	e := &refundEnv{t: t, wallet: harness.NewWallet(t, harness.ParamsOf("regtest"))}
	e.btcd = harness.StartNode(t, harness.NodeConfig{MiningAddr: e.wallet.Address(), TxIndex: true})
	e.btcd.Mine(103)
	e.service = harness.StartLnd(t, e.btcd, "service")
	e.customer = harness.StartLnd(t, e.btcd, "customer")
	e.wallet.Pay(t, e.btcd,
		harness.Output{Address: e.customer.NewAddress(), Amount: 10_000_000},
		harness.Output{Address: e.service.NewAddress(), Amount: 10_000_000})
	e.btcd.Mine(1)
	e.customer.WaitBalance(10_000_000)
	e.service.WaitBalance(10_000_000)
	e.customer.OpenChannel(e.service, 2_000_000)
	e.service.OpenChannel(e.customer, 2_000_000)
	// The first payment after a channel turns active can fail while its
	// edges reach the router: the refunds start once a route exists.
	e.service.WaitRoute(e.customer, 100_000)
	e.lnurl = newLNURLServer(t, e.customer)
	e.args = []string{"--chain", chainURL(e.btcd), "--lightning", e.service.URL(), "--invoice-expiry", "10m"}
	e.kassa = harness.StartKassa(t, "", e.args...)
	// A store without a Lightning address: its Lightning money stays
	// with the service; refunds come out of its prepaid balance.
	e.store = e.kassa.CreateStore("--name", "Refunding shop", "--confirmations", "1")
	if out, err := e.kassa.CLI("store", "topup", e.store.StoreID, "--amount", "500000"); err != nil {
		t.Fatalf("store topup: %v: %s", err, out)
	}
	e.key = e.refundKey()
	return e
}

// refundKey makes a key of the store that may refund, through the
// admin API (the store's first key leaves refunds out).
func (e *refundEnv) refundKey() string {
	e.t.Helper()
	body, _ := json.Marshal(map[string]any{"label": "refunds", "permissions": []string{
		"btcpay.store.cancreateinvoice", "btcpay.store.canviewinvoices", "btcpay.store.canviewreports",
		"btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.canviewpullpayments",
		"btcpay.store.canviewpayouts", "btcpay.store.canmanagepayouts"}})
	req, _ := http.NewRequest("POST", e.kassa.URL+"/admin/v1/stores/"+e.store.StoreID+"/api-keys", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+e.kassa.AdminToken())
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	var key struct {
		APIKey string `json:"apiKey"`
	}
	if res.StatusCode != 200 || json.Unmarshal(data, &key) != nil || key.APIKey == "" {
		e.t.Fatalf("make a refund key: %d %s", res.StatusCode, data)
	}
	return key.APIKey
}

// payoutOut is what the tests read of a payout.
type payoutOut struct {
	ID          string `json:"id"`
	State       string `json:"state"`
	Amount      int64  `json:"amount"`
	FeeLimit    int64  `json:"feeLimit"`
	NetworkFee  int64  `json:"networkFee"`
	PaymentHash string `json:"paymentHash"`
	TxID        string `json:"txid"`
	LastError   string `json:"lastError"`
}

func (e *refundEnv) base() string { return "/api/v1/stores/" + e.store.StoreID }

// paidInvoice is a Lightning invoice of sats the customer paid.
func (e *refundEnv) paidInvoice(sats int64) string {
	e.t.Helper()
	var inv lnInvoice
	e.kassa.Do("POST", e.base()+"/invoices", e.key, map[string]any{"amount": sats, "currency": "SATS", "enabledPaymentMethods": []string{"Lightning"}}, &inv)
	e.kassa.Do("GET", e.base()+"/invoices/"+inv.ID, e.key, nil, &inv)
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		e.t.Fatalf("customer pays: %v", err)
	}
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	return inv.ID
}

// claim refunds the invoice at the rate of the day (its satoshis) and
// claims the refund for destination.
func (e *refundEnv) claim(invoiceID, destination string) payoutOut {
	e.t.Helper()
	var pp struct {
		ID string `json:"id"`
	}
	e.kassa.Do("POST", e.base()+"/invoices/"+invoiceID+"/refund", e.key, map[string]any{"refundVariant": "RateThen"}, &pp)
	var po payoutOut
	e.kassa.Do("POST", e.base()+"/pull-payments/"+pp.ID+"/payouts", e.key, map[string]any{"destination": destination}, &po)
	return po
}

func (e *refundEnv) approve(id string) payoutOut {
	e.t.Helper()
	var po payoutOut
	e.kassa.Do("POST", e.base()+"/payouts/"+id+"/approve", e.key, nil, &po)
	return po
}

// waitFinal waits for the payout to end, Kassa answering again after a
// restart.
func (e *refundEnv) waitFinal(id string) payoutOut {
	e.t.Helper()
	var po payoutOut
	defer func() {
		if !e.t.Failed() {
			return
		}
		for _, line := range strings.Split(e.kassa.Logs(), "\n") { // what the sender said
			if strings.Contains(line, "payout") && !strings.Contains(line, "http request") || strings.Contains(line, "level=ERROR") {
				e.t.Log(line)
			}
		}
		if po.PaymentHash == "" {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		pays, err := e.service.Client.ListPayments(ctx, &lnrpc.ListPaymentsRequest{IncludeIncomplete: true})
		if err != nil {
			e.t.Logf("service lnd ListPayments: %v", err)
			return
		}
		for _, p := range pays.Payments {
			if p.PaymentHash == po.PaymentHash {
				e.t.Logf("service lnd's payment %s: %s, failure %s, %d htlcs", p.PaymentHash, p.Status, p.FailureReason, len(p.Htlcs))
				for _, h := range p.Htlcs {
					e.t.Logf("  htlc %s", h.Status)
				}
			}
		}
		e.t.Logf("customer's invoice settled: %v", e.customerSettled(po.PaymentHash))
	}()
	kassatest.Eventually(e.t, 180*time.Second, "payout "+id+" to end", func() error {
		po = payoutOut{}
		e.kassa.Do("GET", e.base()+"/payouts/"+id, e.key, nil, &po)
		if po.State == "Failed" {
			e.t.Fatalf("payout failed: %+v", po)
		}
		if po.State != "Completed" && po.State != "Cancelled" {
			return fmt.Errorf("payout %s", po.State)
		}
		return nil
	})
	return po
}

// ledger sums the store's refund lines by type, and counts them.
func (e *refundEnv) ledger() (map[string]int64, int) {
	e.t.Helper()
	var txs []transfer
	e.kassa.Do("GET", e.base()+"/transactions", e.key, nil, &txs)
	sums, n := map[string]int64{}, 0
	for _, tx := range txs {
		switch tx.Type {
		case "refund", "network_fee", "refund_returned":
			sums[tx.Type] += tx.Amount
			n++
		case "fee": // the invoices' service fees, charged as they settle
			sums[tx.Type] += tx.Amount
		}
	}
	return sums, n
}

// balance is the store's prepaid balance.
func (e *refundEnv) balance() int64 {
	e.t.Helper()
	var st struct {
		Balance int64 `json:"balance"`
	}
	e.kassa.AdminGet("/admin/v1/stores/"+e.store.StoreID, &st)
	return st.Balance
}

// checkPaidOnce checks a completed payout against the store's ledger:
// the balance lost amount and the network fee once, in lines.
func (e *refundEnv) checkPaidOnce(po payoutOut, before int64, linesBefore map[string]int64) {
	e.t.Helper()
	if po.State != "Completed" {
		e.t.Fatalf("payout %+v", po)
	}
	lines, _ := e.ledger()
	refund := lines["refund"] - linesBefore["refund"]
	fee := lines["network_fee"] - linesBefore["network_fee"] - (lines["refund_returned"] - linesBefore["refund_returned"])
	if refund != po.Amount || fee != po.NetworkFee {
		e.t.Fatalf("payout %+v: ledger moved refund %d, net network fee %d", po, refund, fee)
	}
	e.checkBalance(before, linesBefore, po.Amount+po.NetworkFee)
}

// checkBalance waits for the balance to be before less out and the
// service fees of invoices settled since linesBefore.
func (e *refundEnv) checkBalance(before int64, linesBefore map[string]int64, out int64) {
	e.t.Helper()
	kassatest.Eventually(e.t, 10*time.Second, "the balance debited once", func() error {
		lines, _ := e.ledger()
		if got, want := e.balance(), before-out-(lines["fee"]-linesBefore["fee"]); got != want {
			return fmt.Errorf("balance %d, want %d", got, want)
		}
		return nil
	})
}

// customerPaid counts the customer's settled invoices with hash.
func (e *refundEnv) customerSettled(hash string) bool {
	e.t.Helper()
	h, _ := hex.DecodeString(hash)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	inv, err := e.customer.Client.LookupInvoice(ctx, &lnrpc.PaymentHash{RHash: h})
	return err == nil && inv.State == lnrpc.Invoice_SETTLED
}

// customerReceived is what the customer's lnd wallet received in txid.
func (e *refundEnv) customerReceived(txid string) int64 {
	e.t.Helper()
	var got int64
	kassatest.Eventually(e.t, 60*time.Second, "the customer's wallet to see "+txid, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		txs, err := e.customer.Client.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{EndHeight: -1})
		if err != nil {
			return err
		}
		for _, tx := range txs.Transactions {
			if tx.TxHash == txid {
				got = tx.Amount
				return nil
			}
		}
		return fmt.Errorf("no transaction %s", txid)
	})
	return got
}

// TestRefundsOnLnd pays refunds through the service's real lnd: to the
// customer's BOLT11 invoice, to the customer's Lightning address, and
// on-chain to the customer's regtest address; then with Kassa killed
// right after approvals and lnd restarted mid-payment. Each payout is
// paid once, and the store's balance and ledger move once.
func TestRefundsOnLnd(t *testing.T) {
	t.Parallel()
	e := newRefundEnv(t)
	step(t, "a Lightning invoice refunded to the customer's lnd invoice", e.refundToInvoice)
	step(t, "a Lightning-address claim: Kassa resolves LNURL-pay to an invoice of the customer's node", e.refundToAddress)
	step(t, "an on-chain refund to the customer's regtest address, from lnd's wallet", e.refundOnchain)

	k := &refundKill{refundEnv: e}
	step(t, "an on-chain and a Lightning-address payout approved, kassa killed right after, lnd restarted mid-payment", k.approveKillRestart)
	step(t, "the on-chain payout paid once", k.onchainPaidOnce)
	step(t, "the Lightning payout ends as lnd says, with at most one of the address's invoices paid", k.lightningEnds)
	step(t, "both payouts debited once, and what came back, in the ledger and the balance", k.ledgerOnce)
}

func (e *refundEnv) refundToInvoice() {
	t := e.t
	inv := e.paidInvoice(20_000)
	res, err := e.customer.Client.AddInvoice(context.Background(), &lnrpc.Invoice{Value: 20_000, Memo: "my refund", Expiry: 3600})
	if err != nil {
		t.Fatal(err)
	}
	before, lines := e.balance(), first(e.ledger())
	po := e.approve(e.claim(inv, res.PaymentRequest).ID)
	done := e.waitFinal(po.ID)
	if done.PaymentHash != hex.EncodeToString(res.RHash) || !e.customerSettled(done.PaymentHash) {
		t.Fatalf("payout %+v: the customer's invoice %x is not the one paid", done, res.RHash)
	}
	e.checkPaidOnce(done, before, lines)
}

func (e *refundEnv) refundToAddress() {
	inv := e.paidInvoice(15_000)
	before, lines := e.balance(), first(e.ledger())
	asked := e.lnurl.invoices()
	po := e.approve(e.claim(inv, e.lnurl.address()).ID)
	done := e.waitFinal(po.ID)
	if n := e.lnurl.invoices() - asked; n != 1 || !e.customerSettled(done.PaymentHash) {
		e.t.Fatalf("payout %+v: %d invoices asked of the address, the paid one settled: %v", done, n, e.customerSettled(done.PaymentHash))
	}
	e.checkPaidOnce(done, before, lines)
}

func (e *refundEnv) refundOnchain() {
	t := e.t
	inv := e.paidInvoice(40_000)
	before, lines := e.balance(), first(e.ledger())
	po := e.approve(e.claim(inv, e.customer.NewAddress()).ID)
	if po.FeeLimit <= 0 {
		t.Fatalf("approved on-chain payout without a fee limit: %+v", po)
	}
	done := e.waitFinal(po.ID)
	if done.TxID == "" || done.NetworkFee <= 0 || done.NetworkFee > po.FeeLimit {
		t.Fatalf("payout %+v", done)
	}
	e.btcd.Mine(1)
	if got := e.customerReceived(done.TxID); got != done.Amount {
		t.Fatalf("the customer's wallet received %d in %s, want %d", got, done.TxID, done.Amount)
	}
	e.checkPaidOnce(done, before, lines)
}

// refundKill is the scenario of two payouts approved just before Kassa
// is killed and lnd restarted: what its steps share.
type refundKill struct {
	*refundEnv
	before     int64
	lines      map[string]int64 // the ledger's sums before the payouts
	asked      int              // the address's invoices before the payouts
	address    string           // the on-chain payout's destination
	ocPo, lnPo payoutOut
	ocDone     payoutOut
	lnDone     payoutOut
	lnOut      int64 // what the Lightning payout took from the balance
}

func (k *refundKill) approveKillRestart() {
	e := k.refundEnv
	ln, oc := e.paidInvoice(11_000), e.paidInvoice(12_000)
	k.before, k.lines = e.balance(), first(e.ledger())
	k.asked = e.lnurl.invoices()
	// The on-chain payout first: a store's payouts are paid oldest
	// first, one at a time, so it does not wait behind a Lightning
	// payment lnd may hold in flight.
	k.address = e.customer.NewAddress()
	k.ocPo = e.claim(oc, k.address)
	k.lnPo = e.claim(ln, e.lnurl.address())
	e.approve(k.ocPo.ID)
	e.approve(k.lnPo.ID)
	e.kassa.Kill() // just after the approvals: the sender may have recorded, sent, or nothing
	e.service.Stop()
	e.kassa = harness.StartKassa(e.t, e.kassa.Data, e.args...)
	time.Sleep(2 * time.Second) // the sender meets lnd down
	e.service.Start()
	e.service.Reconnect(e.customer)
	e.customer.Reconnect(e.service)
}

func (k *refundKill) onchainPaidOnce() {
	e, t := k.refundEnv, k.t
	k.ocDone = e.waitFinal(k.ocPo.ID)
	e.btcd.Mine(1)
	if got := e.customerReceived(k.ocDone.TxID); got != k.ocDone.Amount {
		t.Fatalf("the customer's wallet received %d in %s, want %d", got, k.ocDone.TxID, k.ocDone.Amount)
	}
	if n := countTo(t, e.customer, k.address); n != 1 {
		t.Fatalf("%d transactions paid %s, want 1", n, k.address)
	}
}

func (k *refundKill) lightningEnds() {
	e, t := k.refundEnv, k.t
	// The Lightning payout ends when lnd says how its payment ended.
	// lnd restarted with an HTLC just sent has kept its payment
	// IN_FLIGHT for minutes here (its HTLC unresolved after the
	// reconnection): Kassa waits for lnd's word, so the payout is
	// then still InProgress, its debit once in the ledger.
	var lnDone payoutOut
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		lnDone = payoutOut{}
		e.kassa.Do("GET", e.base()+"/payouts/"+k.lnPo.ID, e.key, nil, &lnDone)
		if lnDone.State == "Completed" || lnDone.State == "Failed" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	k.lnDone = lnDone
	// An invoice asked before the kill and never recorded is asked
	// again; of the address's invoices at most one is paid, and the
	// one the payout completed with.
	e.lnurl.mu.Lock()
	hashes := append([]string(nil), e.lnurl.hashes[k.asked:]...)
	e.lnurl.mu.Unlock()
	settled := 0
	for _, h := range hashes {
		if e.customerSettled(h) {
			settled++
		}
	}
	// What the Lightning payout took from the balance: its amount and
	// fee once paid, its amount and fee limit while lnd holds its
	// payment, nothing once failed (lnd found no channel ready after
	// its restart, say: the money came back).
	switch lnDone.State {
	case "Completed":
		if settled != 1 || !e.customerSettled(lnDone.PaymentHash) {
			t.Fatalf("Lightning payout %+v: %d of the address's %d invoices paid, want 1", lnDone, settled, len(hashes))
		}
		k.lnOut = lnDone.Amount + lnDone.NetworkFee
	case "InProgress":
		if settled > 1 || lnStatus(t, e.service, lnDone.PaymentHash) != lnrpc.Payment_IN_FLIGHT {
			t.Fatalf("Lightning payout %+v InProgress: lnd's payment %s, %d invoices paid", lnDone, lnStatus(t, e.service, lnDone.PaymentHash), settled)
		}
		t.Logf("lnd still holds the Lightning payout's payment in flight after 90 s; the payout waits, InProgress")
		k.lnOut = lnDone.Amount + lnDone.FeeLimit
	case "Failed":
		if settled != 0 {
			t.Fatalf("Lightning payout %+v failed, yet %d of the address's invoices were paid", lnDone, settled)
		}
		t.Logf("the Lightning payout failed after the restart (%s): its money is back", lnDone.LastError)
	default:
		t.Fatalf("Lightning payout %+v", lnDone)
	}
	t.Logf("the address was asked for %d invoices across the kill", len(hashes))
}

func (k *refundKill) ledgerOnce() {
	e, t := k.refundEnv, k.t
	lines, lnDone, ocDone := k.lines, k.lnDone, k.ocDone
	lines2, _ := e.ledger()
	if refund := lines2["refund"] - lines["refund"]; refund != lnDone.Amount+ocDone.Amount {
		t.Fatalf("refund lines %d, want one per payout: %+v %+v", refund, lnDone, ocDone)
	}
	net := lines2["refund"] - lines["refund"] + lines2["network_fee"] - lines["network_fee"] - (lines2["refund_returned"] - lines["refund_returned"])
	if want := k.lnOut + ocDone.Amount + ocDone.NetworkFee; net != want {
		t.Fatalf("the payout lines took %d net, want %d; payouts %+v %+v", net, want, lnDone, ocDone)
	}
	e.checkBalance(k.before, lines, net)
}

// lnStatus is lnd's status of its payment with hash (INITIATED when
// lnd has none).
func lnStatus(t *testing.T, l *harness.Lnd, hash string) lnrpc.Payment_PaymentStatus {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	pays, err := l.Client.ListPayments(ctx, &lnrpc.ListPaymentsRequest{IncludeIncomplete: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pays.Payments {
		if p.PaymentHash == hash {
			return p.Status
		}
	}
	return lnrpc.Payment_INITIATED
}

// first is the sums of ledger(), without the count.
func first(m map[string]int64, _ int) map[string]int64 { return m }

// countTo counts the customer wallet's transactions with an output to
// address.
func countTo(t *testing.T, l *harness.Lnd, address string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	txs, err := l.Client.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{EndHeight: -1})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tx := range txs.Transactions {
		for _, o := range tx.OutputDetails {
			if o.Address == address && o.IsOurAddress {
				n++
			}
		}
	}
	return n
}
