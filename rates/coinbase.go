package rates

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// CoinbaseURL is the base address of Coinbase's public API.
const CoinbaseURL = "https://api.coinbase.com"

// Coinbase reads the price of one bitcoin in every currency at once from
// Coinbase's exchange rates, GET /v2/exchange-rates?currency=BTC, whose
// rates are Coinbase's spot prices.
type Coinbase struct{ src httpSource }

// NewCoinbase returns a Coinbase provider at baseURL (CoinbaseURL when
// empty) using client (a default client when nil).
func NewCoinbase(baseURL string, client *http.Client) *Coinbase {
	return &Coinbase{src: newHTTPSource(baseURL, CoinbaseURL, client, coinbaseErrorText)}
}

// Name returns "coinbase".
func (*Coinbase) Name() string { return "coinbase" }

// Quotes lists the ISO 4217 fiat currencies of Coinbase's answer.
func (*Coinbase) Quotes() []kassa.Currency { return slices.Clone(coinbaseQuotes) }

// coinbaseRates is the answer of /v2/exchange-rates: rates are decimal
// strings keyed by currency code.
type coinbaseRates struct {
	Data struct {
		Currency string                     `json:"currency"`
		Rates    map[string]json.RawMessage `json:"rates"`
	} `json:"data"`
}

// Fetch returns Coinbase's price of one bitcoin in each fiat currency.
func (cb *Coinbase) Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	fiat := quotedOf(currencies, coinbaseQuotes)
	if len(fiat) == 0 {
		return map[kassa.Currency]decimal.Decimal{}, nil
	}
	var r coinbaseRates
	if err := cb.src.getJSON(ctx, "/v2/exchange-rates?currency=BTC", &r); err != nil {
		return nil, err
	}
	if r.Data.Currency != "" && !strings.EqualFold(r.Data.Currency, "BTC") {
		return nil, fmt.Errorf("answer is for %s, not BTC", cleanMessage(r.Data.Currency))
	}
	got := map[kassa.Currency]decimal.Decimal{}
	why := map[kassa.Currency]error{}
	for _, c := range fiat {
		n, ok := r.Data.Rates[string(c)]
		if !ok {
			why[c] = errors.New("currency missing from the answer")
			continue
		}
		rate, err := parseRate(n)
		if err != nil {
			why[c] = err
			continue
		}
		got[c] = rate
	}
	return got, missingError(fiat, got, why)
}

// coinbaseErrorText reads {"errors":[{"id":…,"message":…}]}, or the
// older {"message":…}.
func coinbaseErrorText(body []byte) string {
	var e struct {
		Errors []struct {
			ID      string `json:"id"`
			Message string `json:"message"`
		} `json:"errors"`
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	var msgs []string
	for _, x := range e.Errors {
		switch {
		case x.ID != "" && x.Message != "":
			msgs = append(msgs, x.ID+": "+x.Message)
		case x.Message != "":
			msgs = append(msgs, x.Message)
		case x.ID != "":
			msgs = append(msgs, x.ID)
		}
	}
	if len(msgs) == 0 && e.Message != "" {
		msgs = append(msgs, e.Message)
	}
	return strings.Join(msgs, "; ")
}
