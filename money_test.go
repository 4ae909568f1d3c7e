package kassa

import (
	"encoding/json"
	"errors"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// decimalOf parses s or fails the test binary: test tables only.
func decimalOf(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// ratOf is d as an exact fraction, the reference of the money tests.
func ratOf(d decimal.Decimal) *big.Rat { return d.Rat() }

func TestSatsMSat(t *testing.T) {
	if got := Sats(21).MSat(); got != 21_000 {
		t.Errorf("Sats(21).MSat() = %d, want 21000", got)
	}
	for _, tc := range []struct {
		msat MSat
		want Sats
	}{{0, 0}, {999, 0}, {1000, 1}, {1999, 1}, {2000, 2}, {123_456_789, 123_456}} {
		if got := tc.msat.Sats(); got != tc.want {
			t.Errorf("MSat(%d).Sats() = %d, want %d (rounded down)", tc.msat, got, tc.want)
		}
	}
	if MaxSats != 2_100_000_000_000_000 {
		t.Errorf("MaxSats = %d", MaxSats)
	}
}

func TestToSats(t *testing.T) {
	for _, tc := range []struct {
		name     string
		amount   string
		currency Currency
		rate     string
		want     Sats
		code     string // error code; "" for none
	}{
		{"sats as given", "1000", SATS, "0", 1000, ""},
		{"a fraction of a satoshi rounds up", "1000.1", SATS, "0", 1001, ""},
		{"sats ignore the rate", "5", SATS, "87000", 5, ""},
		{"one bitcoin", "1", BTC, "0", 100_000_000, ""},
		{"btc with 8 decimals", "0.00000001", BTC, "0", 1, ""},
		{"btc with 8 decimals, larger", "0.12345678", BTC, "0", 12_345_678, ""},
		{"btc below one satoshi rounds up", "0.000000001", BTC, "0", 1, ""},
		{"btc beyond 8 decimals rounds up", "0.123456781", BTC, "0", 12_345_679, ""},
		{"every bitcoin", "21000000", BTC, "0", MaxSats, ""},
		{"more than every bitcoin", "21000000.00000001", BTC, "0", 0, Invalid},
		{"more sats than exist", "2100000000000001", SATS, "0", 0, Invalid},
		{"fiat exact division", "87", EUR, "87000", 100_000, ""},
		{"fiat exact division, cents", "0.01", USD, "100000", 10, ""},
		{"fiat with a remainder", "1", EUR, "87000", 1150, ""}, // 1149.43
		// 0.85 × 10⁸ = 977 × 87000 + 1000: the smallest remainder a
		// cent amount can leave at this rate.
		{"fiat smallest remainder, integer rate", "0.85", EUR, "87000", 978, ""},
		// 7569 × 10⁸ = 8699999 × 87000.01 + 0.01: the smallest
		// remainder of a rate with two decimals.
		{"fiat smallest remainder, decimal rate", "7569", EUR, "87000.01", 8_700_000, ""},
		{"fiat exact with a decimal rate", "870000.1", EUR, "87000.01", 1_000_000_000, ""},
		{"jpy without decimals", "100", JPY, "15000000", 667, ""}, // 666.67
		{"jpy exact", "3", JPY, "15000000", 20, ""},
		{"jpy one yen", "1", JPY, "15000000", 7, ""}, // 6.67
		{"fiat above 21 million bitcoin", "1000000000000000", USD, "1", 0, Invalid},
		{"fiat at exactly 21 million bitcoin", "21000000", USD, "1", MaxSats, ""},
		{"no rate", "10", EUR, "0", 0, Unavailable},
		{"negative rate", "10", EUR, "-87000", 0, Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ToSats(decimalOf(tc.amount), tc.currency, decimalOf(tc.rate))
			if tc.code != "" {
				if err == nil || ErrorCode(err) != tc.code {
					t.Fatalf("ToSats(%s %s at %s) = %d, %v; want a %s error", tc.amount, tc.currency, tc.rate, got, err, tc.code)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ToSats(%s %s at %s) = %d, %v; want %d", tc.amount, tc.currency, tc.rate, got, err, tc.want)
			}
		})
	}
}

// TestToSatsProperty checks, over a seeded stream of random decimal
// amounts and rates, that ToSats is the ceiling of the exact value: never
// below it and less than one satoshi above it.
func TestToSatsProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x6b617373, 1))
	satsPerBTC := big.NewRat(SatsPerBTC, 1)
	checked := 0
	for range 20_000 {
		c := Currencies[rng.IntN(len(Currencies))]
		// Amounts with up to two more decimals than the currency has, to
		// exercise the rounding of amounts that validation would refuse.
		places := c.Decimals() + int32(rng.IntN(3))
		amount := decimal.New(rng.Int64N(10_000_000_000)+1, -places)
		// Rates of 1 to 100 million units per bitcoin with up to 8
		// decimals.
		rate := decimal.New(rng.Int64N(100_000_000)+1, 0).Add(decimal.New(rng.Int64N(100_000_000), -8)).Truncate(int32(rng.IntN(9)))

		got, err := ToSats(amount, c, rate)
		exact := ratOf(amount)
		switch c {
		case SATS:
		case BTC:
			exact.Mul(exact, satsPerBTC)
		default:
			exact.Mul(exact, satsPerBTC)
			exact.Quo(exact, ratOf(rate))
		}
		if exact.Cmp(new(big.Rat).SetInt64(int64(MaxSats))) > 0 {
			if ErrorCode(err) != Invalid {
				t.Fatalf("ToSats(%s %s at %s) = %d, %v; want Invalid above 21 million bitcoin", amount, c, rate, got, err)
			}
			continue
		}
		if err != nil {
			// The ceiling may pass MaxSats by less than a satoshi.
			if ErrorCode(err) == Invalid && new(big.Rat).Add(exact, big.NewRat(1, 1)).Cmp(new(big.Rat).SetInt64(int64(MaxSats))) > 0 {
				continue
			}
			t.Fatalf("ToSats(%s %s at %s): %v", amount, c, rate, err)
		}
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(got)), exact)
		if diff.Sign() < 0 || diff.Cmp(big.NewRat(1, 1)) >= 0 {
			t.Fatalf("ToSats(%s %s at %s) = %d, exact %s: off by %s", amount, c, rate, got, exact.FloatString(10), diff.FloatString(10))
		}
		checked++
	}
	if checked < 15_000 {
		t.Errorf("only %d of 20000 cases checked", checked)
	}
}

func TestFiatValue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		sats     Sats
		currency Currency
		rate     string
		want     string
	}{
		{"exact", 100_000, EUR, "87000", "87"},
		{"cents", 1_000, EUR, "87000", "0.87"},
		{"below half a cent", 1, EUR, "87000", "0"},
		{"exactly half a cent rounds up", 5, USD, "100000", "0.01"},
		{"just below half a cent rounds down", 4, USD, "100000", "0"},
		{"half a cent with a decimal rate", 50, USD, "10000.01", "0.01"}, // 0.0050000050
		{"jpy whole yen", 100, JPY, "15000000", "15"},
		{"jpy half a yen rounds up", 10, JPY, "15000000", "2"},        // 1.5
		{"jpy below half a yen rounds down", 3, JPY, "15000000", "0"}, // 0.45
		{"btc exact", 1, BTC, "0", "0.00000001"},
		{"btc whole", 250_000_000, BTC, "0", "2.5"},
		{"sats exact", 1234, SATS, "0", "1234"},
		{"zero", 0, EUR, "87000", "0"},
		// 1 sat × 499999.999999999 / 10⁸ = 0.00499999999999999, just
		// below half a cent: a rounding to 16 places first would carry
		// it to 0.005 and then up to a cent.
		{"no double rounding", 1, EUR, "499999.999999999", "0"},
		{"no double rounding, jpy", 1, JPY, "49999999.9999999999", "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := FiatValue(tc.sats, tc.currency, decimalOf(tc.rate))
			if !got.Equal(decimalOf(tc.want)) {
				t.Fatalf("FiatValue(%d, %s, %s) = %s, want %s", tc.sats, tc.currency, tc.rate, got, tc.want)
			}
		})
	}
}

// TestFiatValueProperty compares FiatValue with the exact value rounded
// half up to the currency's minor unit, over a seeded stream of amounts
// and rates with up to 12 decimals.
func TestFiatValueProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x6b617373, 2))
	for range 20_000 {
		c := FiatCurrencies[rng.IntN(len(FiatCurrencies))]
		s := Sats(rng.Int64N(int64(MaxSats)) + 1)
		if rng.IntN(2) == 0 {
			s = Sats(rng.Int64N(10_000) + 1)
		}
		rate := decimal.New(rng.Int64N(100_000_000)+1, 0).Add(decimal.New(rng.Int64N(1_000_000_000_000), -12)).Truncate(int32(rng.IntN(13)))
		got := FiatValue(s, c, rate)

		exact := new(big.Rat).Mul(big.NewRat(int64(s), SatsPerBTC), ratOf(rate))
		if want := roundHalfUp(exact, c.Decimals()); ratOf(got).Cmp(want) != 0 {
			t.Fatalf("FiatValue(%d, %s, %s) = %s, want %s (exact %s)", s, c, rate, got, want.FloatString(int(c.Decimals())), exact.FloatString(20))
		}
		if got.Exponent() < -c.Decimals() && !got.Equal(got.Round(c.Decimals())) {
			t.Fatalf("FiatValue(%d, %s, %s) = %s has more decimals than %s", s, c, rate, got, c)
		}
	}
}

// roundHalfUp rounds a non-negative x half up to places decimals.
func roundHalfUp(x *big.Rat, places int32) *big.Rat {
	scale := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(places)), nil)
	scaled := new(big.Rat).Mul(x, new(big.Rat).SetInt(scale))
	scaled.Add(scaled, big.NewRat(1, 2))
	floor := new(big.Int).Quo(scaled.Num(), scaled.Denom())
	return new(big.Rat).SetFrac(floor, scale)
}

func TestPercentOf(t *testing.T) {
	for _, tc := range []struct {
		sats    Sats
		percent string
		want    Sats
	}{
		{150, "1", 2}, // 1.5
		{100, "1", 1},
		{150, "0", 0},
		{1000, "0.5", 5},
		{1001, "0.5", 6}, // 5.005
		{1, "0.5", 1},    // 0.005
		{10_000, "0.25", 25},
		{10_001, "0.25", 26}, // 25.0025
		{150, "100", 150},
		{150, "-1", 0},
		{0, "1", 0},
		{-150, "1", 0},
		{MaxSats, "1", 21_000_000_000_000},
		// The exact fee is 10⁻¹⁹ sat: still more than zero, so one
		// satoshi, however many decimals the percentage has.
		{1, "0.00000000000000001", 1},
		{100, "0.0000000000000000001", 1},
	} {
		if got := PercentOf(tc.sats, decimalOf(tc.percent)); got != tc.want {
			t.Errorf("PercentOf(%d, %s%%) = %d, want %d", tc.sats, tc.percent, got, tc.want)
		}
	}
}

// TestPercentOfProperty checks that the fee is the ceiling of the exact
// percentage.
func TestPercentOfProperty(t *testing.T) {
	rng := rand.New(rand.NewPCG(0x6b617373, 3))
	for range 20_000 {
		s := Sats(rng.Int64N(int64(MaxSats)) + 1)
		if rng.IntN(2) == 0 {
			s = Sats(rng.Int64N(1000) + 1)
		}
		percent := decimal.New(rng.Int64N(100_000_000_000)+1, -int32(rng.IntN(20)))
		if percent.GreaterThan(decHundred) {
			percent = percent.Mod(decHundred)
		}
		got := PercentOf(s, percent)
		exact := new(big.Rat).Mul(big.NewRat(int64(s), 100), ratOf(percent))
		diff := new(big.Rat).Sub(new(big.Rat).SetInt64(int64(got)), exact)
		if diff.Sign() < 0 || diff.Cmp(big.NewRat(1, 1)) >= 0 {
			t.Fatalf("PercentOf(%d, %s%%) = %d, exact %s", s, percent, got, exact.FloatString(20))
		}
	}
}

func TestCovers(t *testing.T) {
	for _, tc := range []struct {
		amount, paid Sats
		tolerance    string
		want         bool
	}{
		{10_000, 10_000, "0", true},
		{10_000, 10_001, "0", true},
		{10_000, 9_999, "0", false},
		{10_000, 0, "0", false},
		// 0.25 % of 10 000 is 25: a shortfall of exactly 25 settles.
		{10_000, 9_975, "0.25", true},
		{10_000, 9_974, "0.25", false},
		{10_000, 9_976, "0.25", true},
		// 1.5 % of 333 is 4.995: 4 short settles, 5 does not.
		{333, 329, "1.5", true},
		{333, 328, "1.5", false},
		// 0.1 % of 1 000 000 is exactly 1000.
		{1_000_000, 999_000, "0.1", true},
		{1_000_000, 998_999, "0.1", false},
		{10_000, 1, "100", true},
		{10_000, 0, "100", false},
		{10_000, -5, "100", false},
		{10_000, 9_999, "-1", false},
		// A top-up invoice takes any payment, and nothing is not one.
		{0, 1, "0", true},
		{0, 1_000_000, "0", true},
		{0, 0, "0", false},
		{0, 0, "100", false},
	} {
		if got := Covers(tc.amount, tc.paid, decimalOf(tc.tolerance)); got != tc.want {
			t.Errorf("Covers(amount %d, paid %d, tolerance %s%%) = %t, want %t", tc.amount, tc.paid, tc.tolerance, got, tc.want)
		}
	}
}

func TestParseAmount(t *testing.T) {
	for _, tc := range []struct {
		raw     string
		want    string
		missing bool // errMissingAmount rather than errBadAmount
		bad     bool
	}{
		{raw: `12.5`, want: "12.5"},
		{raw: `"12.50"`, want: "12.50"},
		{raw: `" 12.50 "`, want: "12.5"},
		{raw: `  12.5  `, want: "12.5"},
		{raw: `12`, want: "12"},
		{raw: `"12"`, want: "12"},
		{raw: `0`, want: "0"},
		{raw: `-5`, want: "-5"}, // a sign is the validator's business
		{raw: `"+5"`, want: "5"},
		{raw: `1e2`, want: "100"},
		{raw: `"1e2"`, want: "100"},
		{raw: `1.5E-2`, want: "0.015"},
		{raw: `"\u0031\u0032"`, want: "12"},
		// Never through float64: 0.1 + 0.2 as JavaScript prints it is
		// kept digit for digit.
		{raw: `0.30000000000000004`, want: "0.30000000000000004"},
		{raw: `"0.30000000000000004"`, want: "0.30000000000000004"},
		{raw: `123456789.123456789`, want: "123456789.123456789"},
		// float64 would read this as 1e15.
		{raw: `999999999999999.99`, want: "999999999999999.99"},
		{raw: `"999999999999999.99"`, want: "999999999999999.99"},
		{raw: `1000000000000000`, want: "1000000000000000"},
		{raw: `-1000000000000000`, want: "-1000000000000000"},
		{raw: ``, missing: true},
		{raw: `   `, missing: true},
		{raw: `null`, missing: true},
		{raw: ` null `, missing: true},
		{raw: `""`, bad: true},
		{raw: `"   "`, bad: true},
		{raw: `"null"`, bad: true},
		{raw: `"abc"`, bad: true},
		{raw: `"1,5"`, bad: true},
		{raw: `"1 000"`, bad: true},
		{raw: `"12.5.1"`, bad: true},
		{raw: `"0x10"`, bad: true},
		{raw: `"NaN"`, bad: true},
		{raw: `"Infinity"`, bad: true},
		{raw: `"€12"`, bad: true},
		{raw: `"١٢"`, bad: true}, // Arabic-Indic digits
		{raw: `"−5"`, bad: true}, // U+2212 MINUS SIGN
		{raw: `"e5"`, bad: true},
		{raw: `"1e"`, bad: true},
		{raw: `"."`, bad: true},
		{raw: `"-"`, bad: true},
		{raw: `true`, bad: true},
		{raw: `[12]`, bad: true},
		{raw: `{"amount":12}`, bad: true},
		{raw: `"12`, bad: true},
		{raw: `"`, bad: true},
		{raw: "\"\t12\"", bad: true}, // a raw tab: not a JSON string
		{raw: `"1"2"`, bad: true},
		{raw: `"1\u00202"`, bad: true},
		{raw: `"\u0020 12 "`, want: "12"},
		{raw: `1000000000000001`, bad: true},
		{raw: `1000000000000000.01`, bad: true},
		{raw: `1e16`, bad: true},
		{raw: `"1e400"`, bad: true},
		// Short with an exponent, but longer than 40 characters in full.
		{raw: `1e-39`, bad: true},
		{raw: `"1e-9999"`, bad: true},
		{raw: `1e-38`, want: "0.00000000000000000000000000000000000001"},
		{raw: `-1e16`, bad: true},
		{raw: `1` + strings.Repeat("0", 40), bad: true},
		{raw: `0.` + strings.Repeat("0", 38) + `1`, bad: true}, // 41 characters
	} {
		got, err := ParseAmount(json.RawMessage(tc.raw))
		switch {
		case tc.missing:
			if !errors.Is(err, errMissingAmount) {
				t.Errorf("ParseAmount(%s) = %s, %v; want %v", tc.raw, got, err, errMissingAmount)
			}
		case tc.bad:
			if !errors.Is(err, errBadAmount) || ErrorCode(err) != Invalid {
				t.Errorf("ParseAmount(%s) = %s, %v; want %v", tc.raw, got, err, errBadAmount)
			}
		default:
			if err != nil || !got.Equal(decimalOf(tc.want)) {
				t.Errorf("ParseAmount(%s) = %s, %v; want %s", tc.raw, got, err, tc.want)
			}
		}
	}
}

// FuzzParseAmount checks that ParseAmount never panics, never accepts
// more than the largest fiat amount, and that whatever it accepts it
// accepts again, as a number or as a string, from its own String().
func FuzzParseAmount(f *testing.F) {
	for _, seed := range []string{
		`12.5`, `"12.50"`, `1e2`, `"1e2"`, `null`, `""`, `"abc"`, `"1,5"`,
		`0.30000000000000004`, `1e16`, `-0`, `"-0.0"`, `.5`, `"5."`, `"+.5"`,
		`1e-39`, `"1e-9999"`, `0e9999`, `"1E+15"`, `"\u0031"`, `"12`, `[1]`,
		`1000000000000000`, `-999999999999999.99999999999999999999999`,
	} {
		f.Add([]byte(seed))
	}
	maxAmount := decimal.New(1, 15)
	f.Fuzz(func(t *testing.T, raw []byte) {
		d, err := ParseAmount(raw)
		if err != nil {
			if ErrorCode(err) != Invalid {
				t.Fatalf("ParseAmount(%q): error %v is not Invalid", raw, err)
			}
			return
		}
		if d.Abs().GreaterThan(maxAmount) {
			t.Fatalf("ParseAmount(%q) = %s, more than 10¹⁵", raw, d)
		}
		s := d.String()
		for _, again := range []string{s, strconv.Quote(s)} {
			d2, err := ParseAmount(json.RawMessage(again))
			if err != nil || !d2.Equal(d) {
				t.Fatalf("ParseAmount(%.60q) = %.60s, but ParseAmount(%.60s) = %.60s, %v", raw, s, again, d2, err)
			}
		}
	})
}
