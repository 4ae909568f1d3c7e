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

// KrakenURL is the base address of Kraken's public REST API.
const KrakenURL = "https://api.kraken.com"

// Kraken reads the last trade price of XBT/fiat pairs from Kraken's
// public ticker, GET /0/public/Ticker?pair=XBTEUR,XBTUSD,…, in one
// request.
type Kraken struct{ src httpSource }

// NewKraken returns a Kraken provider at baseURL (KrakenURL when empty)
// using client (a default client when nil).
func NewKraken(baseURL string, client *http.Client) *Kraken {
	return &Kraken{src: newHTTPSource(baseURL, KrakenURL, client, krakenErrorText)}
}

// Name returns "kraken".
func (*Kraken) Name() string { return "kraken" }

// Quotes lists Kraken's XBT/fiat pairs: AUD, CAD, CHF, EUR, GBP, JPY, USD.
func (*Kraken) Quotes() []kassa.Currency { return slices.Clone(krakenQuotes) }

// krakenTicker is the answer of /0/public/Ticker: error lists messages
// such as "EQuery:Unknown asset pair" (E for errors, W for warnings);
// result maps Kraken's pair names (XXBTZEUR, XBTCHF) to tickers.
type krakenTicker struct {
	Error  []string `json:"error"`
	Result map[string]struct {
		// C is the last trade closed: [price, lot volume].
		C []json.RawMessage `json:"c"`
	} `json:"result"`
}

// Fetch returns the last trade price of XBT in each fiat currency.
func (k *Kraken) Fetch(ctx context.Context, currencies []kassa.Currency) (map[kassa.Currency]decimal.Decimal, error) {
	fiat := quotedOf(currencies, krakenQuotes)
	if len(fiat) == 0 {
		return map[kassa.Currency]decimal.Decimal{}, nil
	}
	pairs := make([]string, len(fiat))
	for i, c := range fiat {
		pairs[i] = "XBT" + string(c)
	}
	var t krakenTicker
	if err := k.src.getJSON(ctx, "/0/public/Ticker?pair="+strings.Join(pairs, ","), &t); err != nil {
		return nil, err
	}
	if msg := krakenErrors(t.Error); msg != "" {
		return nil, errors.New(cleanMessage(msg))
	}
	got := map[kassa.Currency]decimal.Decimal{}
	why := map[kassa.Currency]error{}
	for _, c := range fiat {
		ticker, ok := t.Result["XXBTZ"+string(c)]
		if !ok {
			ticker, ok = t.Result["XBT"+string(c)]
		}
		if !ok {
			why[c] = errors.New("pair missing from the answer")
			continue
		}
		if len(ticker.C) == 0 {
			why[c] = errors.New("no last trade price")
			continue
		}
		rate, err := parseRate(ticker.C[0])
		if err != nil {
			why[c] = err
			continue
		}
		got[c] = rate
	}
	return got, missingError(fiat, got, why)
}

// krakenErrors joins the error messages of a Kraken answer, skipping
// warnings.
func krakenErrors(msgs []string) string {
	var errs []string
	for _, m := range msgs {
		if !strings.HasPrefix(m, "W") {
			errs = append(errs, m)
		}
	}
	return strings.Join(errs, "; ")
}

func krakenErrorText(body []byte) string {
	var t krakenTicker
	if json.Unmarshal(body, &t) != nil {
		return ""
	}
	return krakenErrors(t.Error)
}
