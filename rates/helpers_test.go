package rates

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// reply is how a fixture server answers one request path.
type reply struct {
	status     int    // 200 when zero
	file       string // testdata file to send
	body       string // sent when file is empty
	retryAfter string // Retry-After header
	hang       bool   // answer only when the client gives up
}

// apiServer is a local stand-in for a provider's API: it answers the
// exact paths (with query) of routes and fails the test on any other.
type apiServer struct {
	*httptest.Server
	t      testing.TB
	mu     sync.Mutex
	routes map[string]reply
	// release unblocks hanging handlers when the test ends.
	release chan struct{}
}

func newAPIServer(t testing.TB, routes map[string]reply) *apiServer {
	s := &apiServer{t: t, routes: routes, release: make(chan struct{})}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	t.Cleanup(func() { close(s.release) }) // runs before Close
	return s
}

func (s *apiServer) serve(w http.ResponseWriter, r *http.Request) {
	key := r.URL.Path
	if r.URL.RawQuery != "" {
		key += "?" + r.URL.RawQuery
	}
	s.mu.Lock()
	rep, ok := s.routes[key]
	s.mu.Unlock()
	if r.Method != http.MethodGet {
		s.t.Errorf("%s %s: want GET", r.Method, key)
	}
	if !strings.HasPrefix(r.Header.Get("User-Agent"), "kassa") || r.Header.Get("Accept") != "application/json" {
		s.t.Errorf("%s: User-Agent %q, Accept %q", key, r.Header.Get("User-Agent"), r.Header.Get("Accept"))
	}
	if !ok {
		s.t.Errorf("unexpected request %s", key)
		http.NotFound(w, r)
		return
	}
	if rep.hang {
		select {
		case <-r.Context().Done():
		case <-s.release:
		}
		return
	}
	body := []byte(rep.body)
	if rep.file != "" {
		var err error
		// Errorf, not Fatal: this is the handler's goroutine.
		if body, err = os.ReadFile(filepath.Join("testdata", rep.file)); err != nil {
			s.t.Errorf("fixture: %v", err)
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
	}
	if rep.retryAfter != "" {
		w.Header().Set("Retry-After", rep.retryAfter)
	}
	if bytes.HasPrefix(bytes.TrimSpace(body), []byte("<")) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	} else {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
	}
	w.WriteHeader(cmpInt(rep.status, http.StatusOK))
	w.Write(body)
}

// set replaces the answers, for a provider that changes during a test.
func (s *apiServer) set(routes map[string]reply) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.routes = routes
}

func cmpInt(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}

// dec parses a decimal literal of a test.
func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// rateMap builds a map of rates from currency/literal pairs.
func rateMap(kv ...string) map[kassa.Currency]decimal.Decimal {
	m := map[kassa.Currency]decimal.Decimal{}
	for i := 0; i < len(kv); i += 2 {
		m[kassa.Currency(kv[i])] = dec(kv[i+1])
	}
	return m
}

// sameRates reports whether two rate maps hold equal decimals.
func sameRates(a, b map[kassa.Currency]decimal.Decimal) bool {
	if len(a) != len(b) {
		return false
	}
	for c, r := range a {
		if o, ok := b[c]; !ok || !o.Equal(r) {
			return false
		}
	}
	return true
}

// fakeProvider is a hand-written Provider whose answer the test sets.
type fakeProvider struct {
	name string
	// quotes is what Quotes answers; nil means EUR, USD, CAD, JPY, GBP
	// and CHF.
	quotes []kassa.Currency

	mu    sync.Mutex
	rates map[kassa.Currency]decimal.Decimal
	err   error
	calls int
	// wait, when set, is called at the start of Fetch (to block or to
	// meet another provider).
	wait func(ctx context.Context) error
}

var _ Provider = (*fakeProvider)(nil)

func newFake(name string, kv ...string) *fakeProvider {
	return &fakeProvider{name: name, rates: rateMap(kv...)}
}

func (f *fakeProvider) Name() string { return f.name }

func (f *fakeProvider) Quotes() []kassa.Currency {
	if f.quotes == nil {
		return []kassa.Currency{kassa.EUR, kassa.USD, kassa.CAD, kassa.JPY, kassa.GBP, kassa.CHF}
	}
	return f.quotes
}

func (f *fakeProvider) Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	f.mu.Lock()
	f.calls++
	wait := f.wait
	f.mu.Unlock()
	if wait != nil {
		if err := wait(ctx); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return nil, f.err
	}
	out := map[kassa.Currency]decimal.Decimal{}
	for _, c := range currencies {
		if r, ok := f.rates[c]; ok {
			out[c] = r
		}
	}
	return out, nil
}

// answer sets what the next fetches return.
func (f *fakeProvider) answer(err error, kv ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
	if len(kv) > 0 {
		f.rates = rateMap(kv...)
	}
}

func (f *fakeProvider) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// t0 is when every test clock starts.
var t0 = time.Date(2025, 11, 21, 12, 0, 0, 0, time.UTC)

// quietLogger drops everything.
func quietLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

// newTestService returns a Service on a TestClock with a quiet logger.
func newTestService(cfg Config, providers ...Provider) (*Service, *kassatest.TestClock) {
	clock := kassatest.NewTestClock(t0)
	cfg.Providers = providers
	cfg.Clock = clock
	if cfg.Logger == nil {
		cfg.Logger = quietLogger()
	}
	return New(cfg), clock
}
