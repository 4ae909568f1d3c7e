package kassa

import (
	"fmt"
	"slices"
	"strings"

	isocurrency "github.com/bojanz/currency"
)

// Currency is an ISO 4217 code, or BTC or SATS.
type Currency string

// A few currencies by name, for defaults and tests. Any ISO 4217 fiat
// currency is a Currency (FiatCurrencies).
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

// notFiat are the ISO 4217 codes that name no money a shop prices in:
// fund codes (units of account beside a currency) and the Arab
// accounting dinar. Precious metals, XDR and the test codes are not in
// the table at all.
var notFiat = map[string]bool{
	"BOV": true, "CHE": true, "CHW": true, "CLF": true, "COU": true,
	"MXV": true, "USN": true, "UYI": true, "UYW": true, "XAD": true,
}

// FiatCurrencies lists every ISO 4217 fiat currency Kassa knows, sorted
// by code: the active codes of the ISO 4217 table in
// github.com/bojanz/currency (docs/decisions.md, "Exchange rates and
// currencies") without fund codes. Which of them a server accepts depends on its rate
// providers (Rates.Currencies).
var FiatCurrencies = func() []Currency {
	var out []Currency
	for _, code := range isocurrency.GetCurrencyCodes() {
		if !notFiat[code] {
			out = append(out, Currency(code))
		}
	}
	slices.Sort(out)
	return out
}()

// Currencies lists every currency Kassa knows: the fiat ones, then BTC
// and SATS.
var Currencies = append(slices.Clone(FiatCurrencies), BTC, SATS)

// IsKnown reports whether c is BTC, SATS or an ISO 4217 fiat currency.
func (c Currency) IsKnown() bool {
	if c == BTC || c == SATS {
		return true
	}
	_, ok := slices.BinarySearch(FiatCurrencies, c)
	return ok
}

// ParseCurrency returns the currency named by code, in any letter case:
// BTC, SATS or any ISO 4217 fiat currency. Whether this server has a
// rate for it is the rates backend's to say (Rates.Currencies).
func ParseCurrency(code string) (Currency, error) {
	c := Currency(strings.ToUpper(strings.TrimSpace(code)))
	if c.IsKnown() {
		return c, nil
	}
	return "", Errorf(Invalid, "unknown currency %q: use BTC, SATS or an ISO 4217 currency code that this server quotes (GET /api/v1/stores/{storeId}/rates lists them)", code)
}

// IsFiat reports whether c needs an exchange rate.
func (c Currency) IsFiat() bool { return c != BTC && c != SATS }

// Decimals is the number of decimal places of c's smallest unit: the
// minor unit of the ISO 4217 table (2 for EUR, 0 for JPY, 3 for BHD),
// 8 for BTC and 0 for SATS.
func (c Currency) Decimals() int32 {
	switch c {
	case SATS:
		return 0
	case BTC:
		return 8
	}
	if d, ok := isocurrency.GetDigits(string(c)); ok {
		return int32(d)
	}
	return 2
}

// CheckQuoted refuses a fiat currency that r has no rate provider
// for, with an Invalid error on field that names r's sources and where
// the served list is. BTC and SATS always pass.
func CheckQuoted(r Rates, field string, c Currency) error {
	if !c.IsFiat() {
		return nil
	}
	served := r.Currencies()
	if slices.Contains(served, c) {
		return nil
	}
	return InvalidFields([]FieldError{{Field: field, Message: fmt.Sprintf(
		"currency %s is not quoted by this server's rate providers (%s); GET /api/v1/stores/{storeId}/rates lists the %d fiat currencies it serves",
		c, r.Source(), len(served))}})
}
