package rates

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// BitstampURL is the base address of Bitstamp's public API.
const BitstampURL = "https://www.bitstamp.net"

// Bitstamp reads the last trade price from Bitstamp's ticker, one
// request per pair: GET /api/v2/ticker/btceur/. Bitstamp trades bitcoin
// against EUR, USD and GBP only; other currencies are left out of its
// answer.
type Bitstamp struct{ src httpSource }

// NewBitstamp returns a Bitstamp provider at baseURL (BitstampURL when
// empty) using client (a default client when nil).
func NewBitstamp(baseURL string, client *http.Client) *Bitstamp {
	return &Bitstamp{src: newHTTPSource(baseURL, BitstampURL, client, bitstampErrorText)}
}

// Name returns "bitstamp".
func (*Bitstamp) Name() string { return "bitstamp" }

// Quotes lists Bitstamp's BTC/fiat markets: EUR, GBP and USD.
func (*Bitstamp) Quotes() []kassa.Currency { return slices.Clone(bitstampQuotes) }

// bitstampTicker is the answer of /api/v2/ticker/{pair}/; prices are
// decimal strings.
type bitstampTicker struct {
	Last json.RawMessage `json:"last"`
}

// Fetch returns the last trade price of bitcoin in each currency that
// Bitstamp trades, asking for the pairs concurrently.
func (b *Bitstamp) Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	markets := quotedOf(currencies, bitstampQuotes)
	got := map[kassa.Currency]decimal.Decimal{}
	why := map[kassa.Currency]error{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, c := range markets {
		wg.Go(func() {
			var t bitstampTicker
			err := b.src.getJSON(ctx, "/api/v2/ticker/btc"+strings.ToLower(string(c))+"/", &t)
			var rate decimal.Decimal
			if err == nil {
				rate, err = parseRate(t.Last)
			}
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				why[c] = err
				return
			}
			got[c] = rate
		})
	}
	wg.Wait()
	return got, missingError(markets, got, why)
}

// bitstampErrorText reads {"status":"error","reason":…,"code":…} (reason
// may be a string or an object of field errors) or {"code":…,"message":…}.
func bitstampErrorText(body []byte) string {
	var e struct {
		Reason  json.RawMessage `json:"reason"`
		Message string          `json:"message"`
		Code    string          `json:"code"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	msg := e.Message
	if len(e.Reason) > 0 && string(e.Reason) != "null" {
		msg = jsonString(e.Reason)
	}
	if e.Code != "" && msg != "" {
		msg = e.Code + ": " + msg
	}
	return msg
}
