package http_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/egress"
	kassahttp "github.com/kassapay/kassa/http"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/lnurl"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/operator"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
)

// The tests of the whole service's telemetry (its metrics, traces, the
// operator page and the deploy files' series) run here, in the test
// binary that links the service anyway; TestMain (observe_test.go)
// records every span in Spans.

const adminToken = "admin-token-of-the-trace-test-0123456789"

// stack is the whole service in one process: the HTTP handler over the
// real actors and an in-memory Pebble, the simulated chain and Lightning
// node, a forwarder paying a merchant's simulated Lightning address, and
// webhooks delivered to a local receiver.
type stack struct {
	t        *testing.T
	url      string
	db       *persistence.DB
	sys      *actors.System
	fwd      *actors.Forwarder
	node     *lnsim.Node
	merchant *lnsim.Node
	lnurl    *httptest.Server
	hooks    *httptest.Server
	chain    *chainsim.Chain
	registry prometheus.Gatherer

	mu       sync.Mutex
	received []string // webhook bodies' types
}

// simulator pays an invoice's Lightning invoice with the simulated node,
// as the service's simulator does; it has no chain.
type simulator struct{ node *lnsim.Node }

func (s simulator) Pay(ctx context.Context, inv *kassa.Invoice, _ kassa.PaymentMethod, amount kassa.Sats) (string, error) {
	return s.node.Pay(ctx, inv.LightningInvoice, amount.MSat())
}

func (s simulator) Mine(context.Context, int) (int64, error) {
	return 0, kassa.Errorf(kassa.Invalid, "no chain")
}

func newStack(t *testing.T) *stack {
	t.Helper()
	s := &stack{t: t}
	var err error
	stats := metrics.New() // the stack's own metrics, as cmd/kassa gives each part one Set
	if s.db, err = persistence.Open("", persistence.Options{InMemory: true, Metrics: stats}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.db.Close() })
	clock := kassa.SystemClock{}
	s.chain = chainsim.New(clock)
	if s.node, err = lnsim.New(clock); err != nil {
		t.Fatal(err)
	}
	if s.merchant, err = lnsim.New(clock); err != nil {
		t.Fatal(err)
	}
	// The merchant's Lightning address: an LNURL-pay server in front of
	// its own simulated node.
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/lnurlp/shop", func(w http.ResponseWriter, r *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"tag": "payRequest", "callback": "http://" + r.Host + "/cb", "minSendable": 1000,
			"maxSendable": 100_000_000_000, "metadata": `[["text/plain","shop"]]`,
		})
	})
	mux.HandleFunc("GET /cb", func(w http.ResponseWriter, r *http.Request) {
		amount, _ := strconv.ParseInt(r.URL.Query().Get("amount"), 10, 64)
		li, err := s.merchant.CreateInvoice(r.Context(), kassa.MSat(amount), "shop", time.Hour)
		if err != nil {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		json.NewEncoder(w).Encode(map[string]any{"pr": li.PaymentRequest, "routes": []any{}})
	})
	s.lnurl = httptest.NewServer(mux)
	t.Cleanup(s.lnurl.Close)
	s.hooks = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Type string }
		json.NewDecoder(r.Body).Decode(&body)
		s.mu.Lock()
		s.received = append(s.received, body.Type)
		s.mu.Unlock()
	}))
	t.Cleanup(s.hooks.Close)

	quiet := slog.New(slog.DiscardHandler)
	s.fwd = actors.NewForwarder(actors.ForwarderConfig{
		Journal: s.db, Store: s.db, Reader: s.db, Payer: lnsim.NewPayer(s.merchant),
		Addresses: lnurl.Addresses{Client: lnurl.New(lnurl.Config{Net: &chaincfg.RegressionNetParams, AllowHTTP: true})},
		Clock:     clock, Logger: quiet, Metrics: stats,
	})
	t.Cleanup(s.fwd.Shutdown)
	egressCfg := egress.DefaultConfig()
	egressCfg.AllowPrivate, egressCfg.RequireHTTPS = true, false
	fixed := rates.Fixed{}
	s.sys = actors.NewSystem(actors.Config{
		Journal: s.db, Reader: s.db, Chain: s.chain, Lightning: s.node, Rates: fixed,
		Webhooks: egress.WebhookClient{Client: egress.New(egressCfg), App: "Kassa"},
		Clock:    clock, Logger: quiet, Forwarder: s.fwd, Metrics: stats,
	})
	t.Cleanup(s.sys.Runtime.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := s.chain.Start(ctx, s.sys.Service.HandleChainEvent); err != nil {
		t.Fatal(err)
	}
	if err := s.node.Start(ctx, s.sys.Service.HandleLightningEvent); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(kassahttp.NewHandler(kassahttp.Deps{
		Reader: s.db, Stores: s.sys.Service, Invoices: s.sys.Service, PaymentRequests: s.sys.Service, Rates: fixed, Webhooks: s.sys.Service,
		Chain: s.chain, Lightning: s.node, KV: s.db, Storage: s.db, Clock: clock, Logger: quiet,
		AdminToken: adminToken, Simulator: simulator{s.node}, Version: "test", Metrics: stats,
		Operator: operator.New(operator.Deps{Reader: s.db, Journal: s.db, Forwards: s.db, Clock: clock,
			Actors: []interface{ ActorStats() []actors.ActorStat }{s.sys.Runtime, s.fwd}}),
	}))
	t.Cleanup(srv.Close)
	s.url = srv.URL

	local := prometheus.NewRegistry()
	local.MustRegister(metrics.Collector(actors.Collector(s.sys.Runtime, s.fwd)), metrics.Collector(metrics.Backends(s.chain, s.node)),
		metrics.Collector(metrics.RateAges(fixed.Fetched, clock)), metrics.Collector(metrics.Disk(t.TempDir())))
	s.registry = prometheus.Gatherers{stats.Registry, local}
	return s
}

// do sends a request and decodes a JSON answer into out (when not nil);
// it fails the test on a status other than want.
func (s *stack) do(method, path, auth, body string, want int, out any) http.Header {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	if err != nil {
		s.t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		s.t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, data, want)
	}
	if out != nil {
		if err := json.NewDecoder(bytes.NewReader(data)).Decode(out); err != nil {
			s.t.Fatalf("%s %s: %v in %s", method, path, err, data)
		}
	}
	return resp.Header
}

// run is what both tests do: a store with a Lightning address and a
// webhook, an invoice created over HTTP and paid by Lightning over the
// checkout page's simulation button; it waits until the settle's
// webhook arrived and the forward was paid.
type run struct {
	storeID, apiKey, webhookID, secret, invoiceID string
}

func (s *stack) payOneInvoice() run {
	s.t.Helper()
	var st struct{ StoreID, APIKey string }
	s.do("POST", "/admin/v1/stores", "Bearer "+adminToken, `{"name":"Shop","currency":"SATS","lightningAddress":"shop@`+strings.TrimPrefix(s.lnurl.URL, "http://")+`"}`, 200, &st)
	auth := "token " + st.APIKey
	var wh struct{ ID, Secret string }
	s.do("POST", "/api/v1/stores/"+st.StoreID+"/webhooks", auth, `{"url":"`+s.hooks.URL+`/hook"}`, 200, &wh)
	var inv struct{ ID string }
	s.do("POST", "/api/v1/stores/"+st.StoreID+"/invoices", auth, `{"amount":"20000","currency":"SATS"}`, 200, &inv)
	s.do("POST", "/checkout/"+inv.ID+"/sim/pay?method=lightning", "", "", 200, nil)
	s.eventually("the settle's webhook and a paid forward", func() bool {
		s.mu.Lock()
		settled := strings.Contains(strings.Join(s.received, ","), "Settled")
		s.mu.Unlock()
		open, queued, err := s.fwd.ForwardCounts(context.Background())
		return settled && err == nil && open == 0 && queued == 0 && forwardSucceeded()
	})
	return run{storeID: st.StoreID, apiKey: st.APIKey, webhookID: wh.ID, secret: wh.Secret, invoiceID: inv.ID}
}

// forwardSucceeded reports whether a forward.Step span named a forward
// and ended: the payment was made and recorded.
func forwardSucceeded() bool {
	for _, sp := range kassahttp.Spans.Ended() {
		if sp.Name() == "forward.Step" {
			for _, a := range sp.Attributes() {
				if a.Key == "forward.id" {
					return true
				}
			}
		}
	}
	return false
}

// eventually polls cond until it holds, failing the test after a minute.
func (s *stack) eventually(what string, cond func() bool) {
	s.t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			s.t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
