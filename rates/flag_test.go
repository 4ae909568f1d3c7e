package rates

import (
	"context"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

func TestFromFlag(t *testing.T) {
	clock := kassatest.NewTestClock(t0)
	for _, tc := range []struct {
		spec    string
		urls    map[string]string
		source  string // want
		problem string // want an error containing this
	}{
		{spec: "fixed", source: "fixed (simulation)"},
		{spec: " FIXED ", source: "fixed (simulation)"},
		{spec: "kraken,coinbase,bitstamp", source: "median of kraken, coinbase, bitstamp"},
		{spec: "kraken, Coinbase ,bitstamp,coingecko", source: "median of kraken, coinbase, bitstamp, coingecko"},
		{spec: "coingecko", source: "coingecko"},
		{spec: "kraken", urls: map[string]string{"Kraken": "http://127.0.0.1:1/prefix/"}, source: "kraken"},
		{spec: "", problem: "--rates is empty: use fixed or a comma-separated list of bitstamp, coinbase, coingecko, kraken"},
		{spec: "kraken,krakn", problem: `--rates: unknown rate provider "krakn": use fixed or a comma-separated list of bitstamp, coinbase, coingecko, kraken`},
		{spec: "kraken,,coinbase", problem: "empty provider name"},
		{spec: "kraken,kraken", problem: "names kraken twice"},
		{spec: "fixed,kraken", problem: "fixed cannot be combined"},
		{spec: "kraken", urls: map[string]string{"gemini": "http://127.0.0.1:1"}, problem: `unknown provider "gemini"`},
		{spec: "kraken", urls: map[string]string{"kraken": "ftp://example.com"}, problem: "must be an http or https address"},
		{spec: "kraken", urls: map[string]string{"kraken": "http://user:secret@proxy.example?x=1"}, problem: "http://user:xxxxx@proxy.example?x=1"},
	} {
		got, err := FromFlag(tc.spec, tc.urls, nil, clock, quietLogger())
		switch {
		case tc.problem != "":
			if err == nil || !strings.Contains(err.Error(), tc.problem) {
				t.Errorf("FromFlag(%q, %v) = %v, want an error with %q", tc.spec, tc.urls, err, tc.problem)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows a password", err)
			}
		case err != nil:
			t.Errorf("FromFlag(%q): %v", tc.spec, err)
		case got.Source() != tc.source:
			t.Errorf("FromFlag(%q).Source() = %q, want %q", tc.spec, got.Source(), tc.source)
		}
	}
}

func TestFromFlagBaseURLs(t *testing.T) {
	kraken := newAPIServer(t, map[string]reply{krakenAll: {file: "kraken/ticker.json"}})
	coinbase := newAPIServer(t, map[string]reply{"/cb" + coinbaseAll: {file: "coinbase/exchange_rates.json"}})
	b, err := FromFlag("kraken,coinbase", map[string]string{"kraken": kraken.URL, "coinbase": coinbase.URL + "/cb"}, nil, kassatest.NewTestClock(t0), quietLogger())
	if err != nil {
		t.Fatal(err)
	}
	s, ok := b.(*Service)
	if !ok {
		t.Fatalf("FromFlag returned %T", b)
	}
	if err := s.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	// The mean of kraken's 87012.4 and coinbase's 87009.85.
	if got := rateOf(s, kassa.EUR); got != "87011.125" {
		t.Errorf("Rate(EUR) = %s", got)
	}
}

func TestNewProvider(t *testing.T) {
	for _, name := range ProviderNames() {
		p, err := NewProvider(strings.ToUpper(name), "", nil)
		if err != nil || p.Name() != name {
			t.Errorf("NewProvider(%q) = %v, %v", name, p, err)
		}
	}
	if _, err := NewProvider("gemini", "", nil); err == nil || !strings.Contains(err.Error(), "bitstamp, coinbase, coingecko, kraken") {
		t.Errorf("err = %v", err)
	}
}
