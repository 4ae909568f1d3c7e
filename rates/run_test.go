package rates

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestRunAllProvidersDown runs the four real provider clients against
// local servers with recorded answers, takes every provider down during
// the run, and brings three of them back.
func TestRunAllProvidersDown(t *testing.T) {
	kraken := newAPIServer(t, map[string]reply{krakenAll: {file: "kraken/ticker.json"}})
	coinbase := newAPIServer(t, map[string]reply{coinbaseAll: {file: "coinbase/exchange_rates.json"}})
	bitstampOK := map[string]reply{
		bitstampEUR: {file: "bitstamp/ticker_btceur.json"},
		bitstampUSD: {file: "bitstamp/ticker_btcusd.json"},
		bitstampGBP: {file: "bitstamp/ticker_btcgbp.json"},
	}
	bitstamp := newAPIServer(t, bitstampOK)
	coingecko := newAPIServer(t, map[string]reply{coinGeckoAll: {file: "coingecko/simple_price.json"}})

	clock := kassatest.NewTestClock(t0)
	const refresh = 4 * time.Minute // three rounds to pass MaxAge
	s := New(Config{
		Providers: []Provider{
			NewKraken(kraken.URL, nil),
			NewCoinbase(coinbase.URL, nil),
			NewBitstamp(bitstamp.URL, nil),
			NewCoinGecko(coingecko.URL, nil),
		},
		Refresh: refresh,
		Timeout: 200 * time.Millisecond, // for the provider that stops answering
		Clock:   clock,
		Logger:  quietLogger(),
	})
	rounds := make(chan struct{}, 1)
	s.afterRound = func() { rounds <- struct{}{} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		s.Run(ctx)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	nextRound := func() {
		t.Helper()
		clock.Advance(refresh)
		waitRound(t, rounds)
	}

	waitRound(t, rounds)
	// EUR: kraken 87012.4, coinbase 87009.85, bitstamp 87054, coingecko
	// 87011: the mean of the middle two. CAD: Bitstamp has no market.
	want := map[kassa.Currency]string{kassa.EUR: "87011.7", kassa.CAD: "139851.27", kassa.JPY: "15007312.5", kassa.BTC: "1", kassa.SATS: "100000000"}
	for c, w := range want {
		if got := rateOf(s, c); got != w {
			t.Errorf("Rate(%s) = %s, want %s", c, got, w)
		}
	}
	for _, e := range s.Entries(ctx) {
		if !e.Rate.IsPositive() || len(e.Errors) != 0 {
			t.Errorf("entry %+v", e)
		}
	}

	// Every provider goes down, each in its own way.
	kraken.Close()
	coinbase.set(map[string]reply{coinbaseAll: {status: 503, file: "unavailable.html"}})
	bitstamp.set(allPaths(bitstampOK, reply{status: 429, file: "bitstamp/rate_limit.json", retryAfter: "60"}))
	coingecko.set(map[string]reply{coinGeckoAll: {hang: true}})

	// The cached rates serve until they are MaxAge old...
	for clock.Now().Add(refresh).Sub(t0) <= DefaultMaxAge {
		nextRound()
		if got := rateOf(s, kassa.EUR); got != "87011.7" {
			t.Fatalf("Rate(EUR) %s after the first round = %s", clock.Now().Sub(t0), got)
		}
	}
	// ...and not after.
	nextRound()
	_, err := s.Rate(ctx, kassa.EUR)
	if kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("Rate(EUR) %s after the last good round: %v", clock.Now().Sub(t0), err)
	}
	msg := kassa.ErrorMessage(err)
	for _, part := range []string{
		"no fresh exchange rate for EUR: ",
		"kraken: request failed: ",
		"coinbase: HTTP 503 Service Unavailable (last rate is 12m0s old",
		"bitstamp: HTTP 429 Too Many Requests: API0001: Rate limit exceeded. Please try again later. (retry after 1m0s)",
		"coingecko: timed out",
	} {
		if !strings.Contains(msg, part) {
			t.Errorf("message %q lacks %q", msg, part)
		}
	}
	if strings.Contains(msg, "127.0.0.1") {
		t.Errorf("message %q shows a provider's address", msg)
	}
	for _, c := range s.Currencies() {
		if _, err := s.Rate(ctx, c); kassa.ErrorCode(err) != kassa.Unavailable || !strings.Contains(err.Error(), " "+string(c)+": ") {
			t.Errorf("Rate(%s): %v", c, err)
		}
	}
	if got := rateOf(s, kassa.BTC); got != "1" {
		t.Errorf("Rate(BTC) = %s", got)
	}
	if got := rateOf(s, kassa.SATS); got != "100000000" {
		t.Errorf("Rate(SATS) = %s", got)
	}
	for _, e := range s.Entries(ctx) {
		// One error per provider that quotes the currency.
		wantErrors := 0
		for _, q := range [][]kassa.Currency{krakenQuotes, coinbaseQuotes, bitstampQuotes, coinGeckoQuotes} {
			if slices.Contains(q, e.Currency) {
				wantErrors++
			}
		}
		if !e.Rate.IsZero() || len(e.Errors) != wantErrors {
			t.Errorf("entry %s: rate %s, errors %q", e.Currency, e.Rate, e.Errors)
		}
	}

	// Three come back; kraken stays down.
	coinbase.set(map[string]reply{coinbaseAll: {file: "coinbase/exchange_rates.json"}})
	bitstamp.set(bitstampOK)
	coingecko.set(map[string]reply{coinGeckoAll: {file: "coingecko/simple_price.json"}})
	nextRound()
	if got := rateOf(s, kassa.EUR); got != "87011" {
		t.Errorf("Rate(EUR) after recovery = %s, want the median of coinbase, bitstamp, coingecko", got)
	}
	if e := entry(t, s, kassa.EUR); len(e.Errors) != 1 || !strings.HasPrefix(e.Errors[0], "kraken: request failed") {
		t.Errorf("EUR errors %q", e.Errors)
	}
}
