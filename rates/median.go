package rates

import (
	"fmt"
	"slices"
	"strings"

	"github.com/shopspring/decimal"
)

// DefaultMaxDeviation is how far, as a fraction of the median, a quote may
// lie from the median of all fresh quotes and still count: 10%.
var DefaultMaxDeviation = decimal.RequireFromString("0.10")

// namedQuote is one provider's fresh price of a bitcoin.
type namedQuote struct {
	provider string
	rate     decimal.Decimal
}

// combined is the outcome of combining the fresh quotes of one pair.
type combined struct {
	rate decimal.Decimal
	ok   bool
	// outliers are the quotes that did not count.
	outliers []namedQuote
	// median is the median of all quotes, that outliers were measured
	// against.
	median decimal.Decimal
	// disagree says that quotes existed but fewer than two agreed.
	disagree bool
}

// combine applies the package's rule to the fresh quotes of one pair:
// one quote is used as it is; of two or more, a quote counts when it lies
// within maxDeviation (a fraction) of the median of all of them, the
// limit included; at least two must count, else the sources disagree and
// there is no rate; the rate is the median of those that count.
func combine(quotes []namedQuote, maxDeviation decimal.Decimal) combined {
	switch len(quotes) {
	case 0:
		return combined{}
	case 1:
		return combined{rate: quotes[0].rate, ok: true, median: quotes[0].rate}
	}
	all := make([]decimal.Decimal, len(quotes))
	for i, q := range quotes {
		all[i] = q.rate
	}
	m := median(all)
	limit := m.Mul(maxDeviation)
	var kept []decimal.Decimal
	var outliers []namedQuote
	for _, q := range quotes {
		if q.rate.Sub(m).Abs().LessThanOrEqual(limit) {
			kept = append(kept, q.rate)
		} else {
			outliers = append(outliers, q)
		}
	}
	if len(kept) < 2 {
		return combined{outliers: outliers, median: m, disagree: true}
	}
	return combined{rate: median(kept), ok: true, outliers: outliers, median: m}
}

// median returns the median of values (not empty): the middle value, or
// the mean of the two middle values when their number is even.
func median(values []decimal.Decimal) decimal.Decimal {
	sorted := slices.Clone(values)
	slices.SortFunc(sorted, decimal.Decimal.Cmp)
	mid := len(sorted) / 2
	if len(sorted)%2 == 1 {
		return sorted[mid]
	}
	// Div keeps 16 decimal places: far more than any price needs.
	return sorted[mid-1].Add(sorted[mid]).Div(decimal.NewFromInt(2))
}

// describeQuotes lists quotes as "kraken 87123.4, coinbase 8712340".
func describeQuotes(quotes []namedQuote) string {
	parts := make([]string, len(quotes))
	for i, q := range quotes {
		parts[i] = q.provider + " " + q.rate.String()
	}
	return strings.Join(parts, ", ")
}

// percent formats a fraction as a percentage: 0.1 → "10%".
func percent(fraction decimal.Decimal) string {
	return fmt.Sprintf("%s%%", fraction.Mul(decimal.NewFromInt(100)).String())
}
