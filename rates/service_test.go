package rates

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// rateOf returns Rate(c) as a string, or the error's code and message.
func rateOf(s kassa.Rates, c kassa.Currency) string {
	r, err := s.Rate(context.Background(), c)
	if err != nil {
		return kassa.ErrorCode(err) + ": " + kassa.ErrorMessage(err)
	}
	return r.String()
}

// entry returns the entry of c.
func entry(t *testing.T, r kassa.Rates, c kassa.Currency) kassa.RateEntry {
	t.Helper()
	for _, e := range r.Entries(context.Background()) {
		if e.Currency == c {
			return e
		}
	}
	t.Fatalf("no entry for %s", c)
	return kassa.RateEntry{}
}

func TestServiceOutvotesProviderOff100Times(t *testing.T) {
	for bad, median := range map[string]string{"8700000": "87100", "870": "87000"} {
		t.Run(bad, func(t *testing.T) {
			s, _ := newTestService(Config{},
				newFake("kraken", "EUR", "87000"),
				newFake("coinbase", "EUR", "87100"),
				newFake("bitstamp", "EUR", bad))
			if err := s.Refresh(context.Background()); err != nil {
				t.Fatal(err)
			}
			if got := rateOf(s, kassa.EUR); got != "87050" {
				t.Errorf("Rate(EUR) = %s, want 87050", got)
			}
			e := entry(t, s, kassa.EUR)
			want := "bitstamp: rate " + bad + " is more than 10% from the median " + median + ", ignored"
			if !e.Rate.Equal(dec("87050")) || len(e.Errors) != 1 || e.Errors[0] != want {
				t.Errorf("entry %+v, want error %q", e, want)
			}
		})
	}
}

func TestServiceDisagreement(t *testing.T) {
	s, _ := newTestService(Config{}, newFake("kraken", "EUR", "87000"), newFake("coinbase", "EUR", "8700000"))
	s.Refresh(context.Background())
	want := "unavailable: no fresh exchange rate for EUR: sources disagree by more than 10% (kraken 87000, coinbase 8700000)"
	if got := rateOf(s, kassa.EUR); got != want {
		t.Errorf("Rate(EUR) = %q, want %q", got, want)
	}
	if e := entry(t, s, kassa.EUR); !e.Rate.IsZero() || len(e.Errors) != 3 {
		t.Errorf("entry %+v", e)
	}
}

func TestServiceStaleness(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000", "USD", "100000")
	s, clock := newTestService(Config{}, kraken)
	ctx := context.Background()
	s.Refresh(ctx)

	clock.Advance(DefaultMaxAge) // exactly the limit: still used
	if got := rateOf(s, kassa.EUR); got != "87000" {
		t.Fatalf("Rate(EUR) at the limit = %s", got)
	}
	clock.Advance(time.Second)
	want := "unavailable: no fresh exchange rate for EUR: kraken: last rate is 10m1s old, more than 10m0s"
	if got := rateOf(s, kassa.EUR); got != want {
		t.Errorf("Rate(EUR) = %q, want %q", got, want)
	}

	// A failed round keeps the stale rate unused and says why.
	kraken.answer(errors.New("HTTP 503 Service Unavailable"))
	s.Refresh(ctx)
	want = "unavailable: no fresh exchange rate for USD: kraken: HTTP 503 Service Unavailable (last rate is 10m1s old, more than 10m0s)"
	if got := rateOf(s, kassa.USD); got != want {
		t.Errorf("Rate(USD) = %q, want %q", got, want)
	}

	// A good round makes it fresh again.
	kraken.answer(nil, "EUR", "88000", "USD", "101000")
	s.Refresh(ctx)
	if got := rateOf(s, kassa.EUR); got != "88000" {
		t.Errorf("Rate(EUR) after recovery = %s", got)
	}
}

func TestServiceCustomMaxAge(t *testing.T) {
	s, clock := newTestService(Config{MaxAge: time.Minute}, newFake("kraken", "EUR", "87000"))
	s.Refresh(context.Background())
	clock.Advance(61 * time.Second)
	if _, err := s.Rate(context.Background(), kassa.EUR); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Errorf("err = %v", err)
	}
}

func TestServiceStaleProviderLeftOut(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000")
	coinbase := newFake("coinbase", "EUR", "87100")
	bitstamp := newFake("bitstamp", "EUR", "87200")
	s, clock := newTestService(Config{}, kraken, coinbase, bitstamp)
	ctx := context.Background()
	s.Refresh(ctx)
	if got := rateOf(s, kassa.EUR); got != "87100" {
		t.Fatalf("Rate(EUR) = %s", got)
	}
	kraken.answer(errors.New("timed out"))
	for range 21 { // 10.5 minutes of rounds
		clock.Advance(DefaultRefresh)
		s.Refresh(ctx)
	}
	if got := rateOf(s, kassa.EUR); got != "87150" {
		t.Errorf("Rate(EUR) = %s, want the median of the two fresh quotes", got)
	}
	e := entry(t, s, kassa.EUR)
	want := "kraken: timed out (last rate is 10m30s old, more than 10m0s)"
	if len(e.Errors) != 1 || e.Errors[0] != want {
		t.Errorf("errors %q, want %q", e.Errors, want)
	}
}

func TestServiceUnavailableNamesCurrencyAndProviders(t *testing.T) {
	kraken := newFake("kraken")
	coinbase := newFake("coinbase")
	s, _ := newTestService(Config{}, kraken, coinbase)
	want := "unavailable: no fresh exchange rate for CHF: kraken: no rate yet; coinbase: no rate yet"
	if got := rateOf(s, kassa.CHF); got != want {
		t.Errorf("before any round: %q, want %q", got, want)
	}
	kraken.answer(&HTTPError{StatusCode: 429, Message: "EAPI:Rate limit exceeded"})
	coinbase.answer(fmt.Errorf("%w: context deadline exceeded", ErrTimeout))
	err := s.Refresh(context.Background())
	if err == nil || !strings.Contains(err.Error(), "kraken: HTTP 429") || !strings.Contains(err.Error(), "coinbase: timed out") {
		t.Errorf("Refresh: %v", err)
	}
	want = "unavailable: no fresh exchange rate for CHF: kraken: HTTP 429 Too Many Requests: EAPI:Rate limit exceeded; coinbase: timed out: context deadline exceeded"
	if got := rateOf(s, kassa.CHF); got != want {
		t.Errorf("after a failed round: %q, want %q", got, want)
	}
	_, rerr := s.Rate(context.Background(), kassa.CHF)
	var kerr *kassa.Error
	if !errors.As(rerr, &kerr) || kerr.Code != kassa.Unavailable {
		t.Errorf("error %#v is no Unavailable *kassa.Error", rerr)
	}
}

func TestServiceExactCurrencies(t *testing.T) {
	s, _ := newTestService(Config{}) // no providers, no round
	for c, want := range map[kassa.Currency]string{kassa.BTC: "1", kassa.SATS: "100000000"} {
		if got := rateOf(s, c); got != want {
			t.Errorf("Rate(%s) = %s, want %s", c, got, want)
		}
	}
	if got := rateOf(s, "XAU"); !strings.HasPrefix(got, "invalid: currency: unknown currency") {
		t.Errorf("Rate(XAU) = %s", got)
	}
	if got := rateOf(s, kassa.EUR); got != "invalid: currency: currency EUR is not quoted by this server's rate providers (no rate providers); GET /api/v1/stores/{storeId}/rates lists the 0 fiat currencies it serves" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

func TestServiceUnquotedCurrency(t *testing.T) {
	// Bitstamp has no CAD market: while others quote CAD that is no error.
	bitstamp := newFake("bitstamp", "EUR", "87054")
	s, _ := newTestService(Config{}, newFake("kraken", "EUR", "87000", "CAD", "139800"), newFake("coinbase", "EUR", "87100", "CAD", "139900"), bitstamp)
	s.Refresh(context.Background())
	if e := entry(t, s, kassa.CAD); !e.Rate.Equal(dec("139850")) || len(e.Errors) != 0 {
		t.Errorf("CAD entry %+v", e)
	}
	only, _ := newTestService(Config{}, bitstamp)
	only.Refresh(context.Background())
	if got := rateOf(only, kassa.CAD); got != "unavailable: no fresh exchange rate for CAD: bitstamp: does not quote CAD" {
		t.Errorf("Rate(CAD) = %s", got)
	}
}

func TestServicePartialFailure(t *testing.T) {
	p := newFake("bitstamp", "EUR", "87054")
	p.answer(nil)
	s, _ := newTestService(Config{}, &partialProvider{p, PairErrors{kassa.GBP: &HTTPError{StatusCode: 404}}})
	err := s.Refresh(context.Background())
	if err == nil || err.Error() != "bitstamp: GBP: HTTP 404 Not Found" {
		t.Errorf("Refresh: %v", err)
	}
	if got := rateOf(s, kassa.EUR); got != "87054" {
		t.Errorf("Rate(EUR) = %s", got)
	}
	if got := rateOf(s, kassa.GBP); got != "unavailable: no fresh exchange rate for GBP: bitstamp: HTTP 404 Not Found" {
		t.Errorf("Rate(GBP) = %s", got)
	}
	if got := rateOf(s, kassa.CAD); got != "unavailable: no fresh exchange rate for CAD: bitstamp: does not quote CAD" {
		t.Errorf("Rate(CAD) = %s", got)
	}
}

// partialProvider adds a PairErrors to what its fake answers.
type partialProvider struct {
	*fakeProvider
	errs PairErrors
}

func (p *partialProvider) Fetch(ctx context.Context, cs []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	got, _ := p.fakeProvider.Fetch(ctx, cs)
	return got, p.errs
}

func TestServicePrimaryAndFallback(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000")
	coinbase := newFake("coinbase", "EUR", "87100")
	bitstamp := newFake("bitstamp", "EUR", "87200")
	s, clock := newTestService(Config{Primary: "Kraken", Fallback: "coinbase"}, kraken, coinbase, bitstamp)
	ctx := context.Background()
	s.Refresh(ctx)
	if s.Source() != "kraken, falling back to coinbase" {
		t.Errorf("Source() = %q", s.Source())
	}
	if got := rateOf(s, kassa.EUR); got != "87000" {
		t.Errorf("Rate(EUR) = %s, want the primary's", got)
	}
	check := func(primary, fallback, want string) {
		t.Helper()
		r, err := s.RateWith(ctx, kassa.EUR, primary, fallback)
		got := r.String()
		if err != nil {
			got = kassa.ErrorCode(err) + ": " + kassa.ErrorMessage(err)
		}
		if got != want {
			t.Errorf("RateWith(%q, %q) = %q, want %q", primary, fallback, got, want)
		}
	}
	check("bitstamp", "", "87200")
	check("", "", "87100") // the median of all
	check("krakn", "coinbase", `invalid: unknown rate provider "krakn": this service has kraken, coinbase, bitstamp`)
	check("kraken", "gemini", `invalid: unknown rate provider "gemini": this service has kraken, coinbase, bitstamp`)

	kraken.answer(errors.New("HTTP 502 Bad Gateway"))
	clock.Advance(11 * time.Minute)
	coinbase.answer(nil, "EUR", "87111")
	s.Refresh(ctx)
	check("kraken", "coinbase", "87111")
	if got := rateOf(s, kassa.EUR); got != "87111" {
		t.Errorf("Rate(EUR) = %s, want the fallback's", got)
	}
	if e := entry(t, s, kassa.EUR); !e.Rate.Equal(dec("87111")) || len(e.Errors) != 1 || !strings.HasPrefix(e.Errors[0], "kraken: HTTP 502 Bad Gateway") {
		t.Errorf("entry %+v", e)
	}
	check("kraken", "kraken", "unavailable: no fresh exchange rate for EUR: kraken: HTTP 502 Bad Gateway (last rate is 11m0s old, more than 10m0s)")

	coinbase.answer(errors.New("HTTP 500 Internal Server Error"))
	clock.Advance(11 * time.Minute)
	s.Refresh(ctx)
	check("kraken", "coinbase", "unavailable: no fresh exchange rate for EUR: "+
		"kraken: HTTP 502 Bad Gateway (last rate is 22m0s old, more than 10m0s); "+
		"coinbase: HTTP 500 Internal Server Error (last rate is 11m0s old, more than 10m0s)")
}

func TestServiceEntries(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000", "USD", "100000", "CAD", "139800", "JPY", "15000000", "GBP", "76400", "CHF", "80800")
	coinbase := newFake("coinbase")
	coinbase.answer(&HTTPError{StatusCode: 429, RetryAfter: time.Minute})
	s, _ := newTestService(Config{}, kraken, coinbase)
	s.Refresh(context.Background())
	entries := s.Entries(context.Background())
	six := []kassa.Currency{kassa.CAD, kassa.CHF, kassa.EUR, kassa.GBP, kassa.JPY, kassa.USD}
	if len(entries) != len(six) {
		t.Fatalf("%d entries", len(entries))
	}
	for i, e := range entries {
		if e.Currency != six[i] || !e.Rate.IsPositive() {
			t.Errorf("entry %d: %+v", i, e)
		}
		if want := "coinbase: HTTP 429 Too Many Requests (retry after 1m0s)"; len(e.Errors) != 1 || e.Errors[0] != want {
			t.Errorf("%s errors %q, want %q", e.Currency, e.Errors, want)
		}
	}
	if got := rateOf(s, kassa.JPY); got != "15000000" {
		t.Errorf("Rate(JPY) = %s", got)
	}
}

func TestServiceEntriesBeforeFirstRound(t *testing.T) {
	s, _ := newTestService(Config{}, newFake("kraken"))
	for _, e := range s.Entries(context.Background()) {
		if !e.Rate.IsZero() || len(e.Errors) != 1 || e.Errors[0] != "kraken: no rate yet" {
			t.Errorf("entry %+v", e)
		}
	}
}

func TestServiceRetryAfter(t *testing.T) {
	coinbase := newFake("coinbase", "EUR", "87100")
	coinbase.answer(&HTTPError{StatusCode: 429, RetryAfter: 90 * time.Second})
	s, clock := newTestService(Config{}, coinbase)
	ctx := context.Background()
	s.Refresh(ctx) // 429: leave it alone for 90 s
	clock.Advance(DefaultRefresh)
	s.Refresh(ctx)
	clock.Advance(DefaultRefresh)
	s.Refresh(ctx)
	if n := coinbase.callCount(); n != 1 {
		t.Errorf("%d calls within Retry-After, want 1", n)
	}
	coinbase.answer(nil)
	clock.Advance(DefaultRefresh)
	s.Refresh(ctx)
	if n := coinbase.callCount(); n != 2 {
		t.Errorf("%d calls after Retry-After, want 2", n)
	}
	if got := rateOf(s, kassa.EUR); got != "87100" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

// logRecorder collects JSON log lines.
type logRecorder struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (r *logRecorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.buf.Write(p)
}

func (r *logRecorder) lines(msg string) []map[string]any {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []map[string]any
	for line := range strings.Lines(r.buf.String()) {
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

func TestServiceLogsEachFailureOncePerRound(t *testing.T) {
	rec := &logRecorder{}
	log := slog.New(slog.NewJSONHandler(rec, nil))
	kraken := newFake("kraken", "EUR", "87000")
	bitstamp := newFake("bitstamp")
	bitstamp.answer(PairErrors{kassa.EUR: errors.New("x"), kassa.USD: errors.New("x"), kassa.GBP: errors.New("x")})
	s, _ := newTestService(Config{Logger: log}, kraken, bitstamp)
	ctx := context.Background()
	s.Refresh(ctx)
	s.Refresh(ctx)
	failed := rec.lines("exchange rate provider failed")
	if len(failed) != 2 {
		t.Fatalf("%d failure lines for 2 rounds, want 2", len(failed))
	}
	if failed[0]["provider"] != "bitstamp" || failed[0]["error"] != "EUR, GBP, USD: x" || failed[0]["level"] != "WARN" {
		t.Errorf("line %v", failed[0])
	}
	bitstamp.answer(nil, "EUR", "87054")
	s.Refresh(ctx)
	s.Refresh(ctx)
	if n := len(rec.lines("exchange rate provider failed")); n != 2 {
		t.Errorf("%d failure lines after recovery", n)
	}
	if rec := rec.lines("exchange rate provider recovered"); len(rec) != 1 || rec[0]["provider"] != "bitstamp" {
		t.Errorf("recovery lines %v", rec)
	}
}

func TestServiceRefreshAsksProvidersConcurrently(t *testing.T) {
	// Each waits until the other has started: asked one after the other,
	// the first would time out.
	a, b := newFake("kraken", "EUR", "87000"), newFake("coinbase", "EUR", "87100")
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	meet := func(mine, other chan struct{}) func(context.Context) error {
		return func(ctx context.Context) error {
			close(mine)
			select {
			case <-other:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	a.wait, b.wait = meet(aStarted, bStarted), meet(bStarted, aStarted)
	s, _ := newTestService(Config{}, a, b)
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := rateOf(s, kassa.EUR); got != "87050" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

func TestServiceTimeoutPerProvider(t *testing.T) {
	hang := newFake("kraken", "EUR", "1")
	hang.wait = func(ctx context.Context) error {
		<-ctx.Done()
		return fmt.Errorf("%w: %w", ErrTimeout, ctx.Err())
	}
	s, _ := newTestService(Config{Timeout: 20 * time.Millisecond}, hang, newFake("coinbase", "EUR", "87100"))
	err := s.Refresh(context.Background())
	if !errors.Is(err, ErrTimeout) || !strings.HasPrefix(err.Error(), "kraken: timed out") {
		t.Errorf("Refresh: %v", err)
	}
	if got := rateOf(s, kassa.EUR); got != "87100" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

func TestServiceRun(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000")
	s, clock := newTestService(Config{}, kraken)
	rounds := make(chan struct{}, 10)
	s.afterRound = func() { rounds <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	waitRound(t, rounds)
	if n := kraken.callCount(); n != 1 {
		t.Fatalf("%d calls after the first round", n)
	}
	if got := rateOf(s, kassa.EUR); got != "87000" {
		t.Errorf("Rate(EUR) = %s", got)
	}
	kraken.answer(nil, "EUR", "88000")
	clock.Advance(DefaultRefresh - time.Second)
	clock.Advance(time.Second)
	waitRound(t, rounds)
	if n := kraken.callCount(); n != 2 {
		t.Errorf("%d calls after the second round", n)
	}
	if got := rateOf(s, kassa.EUR); got != "88000" {
		t.Errorf("Rate(EUR) = %s", got)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after ctx ended")
	}
}

// waitRound waits for Run to finish a round, failing after a deadline.
func waitRound(t *testing.T, rounds <-chan struct{}) {
	t.Helper()
	select {
	case <-rounds:
	case <-time.After(5 * time.Second):
		t.Fatal("no refresh round")
	}
}

func TestServiceConcurrentReads(t *testing.T) {
	kraken := newFake("kraken", "EUR", "87000", "USD", "100000")
	coinbase := newFake("coinbase", "EUR", "87100", "USD", "100100")
	s, clock := newTestService(Config{}, kraken, coinbase)
	ctx := context.Background()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				s.Rate(ctx, kassa.EUR)
				s.Entries(ctx)
				s.RateWith(ctx, kassa.USD, "coinbase", "kraken")
			}
		})
	}
	wg.Go(func() {
		for range 20 {
			s.Refresh(ctx)
			clock.Advance(DefaultRefresh)
		}
	})
	wg.Wait()
	if got := rateOf(s, kassa.EUR); got != "87050" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

func TestServiceSource(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		prov []Provider
		want string
	}{
		{Config{}, []Provider{newFake("kraken"), newFake("coinbase"), newFake("bitstamp")}, "median of kraken, coinbase, bitstamp"},
		{Config{}, []Provider{newFake("kraken")}, "kraken"},
		{Config{Primary: "kraken"}, []Provider{newFake("kraken"), newFake("coinbase")}, "kraken"},
	} {
		s, _ := newTestService(tc.cfg, tc.prov...)
		if got := s.Source(); got != tc.want {
			t.Errorf("Source() = %q, want %q", got, tc.want)
		}
	}
}

func TestServiceShutdownIsNoFailure(t *testing.T) {
	rec := &logRecorder{}
	hang := newFake("kraken", "EUR", "87000")
	hang.wait = func(ctx context.Context) error {
		<-ctx.Done()
		return ctx.Err()
	}
	s, _ := newTestService(Config{Logger: slog.New(slog.NewJSONHandler(rec, nil))}, hang)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Refresh(ctx); err != nil {
		t.Errorf("Refresh after shutdown: %v", err)
	}
	if n := len(rec.lines("exchange rate provider failed")); n != 0 {
		t.Errorf("%d failures logged at shutdown", n)
	}
	if e := entry(t, s, kassa.EUR); len(e.Errors) != 1 || e.Errors[0] != "kraken: no rate yet" {
		t.Errorf("entry %+v", e)
	}
}

func TestNewDefaults(t *testing.T) {
	s := New(Config{Providers: []Provider{newFake("kraken")}})
	if s.refresh != DefaultRefresh || s.maxAge != DefaultMaxAge || s.timeout != DefaultTimeout ||
		!s.maxDeviation.Equal(DefaultMaxDeviation) || s.clock == nil || s.log == nil {
		t.Errorf("defaults: %+v", s)
	}
	if got := s.Providers(); len(got) != 1 || got[0] != "kraken" {
		t.Errorf("Providers() = %v", got)
	}
}
