package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		opts   []option
		golden string
	}{
		{"real backends", nil, "health"},
		{"simulation", []option{withSim, withDeps(func(d *Deps) {
			d.Lightning = stubBackend{kassa.BackendInfo{Backend: "sim", Network: "regtest", Simulated: true, Synced: false}}
		})}, "health_sim"},
		{"no backends", []option{withDeps(func(d *Deps) { d.Chain, d.Lightning = nil, nil })}, "health_none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, tt.opts...)
			w := e.do("GET", "/api/v1/health", "", noKey)
			expectStatus(t, w, http.StatusOK)
			expectGolden(t, tt.golden, w.Body.Bytes())
		})
	}
}

// failedStorage is storage whose disk refused a write.
type failedStorage struct{ err error }

func (f failedStorage) Err() error { return f.err }

// TestHealthStorage checks that health reports the storage, and answers
// 503 "degraded" with the reason once a write to the disk failed.
func TestHealthStorage(t *testing.T) {
	t.Parallel()
	type health struct {
		Status  string
		Storage struct{ Status, Error string }
	}
	read := func(body []byte) health {
		t.Helper()
		var h health
		if err := json.Unmarshal(body, &h); err != nil {
			t.Fatalf("health body %s: %v", body, err)
		}
		return h
	}
	ok := newEnv(t, withDeps(func(d *Deps) { d.Storage = failedStorage{} }))
	w := ok.do("GET", "/api/v1/health", "", noKey)
	expectStatus(t, w, http.StatusOK)
	if h := read(w.Body.Bytes()); h.Status != "ok" || h.Storage.Status != "ok" || h.Storage.Error != "" {
		t.Errorf("health without failure: %s", w.Body)
	}

	failure := kassa.Errorf(kassa.Unavailable, "storage failed: the disk is full")
	bad := newEnv(t, withDeps(func(d *Deps) { d.Storage = failedStorage{failure} }))
	w = bad.do("GET", "/api/v1/health", "", noKey)
	expectStatus(t, w, http.StatusServiceUnavailable)
	if h := read(w.Body.Bytes()); h.Status != "degraded" || h.Storage.Status != "failed" || h.Storage.Error != "" {
		t.Errorf("public health after a failure: %s", w.Body)
	}
	w = bad.do("GET", "/api/v1/health", "", noKey, admin)
	if h := read(w.Body.Bytes()); h.Status != "degraded" || h.Storage.Status != "failed" || h.Storage.Error != failure.Message {
		t.Errorf("health after a failure, with the admin token: %s", w.Body)
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		path    string
		headers []header
		status  int
		code    string
	}{
		{"x-api-key", "/api/v1/stores/store_a", nil, 200, ""},
		{"second key of the store", "/api/v1/stores/store_a", []header{{"X-Api-Key", keyA + "-staging"}}, 200, ""},
		{"Authorization X-Api-Key", "/api/v1/stores/store_a", []header{noKey, {"Authorization", "X-Api-Key " + keyA}}, 200, ""},
		{"Authorization token", "/api/v1/stores/store_a", []header{noKey, {"Authorization", "token " + keyA}}, 200, ""},
		{"Authorization scheme in any case", "/api/v1/stores/store_a", []header{noKey, {"Authorization", "x-api-key " + keyA}}, 200, ""},
		{"no key", "/api/v1/stores/store_a", []header{noKey}, 401, kassa.Unauthorized},
		{"no key on a list", "/api/v1/stores/store_a/invoices", []header{noKey}, 401, kassa.Unauthorized},
		{"Authorization Bearer", "/api/v1/stores/store_a", []header{noKey, {"Authorization", "Bearer " + keyA}}, 200, ""},
		{"Bearer with an unknown key", "/api/v1/stores/store_a", []header{noKey, {"Authorization", "Bearer nope"}}, 401, kassa.Unauthorized},
		{"unknown key", "/api/v1/stores/store_a", []header{{"X-Api-Key", "nope"}}, 401, kassa.Unauthorized},
		{"over-long key", "/api/v1/stores/store_a", []header{{"X-Api-Key", strings.Repeat("k", 300)}}, 401, kassa.Unauthorized},
		{"key of another store", "/api/v1/stores/store_a", []header{asB}, 403, kassa.Forbidden},
		{"key of another store on an invoice", "/api/v1/stores/store_a/invoices/inv_0001", []header{asB}, 403, kassa.Forbidden},
		{"store that does not exist", "/api/v1/stores/store_zzz", nil, 403, kassa.Forbidden},
		{"store id that is no id", "/api/v1/stores/st%20ore", nil, 404, kassa.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.do("GET", tt.path, "", tt.headers...)
			if tt.code == "" {
				expectStatus(t, w, tt.status)
				return
			}
			expectError(t, w, tt.status, tt.code)
			if strings.Contains(e.logs.String(), keyA) || strings.Contains(e.logs.String(), keyB) {
				t.Error("an API key was logged")
			}
		})
	}
}

func TestAuthenticationBackendFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.reader.storeByAPIKey = func(string) (*kassa.Store, error) {
		return nil, kassa.Errorf(kassa.Unavailable, "storage is starting")
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_a", ""), 503, kassa.Unavailable, "storage is starting")
	e.reader.storeByAPIKey = func(string) (*kassa.Store, error) {
		return nil, errors.New("pebble: corrupt sstable 000042.sst")
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_a", ""), 500, kassa.Internal, "internal error")
	if !strings.Contains(e.logs.String(), "corrupt sstable") {
		t.Error("the cause of an internal error was not logged")
	}
}

func TestStores(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("GET", "/api/v1/stores/store_a", "")
	expectStatus(t, w, 200)
	expectGolden(t, "store", w.Body.Bytes())

	if rec := decode[storeRecord](t, w); rec.ID != "store_a" || rec.StoreID != "store_a" {
		t.Errorf("store record id %q, storeId %q: want both", rec.ID, rec.StoreID)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("the store with its API key has Cache-Control %q, want no-store", got)
	}

	for _, path := range []string{"/api/v1/stores", "/api/v1/stores/"} {
		w = e.do("GET", path, "", header{"X-Api-Key", keyA + "-staging"})
		expectStatus(t, w, 200)
		list := decode[[]storeRecord](t, w)
		if len(list) != 1 || list[0].StoreID != "store_a" || list[0].APIKey != keyA+"-staging" {
			t.Errorf("GET %s = %+v, want store_a with the staging key", path, list)
		}
		if got := w.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, got)
		}
	}
	expectError(t, e.do("GET", "/api/v1/stores", "", noKey), 401, kassa.Unauthorized)
}

func TestRates(t *testing.T) {
	t.Parallel()
	tests := []struct {
		query  string
		status int
		pairs  []string
	}{
		// Every currency served, sorted by code.
		{"", 200, []string{"BTC_CAD", "BTC_CHF", "BTC_EUR", "BTC_GBP", "BTC_JPY", "BTC_USD"}},
		{"?currencyPair=BTC_EUR", 200, []string{"BTC_EUR"}},
		{"?currencyPair=BTC/USD", 200, []string{"BTC_USD"}},
		{"?currencyPair=btc_chf", 200, []string{"BTC_CHF"}},
		{"?currencyPair=BTC_EUR,BTC_JPY", 200, []string{"BTC_EUR", "BTC_JPY"}},
		{"?currencyPair=BTC_EUR&currencyPair=BTC_GBP", 200, []string{"BTC_EUR", "BTC_GBP"}},
		{"?currencyPair=BTC_XYZ", 400, nil},
		{"?currencyPair=EUR_BTC", 400, nil},
		{"?currencyPair=BTC_SATS", 400, nil},
		{"?currencyPair=EUR", 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.do("GET", "/api/v1/stores/store_a/rates"+tt.query, "")
			if tt.status != 200 {
				body := expectError(t, w, tt.status, kassa.Invalid, "currency pair")
				if len(body.Errors) != 1 || body.Errors[0].Field != "currencyPair" {
					t.Errorf("errors = %+v, want currencyPair", body.Errors)
				}
				return
			}
			expectStatus(t, w, 200)
			var got []string
			for _, r := range decode[[]rateRecord](t, w) {
				got = append(got, r.CurrencyPair)
			}
			if strings.Join(got, " ") != strings.Join(tt.pairs, " ") {
				t.Errorf("pairs %v, want %v", got, tt.pairs)
			}
		})
	}
	// A provider's error is shown beside the rate.
	e := newEnv(t)
	fixed := e.deps.Rates
	e.deps.Rates = ratesStub{Rates: fixed, entries: func() []kassa.RateEntry {
		entries := fixed.Entries(t.Context())
		entries[len(entries)-1].Errors = []string{"source b: timeout"}
		return entries
	}}
	e.rebuild()
	w := e.do("GET", "/api/v1/stores/store_a/rates", "")
	expectGolden(t, "rates", w.Body.Bytes())
}

// ratesStub is the rates service whose entries, when set, answers
// Entries.
type ratesStub struct {
	kassa.Rates
	entries func() []kassa.RateEntry
}

func (r ratesStub) Entries(ctx context.Context) []kassa.RateEntry {
	if r.entries != nil {
		return r.entries()
	}
	return r.Rates.Entries(ctx)
}

func TestUnknownRoutesAndMethods(t *testing.T) {
	t.Parallel()
	tests := []struct {
		method, path string
		status       int
		code         string
		allow        string
	}{
		{"GET", "/nope", 404, kassa.NotFound, ""},
		{"GET", "/api/v1/nope", 404, kassa.NotFound, ""},
		{"GET", "/api/v1/stores/store_a/nope", 404, kassa.NotFound, ""},
		{"DELETE", "/api/v1/health", 405, kassa.MethodNotAllowed, "GET"},
		{"PATCH", "/api/v1/stores/store_a/invoices", 405, kassa.MethodNotAllowed, "GET, POST"},
		{"DELETE", "/api/v1/stores/store_a/invoices/inv_1", 405, kassa.MethodNotAllowed, "GET"},
		{"PUT", "/api/v1/stores/store_a/transactions", 405, kassa.MethodNotAllowed, "GET"},
		{"GET", "/admin/v1/sim/mine", 405, kassa.MethodNotAllowed, "POST"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.do(tt.method, tt.path, "", header{"Authorization", "Bearer admin-secret-token"})
			expectError(t, w, tt.status, tt.code)
			if got := w.Header().Get("Allow"); got != tt.allow {
				t.Errorf("Allow %q, want %q", got, tt.allow)
			}
		})
	}
}

func TestPanicIsInternalError(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.deps.Rates = ratesStub{Rates: e.deps.Rates, entries: func() []kassa.RateEntry { panic("rates secret exploded") }}
	e.rebuild()
	w := e.do("GET", "/api/v1/stores/store_a/rates", "")
	body := expectError(t, w, 500, kassa.Internal, "internal error")
	if strings.Contains(body.Message, "secret") {
		t.Errorf("panic leaked: %q", body.Message)
	}
	if !strings.Contains(e.logs.String(), "rates secret exploded") {
		t.Error("panic was not logged")
	}
}

// TestWebhooksAreNotCached checks Cache-Control: no-store on the webhook
// routes, whose records carry the signing secret.
func TestWebhooksAreNotCached(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/webhooks", `{"url": "https://shop.example.com/hook", "secret": "s3cret-s3cret-s3cret"}`)
	expectStatus(t, w, 200)
	id := decode[map[string]any](t, w)["id"].(string)
	for _, rec := range []*httptest.ResponseRecorder{w,
		e.do("GET", "/api/v1/stores/store_a/webhooks/"+id, ""),
		e.do("GET", "/api/v1/stores/store_a/webhooks", "")} {
		if got := rec.Header().Get("Cache-Control"); got != "no-store" {
			t.Errorf("Cache-Control %q, want no-store", got)
		}
	}
}
