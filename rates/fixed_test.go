package rates

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

func TestFixed(t *testing.T) {
	var f Fixed
	if !strings.Contains(f.Source(), "fixed") || !strings.Contains(f.Source(), "simulation") {
		t.Errorf("Source() = %q", f.Source())
	}
	sim := SimulationRates()
	// The simulation serves every currency that any provider quotes.
	all := Fixed{}.Currencies()
	for _, quotes := range [][]kassa.Currency{krakenQuotes, coinbaseQuotes, bitstampQuotes, coinGeckoQuotes} {
		for _, c := range quotes {
			if !slices.Contains(all, c) {
				t.Errorf("the simulation has no rate for %s", c)
			}
		}
	}
	if len(all) != len(sim) {
		t.Errorf("%d currencies served, %d simulation rates", len(all), len(sim))
	}
	for _, c := range all {
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
	if got := rateOf(f, "KPW"); !strings.HasPrefix(got, "invalid: currency: currency KPW is not quoted") {
		t.Errorf("Rate(KPW) = %s", got)
	}
	entries := f.Entries(context.Background())
	if len(entries) != len(all) {
		t.Fatalf("%d entries", len(entries))
	}
	for i, e := range entries {
		if e.Currency != all[i] || !e.Rate.Equal(sim[e.Currency]) || len(e.Errors) != 0 || e.Errors == nil {
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
	// A currency without a fixed rate is not served: 400, not 503.
	if got := rateOf(f, kassa.USD); !strings.HasPrefix(got, "invalid: currency: currency USD is not quoted by this server's rate providers (fixed (simulation))") {
		t.Errorf("Rate(USD) = %s", got)
	}
	if got := f.Currencies(); !slices.Equal(got, []kassa.Currency{kassa.EUR}) {
		t.Errorf("Currencies() = %v", got)
	}
}

// TestFixedRunReturnsWhenContextEnds checks that Run serves until its
// context ends and then returns, with the fixed rates served throughout.
func TestFixedRunReturnsWhenContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	f := Fixed{}
	done := make(chan struct{})
	go func() {
		f.Run(ctx)
		close(done)
	}()
	// Rates are served while Run runs.
	if r, err := f.Rate(ctx, kassa.EUR); err != nil || !r.IsPositive() {
		t.Errorf("Rate(EUR) while running = %s, %v", r, err)
	}
	// Best effort, never a false failure: an early return is caught when
	// Run's goroutine has already run.
	select {
	case <-done:
		t.Fatal("Run returned while its context was still live")
	default:
	}
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return within 5 s after its context ended")
	}
	// A context that has already ended: Run returns at once.
	returned := make(chan struct{})
	go func() {
		f.Run(ctx)
		close(returned)
	}()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Run on an ended context did not return within 5 s")
	}
	if r, err := f.Rate(context.Background(), kassa.EUR); err != nil || !r.IsPositive() {
		t.Errorf("Rate(EUR) after Run = %s, %v", r, err)
	}
}
