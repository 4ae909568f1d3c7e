//go:build itest

package itest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/persistence"
)

// lnEnv is a regtest Lightning network on loopback: btcd, the service's
// lnd (Kassa's), a customer's lnd with a channel to it, and a merchant's
// lnd reached from it through a routing node (hop), which charges a fee;
// the merchant's Lightning address is served by a small LNURL-pay server
// backed by the merchant's lnd.
type lnEnv struct {
	t                           *testing.T
	btcd                        *harness.Node
	wallet                      *harness.Wallet
	service, customer, merchant *harness.Lnd
	hop                         *harness.Lnd
	lnurl                       *lnurlServer
	kassa                       *harness.Kassa
	store                       harness.Store
	hooks                       *harness.Webhooks
	args                        []string
}

// lnurlServer answers LUD-06 pay requests for shop@HOST with invoices of
// the merchant's lnd, described by the hash of its metadata.
type lnurlServer struct {
	srv      *httptest.Server
	merchant *harness.Lnd
	mu       sync.Mutex
	hashes   []string
	comments []string
}

const lnurlMetadata = `[["text/plain","Payment to the shop"],["text/identifier","shop@example.com"]]`

func newLNURLServer(t *testing.T, merchant *harness.Lnd) *lnurlServer {
	s := &lnurlServer{merchant: merchant}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/lnurlp/shop", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"tag": "payRequest", "callback": "http://" + r.Host + "/lnurlp/shop/callback",
			"minSendable": 1000, "maxSendable": 1_000_000_000, "metadata": lnurlMetadata, "commentAllowed": 140,
		})
	})
	mux.HandleFunc("GET /lnurlp/shop/callback", func(w http.ResponseWriter, r *http.Request) {
		amount, err := strconv.ParseInt(r.URL.Query().Get("amount"), 10, 64)
		if err != nil {
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": "amount"})
			return
		}
		hash := sha256.Sum256([]byte(lnurlMetadata))
		ctx, cancel := context.WithTimeout(r.Context(), 20*time.Second)
		defer cancel()
		res, err := merchant.Client.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: amount, DescriptionHash: hash[:], Expiry: 3600})
		if err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			json.NewEncoder(w).Encode(map[string]string{"status": "ERROR", "reason": err.Error()})
			return
		}
		s.mu.Lock()
		s.hashes = append(s.hashes, hex.EncodeToString(res.RHash))
		s.comments = append(s.comments, r.URL.Query().Get("comment"))
		s.mu.Unlock()
		json.NewEncoder(w).Encode(map[string]any{"pr": res.PaymentRequest, "routes": []any{}})
	})
	s.srv = httptest.NewServer(mux)
	t.Cleanup(s.srv.Close)
	return s
}

// invoices is how many invoices the server has made.
func (s *lnurlServer) invoices() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.hashes)
}

func (s *lnurlServer) address() string { return "shop@" + strings.TrimPrefix(s.srv.URL, "http://") }

// newLNEnv builds the network and starts Kassa on it with one store whose
// Lightning address is the merchant's.
func newLNEnv(t *testing.T) *lnEnv {
	t.Helper()
	e := &lnEnv{t: t, wallet: harness.NewWallet(t, harness.ParamsOf("regtest"))}
	e.btcd = harness.StartNode(t, harness.NodeConfig{MiningAddr: e.wallet.Address(), TxIndex: true})
	e.btcd.Mine(103)
	e.service = harness.StartLnd(t, e.btcd, "service")
	e.customer = harness.StartLnd(t, e.btcd, "customer")
	e.merchant = harness.StartLnd(t, e.btcd, "merchant")
	e.hop = harness.StartLnd(t, e.btcd, "hop")
	e.wallet.Pay(t, e.btcd,
		harness.Output{Address: e.customer.NewAddress(), Amount: 10_000_000},
		harness.Output{Address: e.service.NewAddress(), Amount: 10_000_000},
		harness.Output{Address: e.hop.NewAddress(), Amount: 10_000_000})
	e.btcd.Mine(1)
	e.customer.WaitBalance(10_000_000)
	e.service.WaitBalance(10_000_000)
	e.hop.WaitBalance(10_000_000)
	e.customer.OpenChannel(e.service, 5_000_000)
	e.service.OpenChannel(e.hop, 5_000_000)
	e.hop.OpenChannel(e.merchant, 5_000_000)
	// The forward's route needs the hop's channel in the service's graph.
	e.service.WaitRoute(e.merchant, 10_000)
	e.lnurl = newLNURLServer(t, e.merchant)
	e.args = []string{"--chain", chainURL(e.btcd), "--lightning", e.service.URL(), "--invoice-expiry", "10m"}
	e.kassa = harness.StartKassa(t, "", e.args...)
	// No xpub: on-chain payments go to the service lnd's wallet and are
	// forwarded like Lightning ones, at two confirmations.
	e.store = e.kassa.CreateStore("--name", "Lightning shop", "--lightning-address", e.lnurl.address(), "--confirmations", "2")
	e.hooks = e.kassa.ListenWebhooks(e.store)
	return e
}

// lnInvoice is what the tests read of a Lightning invoice.
type lnInvoice struct {
	ID               string `json:"id"`
	Status           string `json:"status"`
	Amount           int64  `json:"amount"`
	LightningInvoice string `json:"lightningInvoice"`
}

func (e *lnEnv) createInvoice(sats int64) lnInvoice {
	e.t.Helper()
	var inv lnInvoice
	e.kassa.Do("POST", "/api/v1/stores/"+e.store.StoreID+"/invoices", e.store.APIKey, map[string]any{
		"amount": sats, "currency": "SATS", "enabledPaymentMethods": []string{"Lightning"},
	}, &inv)
	var full lnInvoice
	e.kassa.Do("GET", "/api/v1/stores/"+e.store.StoreID+"/invoices/"+inv.ID, e.store.APIKey, nil, &full)
	if full.LightningInvoice == "" {
		e.t.Fatalf("invoice %s has no Lightning invoice", inv.ID)
	}
	return full
}

// createInvoiceEventually creates an invoice once Kassa reaches lnd again
// (it answers 503 while lnd is down).
func (e *lnEnv) createInvoiceEventually(sats int64) lnInvoice {
	e.t.Helper()
	kassatest.Eventually(e.t, 90*time.Second, "invoice creation with lnd back", func() error {
		if code := e.kassa.Do("POST", "/api/v1/stores/"+e.store.StoreID+"/invoices", e.store.APIKey, map[string]any{
			"amount": 1, "currency": "SATS", "enabledPaymentMethods": []string{"Lightning"},
		}, nil); code != http.StatusOK {
			return fmt.Errorf("create invoice answered %d", code)
		}
		return nil
	})
	return e.createInvoice(sats)
}

// transfer is a transaction line as the API shows it.
type transfer struct {
	InvoiceID     string `json:"invoiceId"`
	Type          string `json:"type"`
	Status        string `json:"status"`
	Amount        int64  `json:"amount"`
	FullAmount    int64  `json:"fullAmount"`
	DepositMethod string `json:"depositMethod"`
	Hash          string `json:"hash"`
	RoutingFee    int64  `json:"routingFee"`
}

func (e *lnEnv) transfer(invoiceID string) (transfer, bool) {
	e.t.Helper()
	var txs []transfer
	e.kassa.Do("GET", "/api/v1/stores/"+e.store.StoreID+"/transactions", e.store.APIKey, nil, &txs)
	for _, tx := range txs {
		if tx.InvoiceID == invoiceID && tx.Type == "transfer" {
			return tx, true
		}
	}
	return transfer{}, false
}

// waitForwarded waits for the invoice's transfer to settle and checks it
// against the merchant's node: the hash of a settled invoice there, the
// amount that reached it, and the routing fee.
func (e *lnEnv) waitForwarded(invoiceID string, full int64) transfer {
	e.t.Helper()
	var tx transfer
	kassatest.Eventually(e.t, 180*time.Second, "transfer of "+invoiceID+" settled", func() error {
		var ok bool
		if tx, ok = e.transfer(invoiceID); !ok {
			return fmt.Errorf("no transfer line")
		}
		if tx.Status != "Settled" {
			return fmt.Errorf("transfer %s", tx.Status)
		}
		return nil
	})
	if tx.DepositMethod != "Lightning" || tx.FullAmount != full {
		e.t.Fatalf("transfer %+v", tx)
	}
	hash, _ := hex.DecodeString(tx.Hash)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	got, err := e.merchant.Client.LookupInvoice(ctx, &lnrpc.PaymentHash{RHash: hash})
	if err != nil {
		e.t.Fatalf("the transfer's hash %s is no invoice of the merchant's node: %v", tx.Hash, err)
	}
	if got.State != lnrpc.Invoice_SETTLED || got.AmtPaidSat != tx.Amount {
		e.t.Fatalf("merchant invoice %s: %s, %d sat paid; the transfer says %d sat reached the wallet", tx.Hash, got.State, got.AmtPaidSat, tx.Amount)
	}
	// The routing fee the service's node paid (the hop's) is what the
	// transfer shows did not reach the wallet.
	pays, err := e.service.Client.ListPayments(ctx, &lnrpc.ListPaymentsRequest{})
	if err != nil {
		e.t.Fatal(err)
	}
	for _, p := range pays.Payments {
		if p.PaymentHash == tx.Hash {
			// Some fee was paid, and no more than the transfer says
			// did not reach the wallet: the service never pays more
			// than it received.
			if p.Status != lnrpc.Payment_SUCCEEDED || p.FeeMsat <= 0 || tx.Amount >= full || (full-tx.Amount)*1000 < p.FeeMsat {
				e.t.Fatalf("service payment %s: %s, fee %d sat; transfer %d of %d", p.PaymentHash, p.Status, p.FeeSat, tx.Amount, full)
			}
			// The merchant received the amount less the routing fee
			// paid, to the satoshi, and the line names that fee.
			if tx.RoutingFee != (p.FeeMsat+999)/1000 || tx.Amount+tx.RoutingFee != full {
				e.t.Fatalf("transfer %+v: routing fee %d msat paid; want routingFee %d and amount + routingFee = %d", tx, p.FeeMsat, (p.FeeMsat+999)/1000, full)
			}
			return tx
		}
	}
	e.t.Fatalf("the service's node made no payment with hash %s", tx.Hash)
	return tx
}

// merchantSettled counts the merchant's settled invoices.
func (e *lnEnv) merchantSettled() int {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := e.merchant.Client.ListInvoices(ctx, &lnrpc.ListInvoiceRequest{NumMaxInvoices: 1000})
	if err != nil {
		e.t.Fatal(err)
	}
	n := 0
	for _, inv := range r.Invoices {
		if inv.State == lnrpc.Invoice_SETTLED {
			n++
		}
	}
	return n
}

// TestLightningOnLnd runs the Lightning scenarios on one network: the
// network takes a while to build, so the cases share it in order, each a
// step. It runs beside the chain tests (its own btcd, lnd nodes and
// ports).
func TestLightningOnLnd(t *testing.T) {
	t.Parallel()
	e := newLNEnv(t)
	step(t, "a paid invoice settles and is forwarded", e.paidAndForwarded)
	step(t, "an on-chain payment to a store without an xpub is forwarded over Lightning at the store's depth", e.onchainForwarded)
	step(t, "a forward asks the merchant's Lightning address for one invoice, once its node is known", e.oneInvoicePerForward)
	step(t, "a payment to a store without a Lightning address is held, shown on its dashboard page, and forwarded once an address is set", e.heldUntilAddress)
	step(t, "kassa restarted between payment and settle misses nothing", e.restartBeforeSettle)
	step(t, "lnd killed and restarted", e.lndKilled)
	step(t, "merchant node offline: forward pending, retried, once", e.merchantOffline)
	step(t, "expired invoice cannot be paid", e.expiredUnpayable)

	// In a cluster, one node watches lnd's invoices and forwards; when it
	// is killed, the other takes both roles over.
	c := &lnCluster{lnEnv: e}
	step(t, "a cluster of two nodes: two members, the Lightning watcher and the forwarder held", c.start)
	step(t, "a payment in the cluster is forwarded", func() { c.payForwarded(11_000) })
	step(t, "the node holding the Lightning watcher killed: the survivor holds the watcher and the forwarder", c.killWatcher)
	step(t, "the survivor forwards a payment; one merchant invoice and one transfer line per forward", c.survivorForwards)

	step(t, "the lnd backend passes the Lightning contract suite", e.contractSuite)
}

func (e *lnEnv) paidAndForwarded() {
	t := e.t
	inv := e.createInvoice(20_000)
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		t.Fatalf("customer pays: %v", err)
	}
	e.hooks.Wait(inv.ID, "Processing")
	e.hooks.Wait(inv.ID, "Settled")
	if got := e.hooks.Events(inv.ID); !slices.Equal(got, []string{"New", "Processing", "Settled"}) {
		t.Fatalf("webhooks %v", got)
	}
	e.waitForwarded(inv.ID, 20_000)
	if n := e.merchantSettled(); n != 1 {
		t.Fatalf("merchant invoices settled: %d, want 1", n)
	}
}

func (e *lnEnv) onchainForwarded() {
	t := e.t
	inv := e.kassa.CreateInvoice(e.store, 30_000)
	before := e.merchantSettled()
	e.wallet.Pay(t, e.btcd, harness.Output{Address: inv.OnchainAddress, Amount: 30_000})
	e.btcd.Mine(1)
	kassatest.Eventually(t, 60*time.Second, "the service lnd's wallet to hold the payment", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		txs, err := e.service.Client.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{})
		if err != nil {
			return err
		}
		if !serviceOwns(txs, inv.OnchainAddress) {
			return fmt.Errorf("no output of the service's wallet to %s", inv.OnchainAddress)
		}
		return nil
	})
	kassatest.Eventually(t, 60*time.Second, "the payment seen at one confirmation", func() error {
		for _, p := range e.kassa.Payments(e.store, inv.ID) {
			if p.Confirmations >= 1 {
				return nil
			}
		}
		return fmt.Errorf("payments %+v", e.kassa.Payments(e.store, inv.ID))
	})
	if got := e.kassa.Invoice(e.store, inv.ID); got.Status != "Processing" {
		t.Fatalf("invoice at one of two confirmations: %s", got.Status)
	}
	if tx, ok := e.transfer(inv.ID); ok || e.merchantSettled() != before {
		t.Fatalf("a transfer (%+v) or forward before the store's depth", tx)
	}
	e.btcd.Mine(1)
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	e.waitForwarded(inv.ID, 30_000)
	if n := e.merchantSettled(); n != before+1 {
		t.Fatalf("merchant invoices settled: %d, want %d", n, before+1)
	}
}

func (e *lnEnv) oneInvoicePerForward() {
	t := e.t
	forwards, invoices := 0, 0
	for _, sats := range []int64{21_000, 9_000} {
		before := e.lnurl.invoices()
		inv := e.createInvoice(sats)
		if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
			t.Fatalf("customer pays: %v", err)
		}
		e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
		e.waitForwarded(inv.ID, sats)
		n := e.lnurl.invoices() - before
		forwards, invoices = forwards+1, invoices+n
		if n != 1 {
			t.Fatalf("the forward of %d sat asked the Lightning address for %d invoices, want 1", sats, n)
		}
	}
	t.Logf("merchant invoices issued per forward: %.2f (%d for %d forwards)", float64(invoices)/float64(forwards), invoices, forwards)
}

// heldUntilAddress runs on a second store, without a Lightning address,
// and leaves e.store the first one again.
func (e *lnEnv) heldUntilAddress() {
	t := e.t
	shop := e.store
	e.store = e.kassa.CreateStore("--name", "Held shop", "--currency", "EUR", "--confirmations", "1")
	inv := e.createInvoice(13_000)
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		t.Fatalf("customer pays: %v", err)
	}
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	if tx, ok := e.transfer(inv.ID); !ok || tx.Status != "Held" || tx.Hash != "" {
		t.Fatalf("transfer of a store without a Lightning address: %+v %v, want Held without a hash", tx, ok)
	}
	d := newDashboardClient(t, e.kassa)
	page := d.get("/dashboard/stores/" + e.store.StoreID + "/")
	if !strings.Contains(page, `id="held">13`) {
		t.Fatalf("the store page does not show 13,000 sat held: %s", page)
	}
	before := e.lnurl.invoices()
	d.post("/dashboard/stores/"+e.store.StoreID+"/settings", url.Values{
		"name": {"Held shop"}, "currency": {"EUR"}, "confirmations": {"1"}, "onchainMin": {"0"},
		"lightningAddress": {e.lnurl.address()},
	})
	e.waitForwarded(inv.ID, 13_000)
	if n := e.lnurl.invoices() - before; n != 1 {
		t.Fatalf("the held payment's forward asked for %d invoices, want 1", n)
	}
	if page := d.get("/dashboard/stores/" + e.store.StoreID + "/"); strings.Contains(page, `id="held"`) {
		t.Fatal("the store page still shows money held after the forward")
	}
	e.store = shop
}

func (e *lnEnv) restartBeforeSettle() {
	inv := e.createInvoice(15_000)
	e.kassa.Stop()
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		e.t.Fatalf("customer pays: %v", err)
	}
	e.kassa = harness.StartKassa(e.t, e.kassa.Data, e.args...)
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	e.waitForwarded(inv.ID, 15_000)
}

func (e *lnEnv) lndKilled() {
	e.service.Kill()
	kassatest.Eventually(e.t, 30*time.Second, "health to report lnd down", func() error {
		var h struct {
			Lightning struct {
				Error string `json:"error"`
			} `json:"lightning"`
		}
		e.kassa.AdminGet("/api/v1/health", &h)
		if h.Lightning.Error == "" {
			return fmt.Errorf("health says nothing of lnd")
		}
		return nil
	})
	e.service.Start()
	e.customer.Reconnect(e.service)
	e.service.Reconnect(e.hop)
	inv := e.createInvoiceEventually(12_000)
	if _, err := e.customer.Pay(inv.LightningInvoice, 90*time.Second); err != nil {
		e.t.Fatalf("customer pays: %v", err)
	}
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	e.waitForwarded(inv.ID, 12_000)
}

func (e *lnEnv) merchantOffline() {
	t := e.t
	before := e.merchantSettled()
	e.merchant.Stop()
	inv := e.createInvoice(11_000)
	if _, err := e.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		t.Fatalf("customer pays: %v", err)
	}
	e.kassa.WaitStatus(e.store, inv.ID, "Settled", "")
	if tx, ok := e.transfer(inv.ID); !ok || tx.Status != "Pending" {
		t.Fatalf("transfer while the merchant is offline: %+v %v", tx, ok)
	}
	kassatest.Eventually(t, 60*time.Second, "a failed forward attempt in the log", func() error {
		if !strings.Contains(e.kassa.Logs(), "forward not sent; retrying") && !strings.Contains(e.kassa.Logs(), "forward payment failed; retrying") {
			return fmt.Errorf("no failed attempt yet")
		}
		return nil
	})
	e.merchant.Start()
	e.hop.Reconnect(e.merchant)
	e.waitForwarded(inv.ID, 11_000)
	if n := e.merchantSettled(); n != before+1 {
		t.Fatalf("merchant invoices settled: %d, want %d (exactly one more)", n, before+1)
	}
}

// expiredUnpayable restarts Kassa with invoices that expire in 2 s.
func (e *lnEnv) expiredUnpayable() {
	e.kassa.Stop()
	e.kassa = harness.StartKassa(e.t, e.kassa.Data, append(e.args[:len(e.args):len(e.args)], "--invoice-expiry", "2s")...)
	short := e.createInvoice(5000)
	e.kassa.WaitStatus(e.store, short.ID, "Expired", "")
	kassatest.Eventually(e.t, 30*time.Second, "lnd invoice cancelled", func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d, err := e.service.Client.DecodePayReq(ctx, &lnrpc.PayReqString{PayReq: short.LightningInvoice})
		if err != nil {
			return err
		}
		h, _ := hex.DecodeString(d.PaymentHash)
		got, err := e.service.Client.LookupInvoice(ctx, &lnrpc.PaymentHash{RHash: h})
		if err != nil {
			return err
		}
		if got.State != lnrpc.Invoice_CANCELED {
			return fmt.Errorf("lnd invoice %s", got.State)
		}
		return nil
	})
	if _, err := e.customer.Pay(short.LightningInvoice, 5*time.Second); err == nil {
		e.t.Fatal("an expired invoice was paid")
	}
}

// lnCluster is the network with two Kassa nodes in a cluster in place of
// the single one: what the cluster steps share.
type lnCluster struct {
	*lnEnv
	nodes    []*harness.Kassa
	before   int            // the merchant's settled invoices before the cluster's payments
	watcher  *harness.Kassa // the node that held the Lightning watcher, killed
	survivor *harness.Kassa
	epoch    int64 // the watcher's lease epoch before the kill
	fwdEpoch int64 // the forwarder's lease epoch before the kill
}

// holder is the node that holds the role's lease, and the lease's epoch.
func (c *lnCluster) holder(role string) (*harness.Kassa, int64) {
	for _, k := range c.nodes {
		h, _ := nodeHealth(k)
		for _, l := range h.Cluster.Leases {
			if l.Role == role && l.Held {
				return k, l.Epoch
			}
		}
	}
	return nil, 0
}

// start stops the single Kassa, starts two cluster nodes in its place
// and makes a store with the merchant's Lightning address on them.
func (c *lnCluster) start() {
	t, e := c.t, c.lnEnv
	e.kassa.Stop()
	dsn := harness.PostgresSchema(t)
	et := harness.EtcdForTest(t)
	cluster := harness.NewClusterNodes(t, et.ClusterURL(), dsn)
	start := func() *harness.Kassa {
		return harness.StartKassa(t, "", append(e.args[:len(e.args):len(e.args)], cluster.Next()...)...)
	}
	c.nodes = []*harness.Kassa{start(), start()}
	kassatest.Eventually(t, 30*time.Second, "two members, the Lightning watcher and the forwarder held", func() error {
		for i, k := range c.nodes {
			if h, ok := nodeHealth(k); !ok || len(h.Cluster.Members) != 2 {
				return fmt.Errorf("node %d: members %v", i, h.Cluster.Members)
			}
		}
		if k, _ := c.holder("lightning-watcher"); k == nil {
			return fmt.Errorf("nobody holds the lightning-watcher lease")
		}
		if k, _ := c.holder("forwarder"); k == nil {
			return fmt.Errorf("nobody holds the forwarder lease")
		}
		return nil
	})
	e.kassa = c.nodes[0]
	e.store = e.kassa.CreateStore("--name", "Cluster shop", "--lightning-address", e.lnurl.address())
	c.before = e.merchantSettled()
}

// payForwarded has the customer pay an invoice of sats and waits for it
// to settle and be forwarded.
func (c *lnCluster) payForwarded(sats int64) {
	c.t.Helper()
	inv := c.createInvoice(sats)
	if _, err := c.customer.Pay(inv.LightningInvoice, 60*time.Second); err != nil {
		c.t.Fatalf("customer pays: %v", err)
	}
	c.kassa.WaitStatus(c.store, inv.ID, "Settled", "")
	c.waitForwarded(inv.ID, sats)
}

func (c *lnCluster) killWatcher() {
	c.watcher, c.epoch = c.holder("lightning-watcher")
	_, c.fwdEpoch = c.holder("forwarder")
	for _, k := range c.nodes {
		if k != c.watcher {
			c.survivor = k
		}
	}
	c.watcher.Kill()
	killed := time.Now()
	kassatest.Eventually(c.t, 30*time.Second, "the survivor to hold the Lightning watcher and the forwarder", func() error {
		k, ep := c.holder("lightning-watcher")
		if k != c.survivor || ep <= c.epoch {
			return fmt.Errorf("lightning-watcher lease not taken over")
		}
		if k, ep := c.holder("forwarder"); k != c.survivor || ep < c.fwdEpoch {
			return fmt.Errorf("forwarder lease not on the survivor")
		}
		return nil
	})
	c.t.Logf("lightning-watcher lease taken over %v after the SIGKILL", time.Since(killed).Round(100*time.Millisecond))
}

func (c *lnCluster) survivorForwards() {
	t, e := c.t, c.lnEnv
	e.kassa = c.survivor
	c.payForwarded(12_000)
	if n := e.merchantSettled(); n != c.before+2 {
		t.Fatalf("merchant invoices settled: %d, want %d (one per forward)", n, c.before+2)
	}
	var txs []transfer
	e.kassa.Do("GET", "/api/v1/stores/"+e.store.StoreID+"/transactions", e.store.APIKey, nil, &txs)
	lines := map[string]int{}
	for _, tx := range txs {
		if tx.Type == "transfer" {
			lines[tx.InvoiceID]++
		}
	}
	if len(lines) != 2 {
		t.Fatalf("transfer lines by invoice %v, want two invoices with one each", lines)
	}
	for id, n := range lines {
		if n != 1 {
			t.Fatalf("invoice %s has %d transfer lines", id, n)
		}
	}
}

// contractSuite runs kassatest's Lightning contract suite on an lnd
// backend of the service's node, the customer paying.
func (e *lnEnv) contractSuite() {
	kassatest.RunLightning(e.t, func(t *testing.T) kassatest.LightningHarness {
		target, err := lnd.ParseTarget(e.service.URL())
		if err != nil {
			t.Fatal(err)
		}
		rpc, err := lnd.Dial(target)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { rpc.Close() })
		db, err := persistence.Open("", persistence.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		node, err := lnd.New(rpc, lnd.Config{Cursor: db, MinBackoff: 100 * time.Millisecond, MaxBackoff: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		return kassatest.LightningHarness{Lightning: node, Pay: func(_ context.Context, pr string, _ kassa.MSat) error {
			_, err := e.customer.Pay(pr, 15*time.Second)
			return err
		}}
	})
}

// serviceOwns reports whether the wallet's transactions pay address, an
// address of the wallet.
func serviceOwns(r *lnrpc.TransactionDetails, address string) bool {
	for _, tx := range r.Transactions {
		for _, out := range tx.OutputDetails {
			if out.Address == address && out.IsOurAddress {
				return true
			}
		}
	}
	return false
}

// dashboardClient is a browser on Kassa's dashboard: it signs up (the
// first account, the operator, who sees every store) and posts forms
// with the page's CSRF token.
type dashboardClient struct {
	t    *testing.T
	k    *harness.Kassa
	http *http.Client
	csrf string
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

func newDashboardClient(t *testing.T, k *harness.Kassa) *dashboardClient {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	d := &dashboardClient{t: t, k: k, http: &http.Client{Jar: jar, Timeout: 30 * time.Second}}
	d.get("/dashboard/signup")
	account := url.Values{"email": {"operator@example.com"}, "password": {"a long enough password"}}
	// Signing up signs the new account in.
	d.post("/dashboard/signup", account)
	return d
}

func (d *dashboardClient) get(path string) string {
	d.t.Helper()
	res, err := d.http.Get(d.k.URL + path)
	if err != nil {
		d.t.Fatal(err)
	}
	return d.read(res, path)
}

func (d *dashboardClient) post(path string, form url.Values) string {
	d.t.Helper()
	form.Set("csrf", d.csrf)
	res, err := d.http.PostForm(d.k.URL+path, form)
	if err != nil {
		d.t.Fatal(err)
	}
	return d.read(res, path)
}

func (d *dashboardClient) read(res *http.Response, path string) string {
	d.t.Helper()
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK {
		d.t.Fatalf("%s: %d %s", path, res.StatusCode, b)
	}
	if m := csrfField.FindSubmatch(b); m != nil {
		d.csrf = string(m[1])
	}
	return string(b)
}

// step runs one named step of a long scenario. It logs the step's name
// before running it, so that a failure's output (all that make's report
// shows of a test) says which step it happened in. The step runs on the
// scenario's own t, which the harness's helpers fail, so a failure in it
// ends the scenario; it is no subtest.
func step(t *testing.T, name string, f func()) {
	t.Helper()
	t.Logf("step: %s", name)
	f()
}
