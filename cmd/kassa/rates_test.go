package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
