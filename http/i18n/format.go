package i18n

import (
	"strings"
	"time"

	isocurrency "github.com/bojanz/currency"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// The formatter of money and times of every page: the checkout, the pay
// link page, the receipt and the dashboard. Money follows the page
// language's CLDR pattern with the currency's symbol and its ISO 4217
// minor units: "€1,234.56" in English, "1.234,56 €" in German, "¥1,235"
// for yen (docs/decisions.md, "Languages: catalogues and CLDR").
// Bitcoin amounts use the same separators: "0.00014368 BTC",
// "14,368 sats" ("0,00014368 BTC", "14.368 sats" in German).

// formatters are the money formatters by language, made once: a
// Formatter is read-only after it is made.
var formatters = func() map[string]*isocurrency.Formatter {
	out := map[string]*isocurrency.Formatter{}
	for _, lang := range Languages {
		out[lang] = isocurrency.NewFormatter(isocurrency.NewLocale(lang))
	}
	return out
}()

// numberFormatters format plain numbers by language: money formatters
// that show no currency, their digits set per call.
var numberFormatters = func() map[string]isocurrency.Formatter {
	out := map[string]isocurrency.Formatter{}
	for _, lang := range Languages {
		f := isocurrency.NewFormatter(isocurrency.NewLocale(lang))
		f.CurrencyDisplay = isocurrency.DisplayNone
		out[lang] = *f
	}
	return out
}()

// Number renders d with places decimals (rounded half up) in lang's
// CLDR symbols, grouping and digits: "1,234.50" in English, "1.234,50"
// in German, "1 234,50" in French, "12,34,567" in Hindi, "۱٬۲۳۴٫۵۰" in
// Persian.
func Number(lang string, d decimal.Decimal, places int32) string {
	f := numberFormatters[pick(lang)]
	f.MinDigits, f.MaxDigits = uint8(places), uint8(places)
	a, err := isocurrency.NewAmount(d.StringFixed(places), "EUR")
	if err != nil {
		return d.StringFixed(places)
	}
	// A pattern's space and direction mark that stood by the currency
	// symbol are not part of the number.
	return strings.TrimRight(strings.TrimSpace(f.Format(a)), "\u00a0\u200e\u200f")
}

// Money renders amount in c for lang, rounded half up to c's minor
// units: "€12.50", "12,50 €", "¥1,500", "0.00014368 BTC", "14,368 sats".
func Money(lang string, amount decimal.Decimal, c kassa.Currency) string {
	lang = pick(lang)
	switch c {
	case kassa.BTC:
		return Number(lang, amount, 8) + " BTC"
	case kassa.SATS:
		return Number(lang, amount, 0) + " sats"
	}
	rounded := amount.Round(c.Decimals())
	a, err := isocurrency.NewAmount(rounded.StringFixed(c.Decimals()), string(c))
	if err != nil {
		// A code the table does not know: the number and the code.
		return Number(lang, rounded, c.Decimals()) + " " + string(c)
	}
	return formatters[lang].Format(a)
}

// Sats renders s in satoshis: "14,368 sats" ("14.368 sats").
func Sats(lang string, s kassa.Sats) string {
	return Number(pick(lang), decimal.NewFromInt(int64(s)), 0) + " sats"
}

// BTC renders s in bitcoin with eight decimals: "0.00014368 BTC"
// ("0,00014368 BTC").
func BTC(lang string, s kassa.Sats) string {
	return Number(pick(lang), decimal.New(int64(s), -8), 8) + " BTC"
}

// Time renders t in UTC with the zone named: in English ISO 8601,
// "2026-11-25 21:44 UTC"; in every other language its CLDR medium date
// and short time, "25.11.2026, 21:44 UTC" in German, "25 nov. 2026,
// 21:44 UTC" in French. Pages that know the
// reader's zone rewrite it (the checkout's <time> elements).
func Time(lang string, t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	t = t.UTC()
	lang = pick(lang)
	if loc, ok := dateLocales[lang]; ok {
		return loc.FmtDateMedium(t) + ", " + loc.FmtTimeShort(t) + " UTC"
	}
	return t.Format("2006-01-02 15:04") + " UTC"
}

// ISOTime is t in RFC 3339 UTC, for a <time datetime> attribute.
func ISOTime(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// PayLinkStatus returns the word for a pay link's status in lang. The
// status is the API's (kassa.PaymentRequestPending, Completed, Expired,
// Archived) and English uses the API's words, so the public page, the
// dashboard and the API say the same; German translates them. An
// unknown status is returned as it is.
func PayLinkStatus(lang, status string) string {
	key := "paylink.status." + status
	if s := T(pick(lang), key); s != key {
		return s
	}
	return status
}

// Method returns the name of payment method m in lang, the one the
// checkout's tabs and receipt use ("On-chain", "Lightning"); the API's
// word for on-chain, "BTC", is not shown on a page.
func Method(lang string, m kassa.PaymentMethod) string {
	switch m {
	case kassa.MethodOnchain:
		return T(pick(lang), "tab.onchain")
	case kassa.MethodLightning:
		return T(pick(lang), "tab.lightning")
	}
	return m.String()
}

// pick returns lang when there is a catalogue for it, else Default.
func pick(lang string) string {
	if Supported(lang) {
		return lang
	}
	return Default
}
