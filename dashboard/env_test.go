package dashboard

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
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
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
	"github.com/kassapay/kassa/refund"
	"github.com/kassapay/kassa/topup"
)

var testNow = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// env is the whole service over in-memory Pebble with the simulated
// backends, the API and the dashboard in one handler, served on
// loopback: the dashboard's changes and the API see the same actors.
type env struct {
	t     *testing.T
	srv   *httptest.Server
	db    *persistence.DB
	sys   *actors.System
	clock *kassatest.TestClock
	dash  *Dashboard
	sim   *simulator
}

type envOption func(*Deps)

func newEnv(t *testing.T, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, clock: kassatest.NewTestClock(testNow)}
	db, err := persistence.Open("kassa", persistence.Options{FS: vfs.NewMem(), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	chain := chainsim.New(e.clock)
	node, err := lnsim.New(e.clock)
	if err != nil {
		t.Fatal(err)
	}
	e.sim = &simulator{chain: chain, node: node}
	cfg := egress.DefaultConfig()
	cfg.AllowPrivate, cfg.RequireHTTPS = true, false
	fixed := rates.Fixed{Rates: map[kassa.Currency]decimal.Decimal{kassa.EUR: decimal.RequireFromString("50000"), kassa.USD: decimal.RequireFromString("55000")}}
	e.sys = actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: chain, Lightning: node, Rates: fixed,
		Webhooks: egress.WebhookClient{Client: egress.New(cfg), App: "Kassa"}, Clock: e.clock, Logger: slog.New(slog.DiscardHandler),
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
	e.srv = httptest.NewUnstartedServer(nil)
	d := Deps{Reader: db, Services: e.sys.Service, KV: db, Simulator: e.sim, Clock: e.clock, Logger: slog.New(slog.DiscardHandler),
		PublicURL: "http://" + e.srv.Listener.Addr().String(), AdminToken: "admin-token", PercentFee: decimal.RequireFromString("1"),
		// As kassa serve --dev: open sign-up, the first account is the
		// operator. Tests of the defaults set these back.
		Signup: SignupOpen, SignupOperator: true,
		Refunds: refund.New(refund.Config{Reader: db, Payouts: db, Ledger: e.sys.Service, Rates: fixed, Clock: e.clock,
			Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}}),
		Payouts: db}
	for _, o := range opts {
		o(&d)
	}
	// Paid top-ups are credited in the background, as serve does.
	topUps := topup.New(topup.Deps{Reader: db, Services: e.sys.Service, KV: d.KV, Clock: e.clock, Logger: d.Logger})
	if d.TopUps == nil {
		d.TopUps = topUps
	}
	e.dash = New(d)
	loopCtx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		topUps.Run(loopCtx, 10*time.Millisecond)
	}()
	t.Cleanup(func() { stop(); <-done })
	e.srv.Config.Handler = kassahttp.NewHandler(kassahttp.Deps{Reader: db, Stores: e.sys.Service, Invoices: e.sys.Service, PaymentRequests: e.sys.Service,
		Webhooks: e.sys.Service, Rates: fixed, KV: db, Clock: e.clock, PublicURL: d.PublicURL, AdminToken: "admin-token", Dashboard: e.dash})
	e.srv.Start()
	t.Cleanup(e.srv.Close)
	return e
}

type simulator struct {
	chain *chainsim.Chain
	node  *lnsim.Node
}

func (s *simulator) Pay(ctx context.Context, inv *kassa.Invoice, method kassa.PaymentMethod, amount kassa.Sats) (string, error) {
	if method == kassa.MethodLightning {
		return s.node.Pay(ctx, inv.LightningInvoice, amount.MSat())
	}
	if amount == 0 {
		amount = inv.Amount - inv.TotalPaid()
	}
	return s.chain.Pay(ctx, inv.OnchainAddress, amount)
}

func (s *simulator) Mine(ctx context.Context, n int) (int64, error) { return s.chain.Mine(ctx, n) }

// client is one browser: a cookie jar that does not follow redirects.
type client struct {
	e    *env
	http *http.Client
	// csrf is the token of the last page read.
	csrf string
}

func (e *env) client() *client {
	jar, _ := cookiejar.New(nil)
	return &client{e: e, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// get reads path and remembers the page's CSRF token.
func (c *client) get(path string) (int, string, http.Header) {
	c.e.t.Helper()
	code, body, hdr := c.read(c.http.Get(c.e.srv.URL + path))
	c.remember(body)
	return code, body, hdr
}

// read returns the status, body and header of an answer (res, err as
// the http.Client gave them); an error fails the test.
func (c *client) read(res *http.Response, err error) (int, string, http.Header) {
	c.e.t.Helper()
	if err != nil {
		c.e.t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(body), res.Header
}

// remember keeps the CSRF token of the page body, if it has one.
func (c *client) remember(body string) {
	if m := csrfField.FindStringSubmatch(body); m != nil {
		c.csrf = m[1]
	}
}

// post sends a form with the page's CSRF token (unless the form has a
// csrf already, or noCSRF).
func (c *client) post(path string, form url.Values) (int, string, http.Header) {
	c.e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	if _, ok := form["csrf"]; !ok {
		form.Set("csrf", c.csrf)
	}
	return c.postRaw(path, form)
}

func (c *client) postRaw(path string, form url.Values) (int, string, http.Header) {
	c.e.t.Helper()
	code, body, hdr := c.read(c.http.PostForm(c.e.srv.URL+path, form))
	c.remember(body)
	return code, body, hdr
}

// signup makes an account and signs in.
func (c *client) signup(email string) {
	c.e.t.Helper()
	c.get("/dashboard/signup")
	code, body, hdr := c.post("/dashboard/signup", url.Values{"email": {email}, "password": {"correct horse battery"}})
	if code != http.StatusSeeOther {
		c.e.t.Fatalf("signup %s: %d %s", email, code, body)
	}
	if hdr.Get("Location") != "/dashboard/stores" {
		c.e.t.Fatalf("signup went to %s", hdr.Get("Location"))
	}
	c.get("/dashboard/stores")
}

// createStore makes a store in the dashboard and returns it.
func (c *client) createStore(name string) *kassa.Store {
	c.e.t.Helper()
	c.get("/dashboard/stores/new")
	code, body, hdr := c.post("/dashboard/stores", url.Values{"name": {name}, "currency": {"EUR"}})
	if code != http.StatusSeeOther {
		c.e.t.Fatalf("create store: %d %s", code, body)
	}
	id := strings.TrimSuffix(strings.TrimPrefix(hdr.Get("Location"), "/dashboard/stores/"), "/?done=created")
	st, err := c.e.db.Store(c.e.t.Context(), id)
	if err != nil {
		c.e.t.Fatalf("store %q from %s: %v", id, hdr.Get("Location"), err)
	}
	c.get("/dashboard/stores/" + id + "/")
	return st
}

// api calls the merchant API with key and decodes the answer.
func (e *env) api(method, path, key string, body any) (int, []byte) {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		r = strings.NewReader(string(data))
	}
	req, _ := http.NewRequest(method, e.srv.URL+path, r)
	req.Header.Set("x-api-key", key)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer res.Body.Close()
	out, _ := io.ReadAll(res.Body)
	return res.StatusCode, out
}
