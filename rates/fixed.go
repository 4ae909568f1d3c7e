package rates

import (
	"context"
	"maps"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// FixedSource is what Fixed.Source answers, so that logs, health and
// pages show that rates are not real.
const FixedSource = "fixed (simulation)"

// SimulationRates returns the rates that a zero Fixed uses: plausible
// prices of one bitcoin in each fiat currency, constant so that
// simulated invoices are reproducible.
func SimulationRates() map[kassa.Currency]decimal.Decimal {
	return map[kassa.Currency]decimal.Decimal{
		kassa.EUR: decimal.RequireFromString("87000"),
		kassa.USD: decimal.RequireFromString("100000"),
		kassa.CAD: decimal.RequireFromString("140000"),
		kassa.JPY: decimal.RequireFromString("15000000"),
		kassa.GBP: decimal.RequireFromString("76000"),
		kassa.CHF: decimal.RequireFromString("81000"),
	}
}

// Fixed is a kassa.Rates with constant rates, for simulation. The zero
// Fixed uses SimulationRates.
type Fixed struct {
	// Rates maps each fiat currency to the price of one bitcoin in it;
	// nil means SimulationRates.
	Rates map[kassa.Currency]decimal.Decimal
}

var (
	_ kassa.Rates = Fixed{}
	_ Backend     = Fixed{}
)

func (f Fixed) rates() map[kassa.Currency]decimal.Decimal {
	if f.Rates == nil {
		return SimulationRates()
	}
	return maps.Clone(f.Rates)
}

// Rate returns the fixed price of one bitcoin in c; BTC is 1 and SATS
// 100 000 000. A fiat currency missing from Rates is Unavailable.
func (f Fixed) Rate(_ context.Context, c kassa.Currency) (decimal.Decimal, error) {
	if rate, ok, err := exactRate(c); ok || err != nil {
		return rate, err
	}
	rate, ok := f.rates()[c]
	if !ok || !rate.IsPositive() {
		return decimal.Zero, kassa.Errorf(kassa.Unavailable, "no exchange rate for %s: the fixed rates have none", c)
	}
	return rate, nil
}

// Entries returns one entry per fiat currency with its fixed rate.
func (f Fixed) Entries(ctx context.Context) []kassa.RateEntry {
	entries := make([]kassa.RateEntry, 0, len(kassa.FiatCurrencies))
	for _, c := range kassa.FiatCurrencies {
		e := kassa.RateEntry{Currency: c, Errors: []string{}}
		rate, err := f.Rate(ctx, c)
		if err != nil {
			e.Errors = append(e.Errors, kassa.ErrorMessage(err))
		}
		e.Rate = rate
		entries = append(entries, e)
	}
	return entries
}

// Source returns FixedSource.
func (Fixed) Source() string { return FixedSource }

// Run has nothing to refresh: it returns when ctx ends.
func (Fixed) Run(ctx context.Context) { <-ctx.Done() }
