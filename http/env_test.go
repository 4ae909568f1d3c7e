package http

import (
	"bytes"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// testNow is the fixed time every test starts at.
var testNow = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// Keys of the two test stores.
const (
	keyA = "key-a-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
	keyB = "key-b-0123456789abcdef0123456789abcdef0123456789abcdef0123456789"
)

// env is a handler over fakes, with two stores: A (EUR, the caller's) and
// B (USD, another merchant's).
type env struct {
	t        *testing.T
	h        http.Handler
	deps     Deps
	reader   *fakeReader
	invoices *fakeInvoices
	payLinks *fakePayLinks
	stores   *fakeStores
	webhooks *fakeWebhooks
	sim      *fakeSimulator
	kv       *fakeKV
	clock    *kassatest.TestClock
	logs     *syncBuffer
	storeA   *kassa.Store
	storeB   *kassa.Store
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// withSim turns simulation on.
func withSim(d *Deps) { d.Simulator = &fakeSimulator{height: 100} }

func newEnv(t *testing.T, opts ...func(*Deps)) *env {
	t.Helper()
	e := &env{t: t, reader: newFakeReader(), clock: kassatest.NewTestClock(testNow), logs: &syncBuffer{}}
	e.invoices = &fakeInvoices{reader: e.reader, clock: e.clock}
	e.payLinks = &fakePayLinks{reader: e.reader, clock: e.clock, invoices: e.invoices}
	e.stores = &fakeStores{reader: e.reader, clock: e.clock}
	e.webhooks = newFakeWebhooks(e.reader, e.clock)
	e.kv = &fakeKV{clock: e.clock}
	e.storeA = &kassa.Store{
		ID: "store_a", Name: "Alice's Shop", Currency: kassa.EUR,
		PercentFee:            decimal.RequireFromString("1"),
		UnderpaymentTolerance: decimal.RequireFromString("0.25"),
		WalletMinSendable:     kassa.DefaultWalletMinSendable,
		WalletMaxSendable:     kassa.DefaultWalletMaxSendable,
		ConfirmationsRequired: 1,
		APIKeys: []kassa.APIKey{
			{ID: "key_a1", Label: "production", Key: keyA, CreatedAt: testNow},
			{ID: "key_a2", Label: "staging", Key: keyA + "-staging", CreatedAt: testNow},
		},
		CreatedAt: testNow,
	}
	e.storeB = &kassa.Store{
		ID: "store_b", Name: "Bob's Shop", Currency: kassa.USD,
		PercentFee:            decimal.RequireFromString("0.5"),
		ConfirmationsRequired: 1,
		APIKeys:               []kassa.APIKey{{ID: "key_b1", Label: "default", Key: keyB, CreatedAt: testNow}},
		CreatedAt:             testNow,
	}
	e.reader.putStore(e.storeA)
	e.reader.putStore(e.storeB)
	e.deps = Deps{
		Reader:          e.reader,
		Stores:          e.stores,
		Invoices:        e.invoices,
		PaymentRequests: e.payLinks,
		Webhooks:        e.webhooks,
		Rates:           fakeRates{},
		Chain:           fakeBackend{kassa.BackendInfo{Backend: "rpc", Network: "regtest", Height: 812, Synced: true}},
		Lightning:       fakeBackend{kassa.BackendInfo{Backend: "lnd", Network: "regtest", Synced: true}},
		KV:              e.kv,
		Clock:           e.clock,
		Logger:          slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
		PublicURL:       "https://pay.example.com/",
		AdminToken:      "admin-secret-token",
		Version:         "v1.2.3-test",
	}
	for _, opt := range opts {
		opt(&e.deps)
	}
	if s, ok := e.deps.Simulator.(*fakeSimulator); ok {
		e.sim = s
	}
	e.h = NewHandler(e.deps)
	return e
}

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

// qrDataURIPattern matches a PNG data URI in a JSON body.
var qrDataURIPattern = regexp.MustCompile(`"data:image/png;base64,[A-Za-z0-9+/=]+"`)

// expectGolden compares a JSON body with testdata/<name>.json, with PNG
// data URIs replaced by a placeholder (they are checked by the QR tests).
// go test -update rewrites the file.
func expectGolden(t *testing.T, name string, body []byte) {
	t.Helper()
	body = qrDataURIPattern.ReplaceAll(body, []byte(`"data:image/png;base64,…"`))
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

// seedInvoice creates an invoice of store through the fake service at
// the given time and returns it.
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
	saved := e.invoices.clock
	e.invoices.clock = kassatest.NewTestClock(at)
	defer func() { e.invoices.clock = saved }()
	inv, err := e.invoices.CreateInvoice(e.t.Context(), storeID, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return inv
}
