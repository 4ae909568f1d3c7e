package rates

import (
	"slices"
	"testing"

	"github.com/shopspring/decimal"
)

func TestCombine(t *testing.T) {
	for _, tc := range []struct {
		name     string
		quotes   []string
		want     string // "" when there is no rate
		outliers []string
	}{
		{name: "none", quotes: nil},
		{name: "one is used as it is", quotes: []string{"87000"}, want: "87000"},
		{name: "two that agree give their mean", quotes: []string{"87000", "87100"}, want: "87050"},
		{name: "two 100 times apart disagree", quotes: []string{"87000", "8700000"}, outliers: []string{"87000", "8700000"}},
		{name: "odd count takes the middle", quotes: []string{"87100", "87000", "87050"}, want: "87050"},
		{name: "100 times too high is outvoted", quotes: []string{"87000", "8700000", "87100"}, want: "87050", outliers: []string{"8700000"}},
		{name: "100 times too low is outvoted", quotes: []string{"870", "87000", "87100"}, want: "87050", outliers: []string{"870"}},
		{name: "four with one outlier", quotes: []string{"87000", "87100", "87060", "120000"}, want: "87060", outliers: []string{"120000"}},
		{name: "five with two outliers", quotes: []string{"87000", "1", "87100", "87060", "9999999"}, want: "87060", outliers: []string{"1", "9999999"}},
		{name: "three that all disagree", quotes: []string{"870", "87000", "8700000"}, outliers: []string{"870", "8700000"}},
		{name: "two broken alike against two good", quotes: []string{"87000", "87100", "8700000", "8700000"}, outliers: []string{"87000", "87100", "8700000", "8700000"}},
		// Median 100; 110 is exactly 10% off and still counts.
		{name: "the limit counts", quotes: []string{"90", "100", "110"}, want: "100"},
		{name: "just past the limit", quotes: []string{"100", "100", "110.01"}, want: "100", outliers: []string{"110.01"}},
		{name: "decimals stay exact", quotes: []string{"87012.4", "87009.85", "87054", "87011"}, want: "87011.7"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var quotes []namedQuote
			for i, q := range tc.quotes {
				quotes = append(quotes, namedQuote{provider: string(rune('a' + i)), rate: dec(q)})
			}
			got := combine(quotes, DefaultMaxDeviation)
			switch {
			case tc.want == "" && got.ok:
				t.Errorf("rate %s, want none", got.rate)
			case tc.want != "" && (!got.ok || !got.rate.Equal(dec(tc.want))):
				t.Errorf("rate %s (ok %v), want %s", got.rate, got.ok, tc.want)
			}
			if got.disagree != (tc.want == "" && len(tc.quotes) > 1) {
				t.Errorf("disagree = %v", got.disagree)
			}
			var outliers []string
			for _, q := range got.outliers {
				outliers = append(outliers, q.rate.String())
			}
			slices.Sort(outliers)
			slices.Sort(tc.outliers)
			if !slices.Equal(outliers, tc.outliers) {
				t.Errorf("outliers %v, want %v", outliers, tc.outliers)
			}
		})
	}
}

func TestMedian(t *testing.T) {
	values := []decimal.Decimal{dec("3"), dec("1"), dec("2")}
	if got := median(values); !got.Equal(dec("2")) {
		t.Errorf("median = %s", got)
	}
	if !values[0].Equal(dec("3")) {
		t.Error("median sorted its argument")
	}
	if got := median([]decimal.Decimal{dec("0.00000001"), dec("0.00000002")}); !got.Equal(dec("0.000000015")) {
		t.Errorf("median = %s", got)
	}
}
