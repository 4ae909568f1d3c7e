package greenfield_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/egress"
	"github.com/kassapay/kassa/greenfield"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
	"github.com/kassapay/kassa/refund"
)

var testNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

const (
	keyA = "key-a-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	keyB = "key-b-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
)

// env is Kassa's whole HTTP handler, as cmd/kassa wires it, with the
// Greenfield API mounted under /greenfield: the actors over Pebble on an
// in-memory file system, the simulated chain and node, fixed rates and a
// test clock. Store A (EUR) is the plugin's; store B (USD) another
// merchant's.
type env struct {
	t     *testing.T
	h     http.Handler
	db    *persistence.DB
	sys   *actors.System
	clock *kassatest.TestClock
	chain stubBackend
	// sim is the simulated chain the actors watch: Pay and Mine.
	sim *chainsim.Chain
	// refunds is the refund service the handler serves, as cmd/kassa
	// wires it (no sender: an approved payout waits).
	refunds *refund.Service
}

type stubBackend struct{ synced *bool }

func (b stubBackend) Info(context.Context) kassa.BackendInfo {
	return kassa.BackendInfo{Backend: "rpc", Network: "regtest", Synced: *b.synced}
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// As with --dev: the test's receivers listen on loopback over http.
	return newEnvWith(t, egress.Config{AllowPrivate: true, Timeout: 5 * time.Second})
}

// newEnvWith is newEnv with webhooks sent by an egress client of cfg.
func newEnvWith(t *testing.T, cfg egress.Config) *env {
	t.Helper()
	e := &env{t: t, clock: kassatest.NewTestClock(testNow)}
	db, err := persistence.Open("kassa", persistence.Options{FS: vfs.NewMem(), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	chain := chainsim.New(e.clock)
	e.sim = chain
	node, err := lnsim.New(e.clock)
	if err != nil {
		t.Fatal(err)
	}
	fixed := rates.Fixed{Rates: map[kassa.Currency]decimal.Decimal{
		kassa.EUR: decimal.RequireFromString("50000"), kassa.USD: decimal.RequireFromString("55000.5"),
	}}
	e.sys = actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: chain, Lightning: node, Rates: fixed,
		Webhooks: egress.WebhookClient{Client: egress.New(cfg), App: "Kassa"},
		Clock:    e.clock, Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(e.sys.Runtime.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := chain.Start(ctx, e.sys.Service.HandleChainEvent); err != nil {
		t.Fatal(err)
	}
	if err := node.Start(ctx, e.sys.Service.HandleLightningEvent); err != nil {
		t.Fatal(err)
	}
	// Wakes invoices at their deadlines (expiry) as cmd/kassa does.
	e.sys.Runtime.RunSweeper(ctx)
	e.putStore("store_a", kassa.StoreSettings{
		Name: "Alice's Shop", Currency: kassa.EUR, PercentFee: decimal.RequireFromString("1"),
		UnderpaymentTolerance: decimal.RequireFromString("0.25"), ConfirmationsRequired: 1,
	}, kassa.APIKey{ID: "key_a1", Label: "WooCommerce", Key: keyA, CreatedAt: testNow})
	e.putStore("store_b", kassa.StoreSettings{
		Name: "Bob's Shop", Currency: kassa.USD, ConfirmationsRequired: 1,
	}, kassa.APIKey{ID: "key_b1", Label: "default", Key: keyB, CreatedAt: testNow})
	synced := true
	e.chain = stubBackend{&synced}
	e.refunds = refund.New(refund.Config{Reader: db, Payouts: db, Ledger: e.sys.Service, Rates: fixed, Clock: e.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}})
	d := e.deps()
	d.Chain, d.Lightning, d.Clock, d.PublicURL = e.chain, e.chain, e.clock, "https://pay.example.com/"
	gf := greenfield.NewHandler(d)
	e.h = kassahttp.NewHandler(kassahttp.Deps{
		Reader: db, Stores: e.sys.Service, Invoices: e.sys.Service, PaymentRequests: e.sys.Service, Rates: fixed, Webhooks: e.sys.Service,
		KV: db, Clock: e.clock, PublicURL: "https://pay.example.com/", Greenfield: gf,
	})
	// Every Greenfield exchange is checked against the document served.
	e.h = gfDoc.Handler(t, e.h)
	return e
}

// deps are the Greenfield handler's dependencies over e's actors and
// database, every optional service included.
func (e *env) deps() greenfield.Deps {
	return greenfield.Deps{
		Reader: e.db, Invoices: e.sys.Service, Webhooks: e.sys.Service, Keys: e.sys.Service,
		Refunds: e.refunds, Payouts: e.db,
	}
}

func (e *env) putStore(id string, settings kassa.StoreSettings, keys ...kassa.APIKey) {
	e.t.Helper()
	st := kassa.NewStore(id, settings, testNow)
	st.APIKeys = keys
	st.CreditLimit = 10_000_000
	b := e.db.NewBatch()
	b.PutStore(st, 0)
	if err := e.db.Commit(e.t.Context(), b); err != nil {
		e.t.Fatal(err)
	}
}

// do sends a request as btcpayserver-greenfield-php v2.9.0 does
// (src/Client/AbstractClient.php, getRequestHeaders): Accept and
// Content-Type application/json, "Authorization: token <key>", to the
// base URL the merchant entered plus /api/v1/.
func (e *env) do(method, path, body string, key ...string) *httptest.ResponseRecorder {
	e.t.Helper()
	r := httptest.NewRequest(method, path, strings.NewReader(body))
	r.Header.Set("Accept", "application/json")
	r.Header.Set("Content-Type", "application/json")
	k := keyA
	if len(key) > 0 {
		k = key[0]
	}
	if k != "" {
		r.Header.Set("Authorization", "token "+k)
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// base is the URL the merchant gives the plugin, as the tests' paths.
const base = "/greenfield"

func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("response is not the expected JSON: %v\n%s", err, w.Body.String())
	}
	return v
}

func expectStatus(t *testing.T, w *httptest.ResponseRecorder, want int) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("status %d, want %d; body: %s", w.Code, want, w.Body.String())
	}
}

// expectAPIError checks Greenfield's error shape {code, message}.
func expectAPIError(t *testing.T, w *httptest.ResponseRecorder, status int, code string, inMessage ...string) {
	t.Helper()
	expectStatus(t, w, status)
	body := decode[struct{ Code, Message string }](t, w)
	if body.Code != code {
		t.Errorf("code %q, want %q (message %q)", body.Code, code, body.Message)
	}
	for _, part := range inMessage {
		if !strings.Contains(body.Message, part) {
			t.Errorf("message %q does not contain %q", body.Message, part)
		}
	}
}

// expectValidation checks Greenfield's 422 [{path, message}] and that it
// names every path of paths.
func expectValidation(t *testing.T, w *httptest.ResponseRecorder, paths ...string) {
	t.Helper()
	expectStatus(t, w, http.StatusUnprocessableEntity)
	errs := decode[[]struct{ Path, Message string }](t, w)
	for _, p := range paths {
		found := false
		for _, e := range errs {
			if e.Path == p && e.Message != "" {
				found = true
			}
		}
		if !found {
			t.Errorf("no error for path %q in %s", p, w.Body.String())
		}
	}
}

// invoiceCount is how many invoices store has.
func (e *env) invoiceCount(storeID string) int {
	e.t.Helper()
	n := 0
	if _, err := e.db.Invoices(e.t.Context(), storeID, kassa.ListQuery{}, func(*kassa.Invoice) error { n++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// payOnchain reports a payment of amount to inv's address with
// confirmations, as a chain backend does.
func (e *env) payOnchain(invoiceID, txid string, amount kassa.Sats, confirmations int32) {
	e.t.Helper()
	inv, err := e.db.Invoice(e.t.Context(), invoiceID)
	if err != nil {
		e.t.Fatal(err)
	}
	p := kassa.Payment{
		ID: txid + ":0", Method: kassa.MethodOnchain, TxID: txid, Amount: amount, Destination: inv.OnchainAddress,
		Confirmations: confirmations, ReceivedAt: e.clock.Now(),
	}
	if err := e.sys.Service.HandleChainEvent(e.t.Context(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: p}); err != nil {
		e.t.Fatal(err)
	}
}
