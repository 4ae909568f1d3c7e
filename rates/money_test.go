package rates

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestFiatSatsFiatRoundTrip checks, over a seeded stream of currencies,
// rates and amounts, that an amount in a currency's minor unit converted
// to satoshis (kassa.ToSats, rounding up) and back (kassa.FiatValue) at
// the same rate never loses value and gains at most one satoshi's worth,
// rounded to the currency's minor unit. When a satoshi is worth less than
// half a minor unit, the amount comes back exactly.
func TestFiatSatsFiatRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(20251121, 4))
	satsPerBTC := decimal.NewFromInt(kassa.SatsPerBTC)
	var rates []decimal.Decimal
	for _, r := range SimulationRates() {
		rates = append(rates, r)
	}
	for _, r := range []string{"87012.4", "139851.27", "15007312.5", "0.00000001", "1", "1000000000"} {
		rates = append(rates, dec(r))
	}
	checked := 0
	for i := range 5000 {
		c := kassa.FiatCurrencies[rng.IntN(len(kassa.FiatCurrencies))]
		var rate decimal.Decimal
		if i < len(rates) {
			rate = rates[i]
		} else {
			// 100 to 100 000 000 units per bitcoin with up to 8 decimals.
			places := int32(rng.IntN(9))
			rate = decimal.New(rng.Int64N(100_000_000)+100, 0).Add(decimal.New(rng.Int64N(100_000_000), -8)).Truncate(places)
		}
		var amount decimal.Decimal
		switch rng.IntN(3) {
		case 0: // one to a hundred minor units
			amount = decimal.New(rng.Int64N(100)+1, -c.Decimals())
		default: // up to ten million units
			amount = decimal.New(rng.Int64N(1_000_000_000)+1, -c.Decimals()).Mul(decimal.New(rng.Int64N(10_000)+1, 0))
		}
		sats, err := kassa.ToSats(amount, c, rate)
		if kassa.ErrorCode(err) == kassa.Invalid {
			continue // more than 21 million bitcoin
		}
		if err != nil {
			t.Fatalf("ToSats(%s %s at %s): %v", amount, c, rate, err)
		}
		back := kassa.FiatValue(sats, c, rate)
		oneSat := rate.Div(satsPerBTC).Round(c.Decimals())
		gain := back.Sub(amount)
		if gain.IsNegative() || gain.GreaterThan(oneSat) {
			t.Fatalf("%s %s at %s → %d sats → %s %s: off by %s, more than one satoshi (%s)", amount, c, rate, sats, back, c, gain, oneSat)
		}
		checked++
	}
	if checked < 3500 {
		t.Errorf("only %d cases within 21 million bitcoin", checked)
	}
}
