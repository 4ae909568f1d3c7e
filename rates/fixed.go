package rates

import (
	"context"
	"maps"
	"sync"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// FixedSource is what Fixed.Source answers, so that logs, health and
// pages show that rates are not real.
const FixedSource = "fixed (simulation)"

// SimulationRates returns the rates that a zero Fixed uses: plausible
// prices of one bitcoin in every fiat currency that any provider quotes,
// constant so that simulated invoices are reproducible.
func SimulationRates() map[kassa.Currency]decimal.Decimal {
	return maps.Clone(parsedSimulationRates())
}

// parsedSimulationRates parses simulationRates once.
var parsedSimulationRates = sync.OnceValue(func() map[kassa.Currency]decimal.Decimal {
	out := make(map[kassa.Currency]decimal.Decimal, len(simulationRates))
	for c, r := range simulationRates {
		out[c] = decimal.RequireFromString(r)
	}
	return out
})

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

// lookup returns the rate of c without copying the map.
func (f Fixed) lookup(c kassa.Currency) (decimal.Decimal, bool) {
	if f.Rates == nil {
		rate, ok := parsedSimulationRates()[c]
		return rate, ok
	}
	rate, ok := f.Rates[c]
	return rate, ok
}

func (f Fixed) rates() map[kassa.Currency]decimal.Decimal {
	if f.Rates == nil {
		return parsedSimulationRates()
	}
	return maps.Clone(f.Rates)
}

// Rate returns the fixed price of one bitcoin in c; BTC is 1 and SATS
// 100 000 000. A fiat currency missing from Rates is Unavailable.
func (f Fixed) Rate(_ context.Context, c kassa.Currency) (decimal.Decimal, error) {
	// A served currency first, looked up alone: listing and sorting
	// every quoted currency (exactRate's check) took 7% of a simulated
	// create's CPU. Currencies serves exactly the known fiat currencies
	// with a positive rate, so the answer is the same.
	if c.IsFiat() && c.IsKnown() {
		if rate, ok := f.lookup(c); ok && rate.IsPositive() {
			return rate, nil
		}
	}
	if rate, ok, err := exactRate(f, c); ok || err != nil {
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
	served := f.Currencies()
	entries := make([]kassa.RateEntry, 0, len(served))
	for _, c := range served {
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

// Currencies lists the ISO 4217 fiat currencies that Rates has a
// positive rate for, sorted by code.
func (f Fixed) Currencies() []kassa.Currency {
	var quoted []kassa.Currency
	for c, r := range f.rates() {
		if r.IsPositive() {
			quoted = append(quoted, c)
		}
	}
	return servedOf(quoted)
}

// Source returns FixedSource.
func (Fixed) Source() string { return FixedSource }

// Run has nothing to refresh: it returns when ctx ends.
func (Fixed) Run(ctx context.Context) { <-ctx.Done() }
