package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveFixture answers every request with a recorded provider response.
func serveFixture(t *testing.T, name string) *httptest.Server {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "rates", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestRatesProvidersDown takes every rate provider down during a run: new
// fiat invoices get 503 naming the currency and the providers, SATS and
// BTC invoices still work, and existing invoices keep their locked rate.
func TestRatesProvidersDown(t *testing.T) {
	kraken := serveFixture(t, "kraken/ticker.json")
	coinbase := serveFixture(t, "coinbase/exchange_rates.json")
	gecko := serveFixture(t, "coingecko/simple_price.json")
	s := startServer(t, t.TempDir(), "--rates", "kraken,coinbase,coingecko",
		"--rates-url", "kraken="+kraken.URL+",coinbase="+coinbase.URL+",coingecko="+gecko.URL,
		"--rates-refresh", "100ms", "--rates-max-age", "1s")
	a := s.createStore("--name", "Rates", "--currency", "EUR")
	base := "/api/v1/stores/" + a.StoreID

	var eur map[string]any
	waitFor(t, 10*time.Second, "a fresh EUR rate", func() bool {
		for _, e := range s.list(base+"/rates?currencyPair=BTC_EUR", a.APIKey) {
			if e["currencyPair"] == "BTC_EUR" && e["rate"] != "" && e["rate"] != nil {
				eur = e
				return true
			}
		}
		return false
	})
	inv := s.json("POST", base+"/invoices", a.APIKey, map[string]any{"amount": "10", "currency": "EUR"}, 200)
	locked := s.json("GET", base+"/invoices/"+inv["id"].(string), a.APIKey, nil, 200)
	if locked["exchangeRate"] == nil || num(locked, "exchangeRate") <= 0 {
		t.Fatalf("no locked rate: %v (rates %v)", locked, eur)
	}

	kraken.Close()
	coinbase.Close()
	gecko.Close()
	var msg string
	waitFor(t, 15*time.Second, "fiat invoices to be refused", func() bool {
		status, body, _ := s.do("POST", base+"/invoices", a.APIKey, `{"amount": "10", "currency": "EUR"}`)
		msg = string(body)
		return status == 503
	})
	for _, want := range []string{"EUR", "kraken", "coinbase", "coingecko"} {
		if !strings.Contains(msg, want) {
			t.Errorf("503 message does not name %s: %s", want, msg)
		}
	}
	s.json("POST", base+"/invoices", a.APIKey, map[string]any{"amount": 5000, "currency": "SATS"}, 200)
	s.json("POST", base+"/invoices", a.APIKey, map[string]any{"amount": "0.0001", "currency": "BTC"}, 200)
	again := s.json("GET", base+"/invoices/"+inv["id"].(string), a.APIKey, nil, 200)
	if again["exchangeRate"] != locked["exchangeRate"] || again["fiatAmount"] != locked["fiatAmount"] || again["amount"] != locked["amount"] {
		t.Fatalf("the locked rate moved: %v → %v", locked, again)
	}
	entries := s.list(base+"/rates", a.APIKey)
	for _, e := range entries {
		if errs, _ := e["errors"].([]any); len(errs) == 0 {
			t.Errorf("pair %v reports no error with every provider down", e["currencyPair"])
		}
	}
}

// TestRatesManyCurrencies runs the server on all four providers, each
// answering its recorded fixture: it serves every ISO 4217 currency that
// one of them quotes, prices invoices in AUD, BRL, INR and ZAR at the
// median of the providers that quote each, takes a store in ZAR, and
// refuses a real currency that none quotes with 400 naming the providers.
func TestRatesManyCurrencies(t *testing.T) {
	kraken := serveFixture(t, "kraken/ticker.json")
	coinbase := serveFixture(t, "coinbase/exchange_rates.json")
	gecko := serveFixture(t, "coingecko/simple_price.json")
	bitstamp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pair := strings.Trim(strings.TrimPrefix(r.URL.Path, "/api/v2/ticker/"), "/")
		data, err := os.ReadFile(filepath.Join("..", "..", "rates", "testdata", "bitstamp", "ticker_"+filepath.Base(pair)+".json"))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write(data)
	}))
	t.Cleanup(bitstamp.Close)
	s := startServer(t, t.TempDir(), "--rates", "kraken,coinbase,bitstamp,coingecko",
		"--rates-url", "kraken="+kraken.URL+",coinbase="+coinbase.URL+",bitstamp="+bitstamp.URL+",coingecko="+gecko.URL)
	a := s.createStore("--name", "Kapstadt", "--currency", "ZAR")
	base := "/api/v1/stores/" + a.StoreID

	var entries []map[string]any
	waitFor(t, 10*time.Second, "fresh rates", func() bool {
		entries = s.list(base+"/rates?currencyPair=BTC_AUD,BTC_BRL,BTC_INR,BTC_ZAR", a.APIKey)
		for _, e := range entries {
			if e["rate"] == "" || e["rate"] == nil || e["rate"] == "0" {
				return false
			}
		}
		return len(entries) == 4
	})
	all := s.list(base+"/rates", a.APIKey)
	t.Logf("currencies served by kraken, coinbase, bitstamp and coingecko: %d", len(all))
	if len(all) != 153 {
		t.Errorf("%d currencies served, want 153", len(all))
	}
	// The median of the providers' fixtures: AUD is quoted by kraken
	// (154915.3), coinbase (154921.61) and coingecko (154841); the
	// others by coinbase and coingecko, whose mean is the median. 100
	// units at that rate, rounded up to a whole satoshi; the invoice's
	// exchangeRate is the store currency's (ZAR).
	for cur, want := range map[string]float64{"AUD": 64552, "BRL": 18632, "INR": 1122, "ZAR": 5737} {
		inv := s.json("POST", base+"/invoices", a.APIKey, map[string]any{"amount": "100", "currency": cur}, 200)
		got := s.json("GET", base+"/invoices/"+inv["id"].(string), a.APIKey, nil, 200)
		rate := fmt.Sprint(got["exchangeRate"])
		if f, ok := got["exchangeRate"].(float64); ok {
			rate = strconv.FormatFloat(f, 'f', -1, 64)
		}
		if got["currency"] != cur || got["amount"] != want || rate != "1743162.15" {
			t.Errorf("%s invoice: currency %v, %v sats, ZAR rate %v; want %v sats at 1743162.15", cur, got["currency"], got["amount"], rate, want)
		}
	}
	// KPW is ISO 4217 but no provider quotes it; XYZ is no currency.
	status, body, _ := s.do("POST", base+"/invoices", a.APIKey, `{"amount": "10", "currency": "KPW"}`)
	if status != 400 || !strings.Contains(string(body), "KPW is not quoted") || !strings.Contains(string(body), "coingecko") || !strings.Contains(string(body), "/rates") {
		t.Errorf("KPW: %d %s", status, body)
	}
	status, body, _ = s.do("POST", base+"/invoices", a.APIKey, `{"amount": "10", "currency": "XYZ"}`)
	if status != 400 || !strings.Contains(string(body), "unknown currency") {
		t.Errorf("XYZ: %d %s", status, body)
	}
}
