package rates

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// Request paths of the four APIs when asked for every fiat currency
// (kassa.FiatCurrencies, sorted by code): each asks only for those it
// quotes.
const (
	krakenAll    = "/0/public/Ticker?pair=XBTAUD,XBTCAD,XBTCHF,XBTEUR,XBTGBP,XBTJPY,XBTUSD"
	coinbaseAll  = "/v2/exchange-rates?currency=BTC"
	coinGeckoAll = "/api/v3/simple/price?ids=bitcoin&vs_currencies=aed,ars,aud,bdt,bhd,bmd,brl,cad,chf,clp,cny,czk,dkk,eur,gbp,gel,hkd,huf,idr,ils,inr,jpy,krw,kwd,lkr,mmk,mxn,myr,ngn,nok,nzd,php,pkr,pln,rub,sar,sek,sgd,thb,try,twd,uah,usd,vnd,zar"
	bitstampEUR  = "/api/v2/ticker/btceur/"
	bitstampUSD  = "/api/v2/ticker/btcusd/"
	bitstampGBP  = "/api/v2/ticker/btcgbp/"
)

// providerCase describes one provider for the suite that runs against
// all of them.
type providerCase struct {
	name string
	new  func(baseURL string, client *http.Client) Provider
	// ok answers every request of a full fetch with recorded data.
	ok map[string]reply
	// want are some of the rates a full fetch must bring, and count how
	// many it brings in all (every currency of the provider's Quotes).
	want  map[kassa.Currency]string
	count int
	// rateLimit is the provider's own 429 body.
	rateLimit string
	// rateLimitText is what the error must quote of it.
	rateLimitText string
}

func providerCases() []providerCase {
	return []providerCase{
		{
			name:          "kraken",
			new:           func(u string, c *http.Client) Provider { return NewKraken(u, c) },
			ok:            map[string]reply{krakenAll: {file: "kraken/ticker.json"}},
			want:          map[kassa.Currency]string{"EUR": "87012.4", "USD": "100494.9", "CAD": "139862.4", "JPY": "15006800", "GBP": "76398.9", "CHF": "80845", "AUD": "154915.3"},
			count:         7,
			rateLimit:     "kraken/rate_limit.json",
			rateLimitText: "EAPI:Rate limit exceeded",
		},
		{
			name:          "coinbase",
			new:           func(u string, c *http.Client) Provider { return NewCoinbase(u, c) },
			ok:            map[string]reply{coinbaseAll: {file: "coinbase/exchange_rates.json"}},
			want:          map[kassa.Currency]string{"EUR": "87009.85", "USD": "100489.64", "CAD": "139851.27", "JPY": "15007312.5", "GBP": "76401.37", "CHF": "80838.12", "AUD": "154921.61", "BRL": "536120.82", "INR": "8921406.1", "ZAR": "1741520.3", "BHD": "37806.9899"},
			count:         len(coinbaseQuotes),
			rateLimit:     "coinbase/rate_limit.json",
			rateLimitText: "rate_limit_exceeded: Too many requests",
		},
		{
			name: "bitstamp",
			new:  func(u string, c *http.Client) Provider { return NewBitstamp(u, c) },
			ok: map[string]reply{
				bitstampEUR: {file: "bitstamp/ticker_btceur.json"},
				bitstampUSD: {file: "bitstamp/ticker_btcusd.json"},
				bitstampGBP: {file: "bitstamp/ticker_btcgbp.json"},
			},
			want:          map[kassa.Currency]string{"EUR": "87054", "USD": "100502", "GBP": "76410"},
			count:         3,
			rateLimit:     "bitstamp/rate_limit.json",
			rateLimitText: "API0001: Rate limit exceeded. Please try again later.",
		},
		{
			name:          "coingecko",
			new:           func(u string, c *http.Client) Provider { return NewCoinGecko(u, c) },
			ok:            map[string]reply{coinGeckoAll: {file: "coingecko/simple_price.json"}},
			want:          map[kassa.Currency]string{"EUR": "87011", "USD": "100493.27", "CAD": "139802", "JPY": "15008733", "GBP": "76399.5", "CHF": "80842", "AUD": "154841", "BRL": "537345", "INR": "8919519", "ZAR": "1744804"},
			count:         len(coinGeckoQuotes),
			rateLimit:     "coingecko/rate_limit.json",
			rateLimitText: "You've exceeded the Rate Limit.",
		},
	}
}

// allPaths answers every path of routes the same way.
func allPaths(routes map[string]reply, r reply) map[string]reply {
	out := map[string]reply{}
	for path := range routes {
		out[path] = r
	}
	return out
}

func fetchAll(t *testing.T, p Provider) (map[kassa.Currency]string, error) {
	t.Helper()
	got, err := p.Fetch(context.Background(), kassa.Currencies)
	out := map[kassa.Currency]string{}
	for c, r := range got {
		out[c] = r.String()
	}
	return out, err
}

// hasRates reports whether got holds count rates, among them want.
func hasRates(got, want map[kassa.Currency]string, count int) bool {
	if len(got) != count {
		return false
	}
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

func equalStrings(a, b map[kassa.Currency]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestProviders runs the same cases against every provider client, each
// against a local server that answers in the provider's format.
func TestProviders(t *testing.T) {
	for _, pc := range providerCases() {
		t.Run(pc.name, func(t *testing.T) {
			t.Run("recorded answer", func(t *testing.T) {
				srv := newAPIServer(t, pc.ok)
				p := pc.new(srv.URL, srv.Client())
				if p.Name() != pc.name {
					t.Errorf("Name() = %q", p.Name())
				}
				got, err := fetchAll(t, p) // BTC and SATS are asked too and ignored
				if err != nil {
					t.Fatal(err)
				}
				if !hasRates(got, pc.want, pc.count) {
					t.Errorf("got %v, want %d rates with %v", got, pc.count, pc.want)
				}
				for _, c := range p.Quotes() {
					if _, ok := got[c]; !ok {
						t.Errorf("%s quotes %s but brought no rate for it", pc.name, c)
					}
				}
			})

			t.Run("base URL with a path and a slash", func(t *testing.T) {
				routes := map[string]reply{}
				for path, r := range pc.ok {
					routes["/proxy/"+pc.name+path] = r
				}
				srv := newAPIServer(t, routes)
				got, err := fetchAll(t, pc.new(srv.URL+"/proxy/"+pc.name+"/", srv.Client()))
				if err != nil || !hasRates(got, pc.want, pc.count) {
					t.Errorf("got %v, %v", got, err)
				}
			})

			t.Run("no fiat asked, no request", func(t *testing.T) {
				srv := newAPIServer(t, nil) // any request fails the test
				got, err := pc.new(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.BTC, kassa.SATS})
				if err != nil || len(got) != 0 {
					t.Errorf("got %v, %v", got, err)
				}
			})

			t.Run("HTTP 429 with the provider's body", func(t *testing.T) {
				srv := newAPIServer(t, allPaths(pc.ok, reply{status: 429, file: pc.rateLimit, retryAfter: "30"}))
				_, err := fetchAll(t, pc.new(srv.URL, srv.Client()))
				var herr *HTTPError
				if !errors.As(err, &herr) {
					t.Fatalf("err = %v, want an *HTTPError", err)
				}
				if herr.StatusCode != 429 || herr.RetryAfter != 30*time.Second || !strings.Contains(herr.Message, pc.rateLimitText) {
					t.Errorf("err = %+v", herr)
				}
				if !strings.Contains(err.Error(), "HTTP 429 Too Many Requests") || !strings.Contains(err.Error(), "retry after 30s") {
					t.Errorf("message %q", err)
				}
			})

			t.Run("HTTP 503 with an HTML page", func(t *testing.T) {
				srv := newAPIServer(t, allPaths(pc.ok, reply{status: 503, file: "unavailable.html"}))
				_, err := fetchAll(t, pc.new(srv.URL, srv.Client()))
				var herr *HTTPError
				if !errors.As(err, &herr) || herr.StatusCode != 503 || herr.Message != "" {
					t.Errorf("err = %v, want HTTP 503 without the page", err)
				}
			})

			t.Run("malformed answer", func(t *testing.T) {
				srv := newAPIServer(t, allPaths(pc.ok, reply{file: "unavailable.html"}))
				_, err := fetchAll(t, pc.new(srv.URL, srv.Client()))
				if err == nil || !strings.Contains(err.Error(), "malformed answer") {
					t.Errorf("err = %v", err)
				}
			})

			t.Run("timeout", func(t *testing.T) {
				srv := newAPIServer(t, allPaths(pc.ok, reply{hang: true}))
				ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
				defer cancel()
				_, err := pc.new(srv.URL, srv.Client()).Fetch(ctx, kassa.FiatCurrencies)
				if !errors.Is(err, ErrTimeout) {
					t.Errorf("err = %v, want ErrTimeout", err)
				}
				if err != nil && strings.Contains(err.Error(), srv.URL) {
					t.Errorf("error %q shows the URL", err)
				}
			})

			t.Run("connection refused", func(t *testing.T) {
				srv := newAPIServer(t, nil)
				url := srv.URL
				srv.Close()
				_, err := fetchAll(t, pc.new(url, nil))
				if err == nil || !strings.Contains(err.Error(), "request failed") || strings.Contains(err.Error(), url) {
					t.Errorf("err = %v", err)
				}
			})
		})
	}
}

func TestKraken(t *testing.T) {
	t.Run("one pair", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{"/0/public/Ticker?pair=XBTEUR": {file: "kraken/ticker_eur.json"}})
		got, err := NewKraken(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR})
		if err != nil || !sameRates(got, rateMap("EUR", "87012.4")) {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("error in a 200 answer", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{krakenAll: {file: "kraken/unknown_pair.json"}})
		_, err := fetchAll(t, NewKraken(srv.URL, srv.Client()))
		if err == nil || err.Error() != "EQuery:Unknown asset pair" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("rate limit in a 200 answer", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{krakenAll: {file: "kraken/rate_limit.json"}})
		_, err := fetchAll(t, NewKraken(srv.URL, srv.Client()))
		if err == nil || err.Error() != "EAPI:Rate limit exceeded" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("503 with Kraken's body", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{krakenAll: {status: 503, file: "kraken/unavailable.json"}})
		_, err := fetchAll(t, NewKraken(srv.URL, srv.Client()))
		if err == nil || err.Error() != "HTTP 503 Service Unavailable: EService:Unavailable" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("warnings are no error", func(t *testing.T) {
		body := `{"error":["WGeneral:Deprecated"],"result":{"XXBTZEUR":{"c":["87012.40000","0.001"]}}}`
		srv := newAPIServer(t, map[string]reply{"/0/public/Ticker?pair=XBTEUR": {body: body}})
		got, err := NewKraken(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR})
		if err != nil || !sameRates(got, rateMap("EUR", "87012.4")) {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("a pair missing or bad", func(t *testing.T) {
		body := `{"error":[],"result":{"XXBTZEUR":{"c":["87012.40000","0.001"]},"XXBTZUSD":{"c":["-1","0.001"]}}}`
		srv := newAPIServer(t, map[string]reply{"/0/public/Ticker?pair=XBTEUR,XBTUSD,XBTCHF": {body: body}})
		got, err := NewKraken(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR, kassa.USD, kassa.CHF})
		var pe PairErrors
		if !sameRates(got, rateMap("EUR", "87012.4")) || !errors.As(err, &pe) || len(pe) != 2 || pe[kassa.USD] == nil || pe[kassa.CHF] == nil {
			t.Fatalf("got %v, %v", got, err)
		}
		if want := `CHF: pair missing from the answer; USD: implausible price "-1"`; err.Error() != want {
			t.Errorf("message %q, want %q", err, want)
		}
	})
}

func TestCoinbase(t *testing.T) {
	t.Run("error body", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{coinbaseAll: {status: 404, file: "coinbase/not_found.json"}})
		_, err := fetchAll(t, NewCoinbase(srv.URL, srv.Client()))
		if err == nil || err.Error() != "HTTP 404 Not Found: not_found: Invalid currency (BTX)" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("a rate that is no number", func(t *testing.T) {
		body := `{"data":{"currency":"BTC","rates":{"EUR":"87009.85","USD":"n/a","GBP":null}}}`
		srv := newAPIServer(t, map[string]reply{"/v2/exchange-rates?currency=BTC": {body: body}})
		got, err := NewCoinbase(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR, kassa.USD, kassa.GBP})
		var pe PairErrors
		if !sameRates(got, rateMap("EUR", "87009.85")) || !errors.As(err, &pe) || len(pe) != 2 {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("answer for another currency", func(t *testing.T) {
		body := `{"data":{"currency":"USD","rates":{"EUR":"0.86"}}}`
		srv := newAPIServer(t, map[string]reply{coinbaseAll: {body: body}})
		_, err := fetchAll(t, NewCoinbase(srv.URL, srv.Client()))
		if err == nil || !strings.Contains(err.Error(), "not BTC") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestBitstamp(t *testing.T) {
	t.Run("only its markets are asked", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{bitstampEUR: {file: "bitstamp/ticker_btceur.json"}})
		got, err := NewBitstamp(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR, kassa.CAD, kassa.JPY, kassa.CHF})
		if err != nil || !sameRates(got, rateMap("EUR", "87054")) {
			t.Errorf("got %v, %v", got, err)
		}
	})
	t.Run("one pair fails", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{
			bitstampEUR: {file: "bitstamp/ticker_btceur.json"},
			bitstampUSD: {file: "bitstamp/ticker_btcusd.json"},
			bitstampGBP: {status: 404, file: "bitstamp/not_found.html"},
		})
		got, err := fetchAll(t, NewBitstamp(srv.URL, srv.Client()))
		var herr *HTTPError
		if !equalStrings(got, map[kassa.Currency]string{"EUR": "87054", "USD": "100502"}) || !errors.As(err, &herr) || herr.StatusCode != 404 {
			t.Fatalf("got %v, %v", got, err)
		}
		if err.Error() != "GBP: HTTP 404 Not Found" {
			t.Errorf("message %q", err)
		}
	})
	t.Run("every pair fails alike", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{
			bitstampEUR: {status: 400, file: "bitstamp/invalid_pair.json"},
			bitstampUSD: {status: 400, file: "bitstamp/invalid_pair.json"},
			bitstampGBP: {status: 400, file: "bitstamp/invalid_pair.json"},
		})
		got, err := fetchAll(t, NewBitstamp(srv.URL, srv.Client()))
		want := "EUR, GBP, USD: HTTP 400 Bad Request: API0020: Invalid currency pair."
		if len(got) != 0 || err == nil || err.Error() != want {
			t.Errorf("got %v, %v; want %q", got, err, want)
		}
	})
	t.Run("reason as field errors", func(t *testing.T) {
		if got := bitstampErrorText([]byte(`{"status":"error","reason":{"__all__":["Invalid pair"]}}`)); got != `{"__all__":["Invalid pair"]}` {
			t.Errorf("got %q", got)
		}
	})
}

func TestCoinGecko(t *testing.T) {
	t.Run("error body", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{coinGeckoAll: {status: 400, file: "coingecko/missing_parameter.json"}})
		_, err := fetchAll(t, NewCoinGecko(srv.URL, srv.Client()))
		if err == nil || err.Error() != "HTTP 400 Bad Request: Missing parameter vs_currencies" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("no bitcoin in the answer", func(t *testing.T) {
		srv := newAPIServer(t, map[string]reply{coinGeckoAll: {file: "coingecko/unknown_id.json"}})
		_, err := fetchAll(t, NewCoinGecko(srv.URL, srv.Client()))
		if err == nil || !strings.Contains(err.Error(), "no bitcoin price") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("numbers keep every digit", func(t *testing.T) {
		body := `{"bitcoin":{"eur":87011.123456789,"jpy":1.5008733e7,"usd":null}}`
		srv := newAPIServer(t, map[string]reply{"/api/v3/simple/price?ids=bitcoin&vs_currencies=eur,jpy,usd": {body: body}})
		got, err := NewCoinGecko(srv.URL, srv.Client()).Fetch(context.Background(), []kassa.Currency{kassa.EUR, kassa.JPY, kassa.USD})
		var pe PairErrors
		if !sameRates(got, rateMap("EUR", "87011.123456789", "JPY", "15008733")) || !errors.As(err, &pe) || pe[kassa.USD] == nil {
			t.Errorf("got %v, %v", got, err)
		}
	})
}

func TestParseRate(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{`"87012.40000"`, "87012.4"},
		{`87011`, "87011"},
		{` "  100494.9 " `, "100494.9"},
		{`1.5008733e7`, "15008733"},
		{`"0.00000001"`, "0.00000001"},
		{`0`, ""},
		{`"-5"`, ""},
		{`"abc"`, ""},
		{`""`, ""},
		{`null`, ""},
		{`1e15`, ""},
		{`1e9999`, ""},
		{`1e-9999`, ""},
		{`"1e-19"`, ""},
		{`"0.000000000000000001"`, "0.000000000000000001"},
		{`"` + strings.Repeat("1", 41) + `"`, ""},
		{`"12`, ""},
	} {
		got, err := parseRate([]byte(tc.raw))
		if err != nil && len(err.Error()) > 80 {
			t.Errorf("parseRate(%s): message of %d bytes", tc.raw, len(err.Error()))
		}
		switch {
		case tc.want == "" && err == nil:
			t.Errorf("parseRate(%s) = %s, want an error", tc.raw, got)
		case tc.want != "" && (err != nil || !got.Equal(dec(tc.want))):
			t.Errorf("parseRate(%s) = %s, %v; want %s", tc.raw, got, err, tc.want)
		}
	}
}

func TestCleanMessage(t *testing.T) {
	if got := cleanMessage("a\n\tb\x00c  d"); got != "a bc d" {
		t.Errorf("got %q", got)
	}
	if got := cleanMessage(strings.Repeat("x", 300)); len([]rune(got)) != 201 {
		t.Errorf("got %d runes", len([]rune(got)))
	}
}
