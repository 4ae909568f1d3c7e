package rates

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// CoinGeckoURL is the base address of CoinGecko's public API.
const CoinGeckoURL = "https://api.coingecko.com"

// CoinGecko reads CoinGecko's aggregated price of bitcoin in every
// currency at once: GET
// /api/v3/simple/price?ids=bitcoin&vs_currencies=eur,usd,…. Its prices are
// JSON numbers, parsed from the raw JSON straight into decimals.
type CoinGecko struct{ src httpSource }

// NewCoinGecko returns a CoinGecko provider at baseURL (CoinGeckoURL when
// empty) using client (a default client when nil).
func NewCoinGecko(baseURL string, client *http.Client) *CoinGecko {
	return &CoinGecko{src: newHTTPSource(baseURL, CoinGeckoURL, client, coinGeckoErrorText)}
}

// Name returns "coingecko".
func (*CoinGecko) Name() string { return "coingecko" }

// Quotes lists the ISO 4217 fiat currencies among CoinGecko's vs
// currencies.
func (*CoinGecko) Quotes() []kassa.Currency { return slices.Clone(coinGeckoQuotes) }

// Fetch returns CoinGecko's price of one bitcoin in each fiat currency.
func (cg *CoinGecko) Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	fiat := quotedOf(currencies, coinGeckoQuotes)
	if len(fiat) == 0 {
		return map[kassa.Currency]decimal.Decimal{}, nil
	}
	codes := make([]string, len(fiat))
	for i, c := range fiat {
		codes[i] = strings.ToLower(string(c))
	}
	var prices map[string]map[string]json.RawMessage
	path := "/api/v3/simple/price?ids=bitcoin&vs_currencies=" + strings.Join(codes, ",")
	if err := cg.src.getJSON(ctx, path, &prices); err != nil {
		return nil, err
	}
	bitcoin, ok := prices["bitcoin"]
	if !ok {
		return nil, errors.New("no bitcoin price in the answer")
	}
	got := map[kassa.Currency]decimal.Decimal{}
	why := map[kassa.Currency]error{}
	for i, c := range fiat {
		n, ok := bitcoin[codes[i]]
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

// coinGeckoErrorText reads {"status":{"error_code":…,"error_message":…}}
// (rate limits) or {"error":…}.
func coinGeckoErrorText(body []byte) string {
	var e struct {
		Status struct {
			ErrorMessage string `json:"error_message"`
		} `json:"status"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil {
		return ""
	}
	if e.Status.ErrorMessage != "" {
		return e.Status.ErrorMessage
	}
	if len(e.Error) > 0 {
		return jsonString(e.Error)
	}
	return ""
}
