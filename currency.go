package kassa

import "strings"

// Currency is an ISO 4217 code, or BTC or SATS.
type Currency string

// The currencies of the interface.
const (
	EUR  Currency = "EUR"
	USD  Currency = "USD"
	CAD  Currency = "CAD"
	JPY  Currency = "JPY"
	GBP  Currency = "GBP"
	CHF  Currency = "CHF"
	BTC  Currency = "BTC"
	SATS Currency = "SATS"
)

// Currencies lists every currency the service accepts, fiat first.
var Currencies = []Currency{EUR, USD, CAD, JPY, GBP, CHF, BTC, SATS}

// FiatCurrencies lists the currencies that need an exchange rate.
var FiatCurrencies = []Currency{EUR, USD, CAD, JPY, GBP, CHF}

// ParseCurrency returns the currency named by code, in any letter case.
func ParseCurrency(code string) (Currency, error) {
	c := Currency(strings.ToUpper(strings.TrimSpace(code)))
	for _, known := range Currencies {
		if c == known {
			return c, nil
		}
	}
	return "", Errorf(Invalid, "unknown currency %q: use one of EUR, USD, CAD, JPY, GBP, CHF, BTC, SATS", code)
}

// IsFiat reports whether c needs an exchange rate.
func (c Currency) IsFiat() bool { return c != BTC && c != SATS }

// Decimals is the number of decimal places of c's smallest unit.
func (c Currency) Decimals() int32 {
	switch c {
	case JPY, SATS:
		return 0
	case BTC:
		return 8
	}
	return 2
}
