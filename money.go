package kassa

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"
)

// Sats is an amount of bitcoin in satoshis.
type Sats int64

// MSat is an amount of bitcoin in millisatoshis, the unit of Lightning.
type MSat int64

// SatsPerBTC is the number of satoshis in one bitcoin.
const SatsPerBTC = 100_000_000

// MaxSats is the largest amount any invoice may ask for: every bitcoin
// there will ever be.
const MaxSats Sats = 21_000_000 * SatsPerBTC

// MSat returns s in millisatoshis.
func (s Sats) MSat() MSat { return MSat(s) * 1000 }

// Sats returns m in whole satoshis, rounded down: a fraction of a satoshi
// cannot be spent on-chain.
func (m MSat) Sats() Sats { return Sats(m / 1000) }

var (
	decSatsPerBTC = decimal.NewFromInt(SatsPerBTC)
	decHundred    = decimal.NewFromInt(100)
	maxFiatAmount = decimal.New(1, 15) // one quadrillion units of any fiat currency
)

// ToSats converts amount, given in currency c, to satoshis. rate is the price
// of one bitcoin in c and is ignored for BTC and SATS. The result is rounded
// up to a whole satoshi, so the merchant never receives less than asked.
func ToSats(amount decimal.Decimal, c Currency, rate decimal.Decimal) (Sats, error) {
	var sats decimal.Decimal
	switch {
	case c == SATS:
		sats = amount
	case c == BTC:
		sats = amount.Mul(decSatsPerBTC)
	default:
		if !rate.IsPositive() {
			return 0, Errorf(Unavailable, "no exchange rate for %s", c)
		}
		// Exact ceiling division: quotient plus one when anything remains.
		q, r := amount.Mul(decSatsPerBTC).QuoRem(rate, 0)
		if r.IsPositive() {
			q = q.Add(decimal.NewFromInt(1))
		}
		sats = q
	}
	sats = sats.RoundUp(0)
	if sats.GreaterThan(decimal.NewFromInt(int64(MaxSats))) {
		return 0, Errorf(Invalid, "amount is more than 21 million bitcoin")
	}
	return Sats(sats.IntPart()), nil
}

// FiatValue is the value of s in currency c at rate (the price of one
// bitcoin in c), rounded half up to c's minor unit. For BTC and SATS the
// value is exact.
func FiatValue(s Sats, c Currency, rate decimal.Decimal) decimal.Decimal {
	amount := decimal.NewFromInt(int64(s))
	switch c {
	case SATS:
		return amount
	case BTC:
		return amount.Div(decSatsPerBTC).Round(8)
	}
	// Shift divides by 10⁸ exactly; Div would first round to 16 places
	// and could carry a value just below half a minor unit up to it.
	return amount.Mul(rate).Shift(-8).Round(c.Decimals())
}

// PercentOf returns percent percent of s, rounded up to a whole satoshi.
// It is how the service fee is computed.
func PercentOf(s Sats, percent decimal.Decimal) Sats {
	if !percent.IsPositive() || s <= 0 {
		return 0
	}
	// Shift divides by 100 exactly: Div would round to 16 places first
	// and turn a fee of a tiny fraction of a satoshi into none.
	return Sats(decimal.NewFromInt(int64(s)).Mul(percent).Shift(-2).RoundUp(0).IntPart())
}

// Covers reports whether paid settles an invoice of amount sats when the
// store accepts a shortfall of up to tolerance percent of the amount. The
// limit itself is accepted: a shortfall of exactly tolerance percent
// settles. An amount of zero (a top-up invoice) is covered by any payment.
func Covers(amount, paid Sats, tolerance decimal.Decimal) bool {
	if amount == 0 {
		return paid > 0
	}
	if paid >= amount {
		return true
	}
	if paid <= 0 || !tolerance.IsPositive() {
		return false
	}
	shortfall := decimal.NewFromInt(int64(amount - paid)).Mul(decHundred)
	return shortfall.LessThanOrEqual(decimal.NewFromInt(int64(amount)).Mul(tolerance))
}

// plainQuotedAmount reports whether raw is a JSON string of only the
// characters an amount may have, and spaces: its text between the quotes
// is then its value.
func plainQuotedAmount(raw []byte) bool {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return false
	}
	for _, c := range raw[1 : len(raw)-1] {
		if !strings.ContainsRune("0123456789.-+eE ", rune(c)) {
			return false
		}
	}
	return true
}

// ParseAmount reads a JSON amount given either as a number or as a decimal
// string ("12.50", which existing shop plugins send). The digits are parsed
// straight into a decimal, never through float64.
func ParseAmount(raw json.RawMessage) (decimal.Decimal, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return decimal.Zero, errMissingAmount
	}
	text := string(raw)
	if plainQuotedAmount(raw) {
		// What json.Unmarshal decodes it to, without its allocations:
		// nothing in it is escaped.
		text = strings.TrimSpace(text[1 : len(text)-1])
	} else if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return decimal.Zero, errBadAmount
		}
		text = strings.TrimSpace(s)
	}
	if text == "" || len(text) > maxAmountChars || strings.ContainsAny(text, "eE") && len(text) > 30 {
		return decimal.Zero, errBadAmount
	}
	for _, r := range text {
		if !strings.ContainsRune("0123456789.-+eE", r) {
			return decimal.Zero, errBadAmount
		}
	}
	d, err := decimal.NewFromString(text)
	if err != nil {
		return decimal.Zero, errBadAmount
	}
	if d.Abs().GreaterThan(maxFiatAmount) {
		return decimal.Zero, fmt.Errorf("%w: too large", errBadAmount)
	}
	// An exponent writes in a few characters what takes thousands in
	// full ("1e-9999"). The full form must fit as well, so that every
	// amount accepted here is accepted again from its String().
	if len(d.String()) > maxAmountChars {
		return decimal.Zero, errBadAmount
	}
	return d, nil
}

// maxAmountChars is the longest amount ParseAmount accepts, in
// characters, as given and written out in full.
const maxAmountChars = 40

var (
	errMissingAmount = Errorf(Invalid, "amount is missing")
	errBadAmount     = Errorf(Invalid, "amount must be a decimal number")
)
