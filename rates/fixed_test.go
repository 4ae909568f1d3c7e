package rates

import (
	"context"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

func TestFixed(t *testing.T) {
	var f Fixed
	if !strings.Contains(f.Source(), "fixed") || !strings.Contains(f.Source(), "simulation") {
		t.Errorf("Source() = %q", f.Source())
	}
	sim := SimulationRates()
	for _, c := range kassa.FiatCurrencies {
		r, err := f.Rate(context.Background(), c)
		if err != nil || !r.Equal(sim[c]) || !r.IsPositive() {
			t.Errorf("Rate(%s) = %s, %v", c, r, err)
		}
	}
	if got := rateOf(f, kassa.BTC); got != "1" {
		t.Errorf("Rate(BTC) = %s", got)
	}
	if got := rateOf(f, kassa.SATS); got != "100000000" {
		t.Errorf("Rate(SATS) = %s", got)
	}
	if got := rateOf(f, "XAU"); !strings.HasPrefix(got, "invalid:") {
		t.Errorf("Rate(XAU) = %s", got)
	}
	entries := f.Entries(context.Background())
	if len(entries) != len(kassa.FiatCurrencies) {
		t.Fatalf("%d entries", len(entries))
	}
	for i, e := range entries {
		if e.Currency != kassa.FiatCurrencies[i] || !e.Rate.Equal(sim[e.Currency]) || len(e.Errors) != 0 || e.Errors == nil {
			t.Errorf("entry %+v", e)
		}
	}
	// SimulationRates hands out copies.
	sim[kassa.EUR] = dec("1")
	if got := rateOf(f, kassa.EUR); got == "1" {
		t.Error("changing SimulationRates' result changed Fixed")
	}
}

func TestFixedCustomRates(t *testing.T) {
	f := Fixed{Rates: rateMap("EUR", "50000")}
	if got := rateOf(f, kassa.EUR); got != "50000" {
		t.Errorf("Rate(EUR) = %s", got)
	}
	if got := rateOf(f, kassa.USD); got != "unavailable: no exchange rate for USD: the fixed rates have none" {
		t.Errorf("Rate(USD) = %s", got)
	}
	if e := entry(t, f, kassa.USD); !e.Rate.IsZero() || len(e.Errors) != 1 {
		t.Errorf("USD entry %+v", e)
	}
}

func TestFixedRunReturnsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	Fixed{}.Run(ctx)
}
