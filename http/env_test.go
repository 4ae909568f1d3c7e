package http

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
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
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/apitest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
	"github.com/kassapay/kassa/refund"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testNow is the fixed time every test starts at.
var testNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// Keys of the two test stores.
const (
	keyA = "key-a-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	keyB = "key-b-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
)

// testRates are the fixed prices of one bitcoin of the tests.
var testRates = map[kassa.Currency]decimal.Decimal{
	kassa.EUR: decimal.RequireFromString("50000"),
	kassa.USD: decimal.RequireFromString("55000.5"),
	kassa.CAD: decimal.RequireFromString("75000"),
	kassa.JPY: decimal.RequireFromString("8000000"),
	kassa.GBP: decimal.RequireFromString("42000"),
	kassa.CHF: decimal.RequireFromString("48000.25"),
}

// env is the handler over the real service, wired as cmd/kassa wires it:
// the actors over Pebble on an in-memory file system, the simulated
// chain and Lightning node, fixed rates and a test clock. It has two
// stores: A (EUR, the caller's, with a second "staging" key) and B (USD,
// another merchant's).
//
// The services reach the handler through thin wrappers (faults.go's
// style: plain fields, no rules) so that a test can make a call fail.
type env struct {
	t        *testing.T
	h        http.Handler
	deps     Deps
	db       *persistence.DB
	sys      *actors.System
	chain    *chainsim.Chain
	node     *lnsim.Node
	reader   *faultyReader
	invoices *faultyInvoices
	payLinks *faultyPayLinks
	webhooks *faultyWebhooks
	hooks    *webhookClient
	clock    *kassatest.TestClock
	logs     *kassatest.LogBuffer
	storeA   *kassa.Store
	storeB   *kassa.Store
}

// option changes the environment before the handler is built.
type option func(*env)

// withSim turns simulation on: the admin and checkout-page simulation
// routes drive the simulated chain and node.
func withSim(e *env) { e.deps.Simulator = &simulator{chain: e.chain, node: e.node} }

// withDeps changes the handler's dependencies.
func withDeps(f func(*Deps)) option { return func(e *env) { f(&e.deps) } }

// newEnv returns an environment whose clock reads testNow.
func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	return newEnvAt(t, testNow, opts...)
}

// newEnvAt returns an environment whose clock starts at start, for tests
// that create invoices in the past (seedInvoice moves the clock forward).
func newEnvAt(t *testing.T, start time.Time, opts ...option) *env {
	t.Helper()
	e := &env{t: t, clock: kassatest.NewTestClock(start), logs: &kassatest.LogBuffer{}}
	db, err := persistence.Open("kassa", persistence.Options{FS: vfs.NewMem(), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	e.chain = chainsim.New(e.clock)
	if e.node, err = lnsim.New(e.clock); err != nil {
		t.Fatal(err)
	}
	e.hooks = &webhookClient{check: egress.New(egress.DefaultConfig())}
	fixed := rates.Fixed{Rates: testRates}
	e.sys = actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: e.chain, Lightning: e.node, Rates: fixed,
		Webhooks: e.hooks, Clock: e.clock, Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(e.sys.Runtime.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.chain.Start(ctx, e.sys.Service.HandleChainEvent); err != nil {
		t.Fatal(err)
	}
	if err := e.node.Start(ctx, e.sys.Service.HandleLightningEvent); err != nil {
		t.Fatal(err)
	}
	// The deadline sweeper, as kassa serve runs it: it wakes New invoices,
	// whose actors passivate until their expiry is near.
	e.sys.Runtime.RunSweeper(ctx)

	e.storeA = e.putStore("store_a", kassa.StoreSettings{
		Name: "Alice's Shop", Currency: kassa.EUR, PercentFee: decimal.RequireFromString("1"),
		UnderpaymentTolerance: decimal.RequireFromString("0.25"), ConfirmationsRequired: 1,
	}, kassa.APIKey{ID: "key_a1", Label: "production", Key: keyA, CreatedAt: testNow},
		kassa.APIKey{ID: "key_a2", Label: "staging", Key: keyA + "-staging", CreatedAt: testNow})
	e.storeB = e.putStore("store_b", kassa.StoreSettings{
		Name: "Bob's Shop", Currency: kassa.USD, PercentFee: decimal.RequireFromString("0.5"), ConfirmationsRequired: 1,
	}, kassa.APIKey{ID: "key_b1", Label: "default", Key: keyB, CreatedAt: testNow})

	e.reader = &faultyReader{Reader: db}
	e.invoices = &faultyInvoices{InvoiceService: e.sys.Service}
	e.payLinks = &faultyPayLinks{PaymentRequestService: e.sys.Service}
	e.webhooks = &faultyWebhooks{WebhookService: e.sys.Service}
	e.deps = Deps{
		Reader:          e.reader,
		Stores:          e.sys.Service,
		Invoices:        e.invoices,
		PaymentRequests: e.payLinks,
		Webhooks:        e.webhooks,
		Refunds: refund.New(refund.Config{Reader: db, Payouts: db, Ledger: e.sys.Service, Rates: fixed, Clock: e.clock,
			Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}}),
		Payouts:    db,
		Keys:       e.sys.Service,
		Rates:      fixed,
		Chain:      stubBackend{kassa.BackendInfo{Backend: "rpc", Network: "regtest", Height: 812, Synced: true}},
		Lightning:  stubBackend{kassa.BackendInfo{Backend: "lnd", Network: "regtest", Synced: true}},
		KV:         db,
		Clock:      e.clock,
		Logger:     slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PublicURL:  "https://pay.example.com/",
		AdminToken: "admin-secret-token",
		Version:    "v1.2.3-test",
	}
	for _, opt := range opts {
		opt(e)
	}
	e.h = apitest.Handler(t, NewHandler(e.deps))
	return e
}

// putStore writes a store with a fixed id and keys to storage, as the
// store actor writes a new one, so that tests can name it and its keys.
func (e *env) putStore(id string, settings kassa.StoreSettings, keys ...kassa.APIKey) *kassa.Store {
	e.t.Helper()
	st := kassa.NewStore(id, settings, testNow)
	st.APIKeys = keys
	// Room for the fees of large test invoices (1 BTC at 1 %).
	st.CreditLimit = 10_000_000
	b := e.db.NewBatch()
	b.PutStore(st, 0)
	if err := e.db.Commit(e.t.Context(), b); err != nil {
		e.t.Fatal(err)
	}
	return st
}

// rebuild makes a new handler over the same service, after a test
// changed e.deps.
func (e *env) rebuild() { e.h = apitest.Handler(e.t, NewHandler(e.deps)) }

// header is one request header; an empty value removes a default.
type header struct{ name, value string }

// do sends a request as store A's key (unless headers say otherwise),
// with Content-Type application/json when there is a body.
func (e *env) do(method, path, body string, headers ...header) *httptest.ResponseRecorder {
	e.t.Helper()
	return e.doFrom("192.0.2.1:1234", method, path, body, headers...)
}

// doFrom is do from the client address remote (host:port).
func (e *env) doFrom(remote, method, path, body string, headers ...header) *httptest.ResponseRecorder {
	e.t.Helper()
	var r *http.Request
	if body == "" {
		r = httptest.NewRequest(method, path, nil)
	} else {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	}
	r.RemoteAddr = remote
	r.Header.Set("X-Api-Key", keyA)
	for _, h := range headers {
		if h.value == "" {
			r.Header.Del(h.name)
		} else {
			r.Header.Set(h.name, h.value)
		}
	}
	w := httptest.NewRecorder()
	e.h.ServeHTTP(w, r)
	return w
}

// asB sends the request with store B's key.
var asB = header{"X-Api-Key", keyB}

// noKey sends the request without a key.
var noKey = header{"X-Api-Key", ""}

// decode parses a JSON response body.
func decode[T any](t *testing.T, w *httptest.ResponseRecorder) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
		t.Fatalf("response is not the expected JSON: %v\n%s", err, w.Body.String())
	}
	return v
}

// expectStatus fails the test when w has another status.
func expectStatus(t *testing.T, w *httptest.ResponseRecorder, want int) {
	t.Helper()
	if w.Code != want {
		t.Fatalf("status %d, want %d; body: %s", w.Code, want, w.Body.String())
	}
}

// expectError checks the status and the error body's code, and that the
// message contains every part of wantMessage.
func expectError(t *testing.T, w *httptest.ResponseRecorder, status int, code string, wantMessage ...string) errorBody {
	t.Helper()
	expectStatus(t, w, status)
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("Content-Type %q, want JSON", ct)
	}
	body := decode[errorBody](t, w)
	if body.Code != code {
		t.Errorf("code %q, want %q (message %q)", body.Code, code, body.Message)
	}
	for _, part := range wantMessage {
		if !strings.Contains(body.Message, part) {
			t.Errorf("message %q does not contain %q", body.Message, part)
		}
	}
	return body
}

// Random values of the real service, which golden files show as
// placeholders: PNG data URIs (checked by package qr), Lightning
// invoices, regtest addresses, 64-digit hex (payment hashes, txids,
// secrets) and ids of 20 characters of kassa.NewID's alphabet.
var (
	qrDataURIPattern = regexp.MustCompile(`"data:image/png;base64,[A-Za-z0-9+/=]+"`)
	bolt11Pattern    = regexp.MustCompile(`(?i)lnbcrt[0-9a-z]{100,}`)
	addressPattern   = regexp.MustCompile(`bcrt1[0-9a-z]{38,60}`)
	hexPattern       = regexp.MustCompile(`\b[0-9a-f]{64}\b`)
	idPattern        = regexp.MustCompile(`\b[a-km-z2-9]{20}\b`)
)

// normalize replaces the random values of body with placeholders
// numbered in order of first appearance, so that a value that recurs
// (an invoice id in its checkout link) recurs as the same placeholder.
func normalize(body []byte) []byte {
	body = qrDataURIPattern.ReplaceAll(body, []byte(`"data:image/png;base64,…"`))
	for _, p := range []struct {
		re   *regexp.Regexp
		name string
	}{{bolt11Pattern, "lnbcrt"}, {addressPattern, "bcrt1"}, {hexPattern, "hex"}, {idPattern, "id"}} {
		seen := map[string]string{}
		body = p.re.ReplaceAllFunc(body, func(v []byte) []byte {
			key := strings.ToLower(string(v)) // QR content is upper case
			name, ok := seen[key]
			if !ok {
				name = fmt.Sprintf("<%s-%d>", p.name, len(seen)+1)
				seen[key] = name
			}
			return []byte(name)
		})
	}
	return body
}

// expectGolden compares a JSON body, normalized, with
// testdata/<name>.json. go test -update rewrites the file.
func expectGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	body = normalize(body)
	var out bytes.Buffer
	if err := json.Indent(&out, body, "", "  "); err != nil {
		t.Fatalf("body is not JSON: %v\n%s", err, body)
	}
	out.WriteByte('\n')
	path := filepath.Join("testdata", name+".json")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("%s differs from the golden file:\n--- got\n%s\n--- want\n%s", name, out.Bytes(), want)
	}
}

// readAll reads a response body to the end.
func readAll(t *testing.T, r io.Reader) []byte {
	t.Helper()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// advanceTo moves the clock forward to at (a time already passed leaves
// it) and waits until every invoice that is past its expiry has expired,
// so that what a test reads next does not depend on when the actors got
// to it.
func (e *env) advanceTo(at time.Time) {
	e.t.Helper()
	now := e.clock.Now()
	if !at.After(now) {
		return
	}
	e.clock.Advance(at.Sub(now))
	e.eventually("overdue invoices to expire", func() bool {
		overdue := false
		for _, st := range []string{"store_a", "store_b"} {
			_, err := e.db.Invoices(e.t.Context(), st, kassa.ListQuery{}, func(inv *kassa.Invoice) error {
				if inv.Status == kassa.InvoiceNew && !inv.ExpiresAt.After(at) {
					overdue = true
				}
				return nil
			})
			if err != nil {
				e.t.Fatal(err)
			}
		}
		return !overdue
	})
}

// eventually polls cond until it holds, failing the test after a
// generous deadline: the actors work asynchronously.
func (e *env) eventually(what string, cond func() bool) {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// seedInvoice creates an invoice of store through the actors at the
// given time (moving the clock forward to it; a time already passed means
// now) and returns it.
func (e *env) seedInvoice(storeID string, at time.Time, body string) *kassa.Invoice {
	e.t.Helper()
	var b createInvoiceBody
	if err := json.Unmarshal([]byte(body), &b); err != nil {
		e.t.Fatal(err)
	}
	req, err := b.invoiceRequest()
	if err != nil {
		e.t.Fatal(err)
	}
	e.advanceTo(at)
	inv, err := e.sys.Service.CreateInvoice(e.t.Context(), storeID, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return inv
}

// invoice reads an invoice from storage.
func (e *env) invoice(id string) *kassa.Invoice {
	e.t.Helper()
	inv, err := e.db.Invoice(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("invoice %s: %v", id, err)
	}
	return inv
}

// invoiceIDs lists the ids of a store's invoices, sorted.
func (e *env) invoiceIDs(storeID string) []string {
	e.t.Helper()
	var ids []string
	if _, err := e.db.Invoices(e.t.Context(), storeID, kassa.ListQuery{}, func(inv *kassa.Invoice) error {
		ids = append(ids, inv.ID)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	sort.Strings(ids)
	return ids
}

// payOnchain pays inv on-chain as a chain backend reports it: txid pays
// amount with confirmations, received at the clock's time. It returns
// once the invoice actor has saved the payment.
func (e *env) payOnchain(inv *kassa.Invoice, txid string, amount kassa.Sats, confirmations int32, mods ...func(*kassa.Payment)) {
	e.t.Helper()
	p := kassa.Payment{
		ID: txid + ":0", Method: kassa.MethodOnchain, TxID: txid, Amount: amount, Destination: inv.OnchainAddress,
		Confirmations: confirmations, NetworkFee: 141, FeeRate: 1, ReceivedAt: e.clock.Now(),
	}
	for _, mod := range mods {
		mod(&p)
	}
	if err := e.sys.Service.HandleChainEvent(e.t.Context(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: p}); err != nil {
		e.t.Fatal(err)
	}
}

// dropOnchain reports that txid, a payment of inv, left the mempool
// (double-spent).
func (e *env) dropOnchain(inv *kassa.Invoice, txid string) {
	e.t.Helper()
	p := kassa.Payment{ID: txid + ":0", Method: kassa.MethodOnchain, TxID: txid, Destination: inv.OnchainAddress}
	if err := e.sys.Service.HandleChainEvent(e.t.Context(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: p, Dropped: true}); err != nil {
		e.t.Fatal(err)
	}
}

// settle pays inv in full on-chain with two confirmations, a minute after
// the clock's time, and returns it as stored.
func settle(e *env, inv *kassa.Invoice) *kassa.Invoice {
	e.t.Helper()
	e.advanceTo(e.clock.Now().Add(time.Minute))
	e.payOnchain(inv, strings.Repeat("ab01", 16), inv.Amount, 2)
	got := e.invoice(inv.ID)
	if got.Status != kassa.InvoiceSettled {
		e.t.Fatalf("invoice %s is %s after its payment", inv.ID, got.Status)
	}
	return got
}

// stubBackend is a chain or Lightning backend for the health check that
// describes itself as info says.
type stubBackend struct{ info kassa.BackendInfo }

func (b stubBackend) Info(context.Context) kassa.BackendInfo { return b.info }

// simulator drives the simulated chain and node for the simulation
// routes, as cmd/kassa's simulator does.
type simulator struct {
	chain *chainsim.Chain
	node  *lnsim.Node
}

func (s *simulator) Pay(ctx context.Context, inv *kassa.Invoice, method kassa.PaymentMethod, amount kassa.Sats) (string, error) {
	switch method {
	case kassa.MethodLightning:
		if inv.LightningInvoice == "" {
			return "", kassa.Errorf(kassa.Invalid, "invoice %s has no Lightning invoice", inv.ID)
		}
		return s.node.Pay(ctx, inv.LightningInvoice, amount.MSat())
	case kassa.MethodOnchain:
		if inv.OnchainAddress == "" {
			return "", kassa.Errorf(kassa.Invalid, "invoice %s has no on-chain address", inv.ID)
		}
		if amount == 0 {
			amount = inv.Amount - inv.TotalPaid()
			if amount <= 0 {
				return "", kassa.Errorf(kassa.Invalid, "invoice %s has nothing left to pay", inv.ID)
			}
		}
		return s.chain.Pay(ctx, inv.OnchainAddress, amount)
	}
	return "", kassa.Errorf(kassa.Invalid, "unknown payment method")
}

func (s *simulator) Mine(ctx context.Context, n int) (int64, error) { return s.chain.Mine(ctx, n) }
