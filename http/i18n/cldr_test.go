package i18n

import (
	"slices"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// required are the languages the customer pages must speak (issue 41).
var required = []string{"en", "de", "ar", "fa", "he", "zh", "ja", "ko", "hi", "es", "fr", "pt", "it", "nl", "pl", "tr", "ru", "uk", "id", "vi", "th", "sv", "da", "nb", "fi", "cs", "el", "hu", "ro", "ca"}

// TestLanguagesServed counts the languages of the customer pages.
func TestLanguagesServed(t *testing.T) {
	t.Parallel()
	for _, l := range required {
		if !Supported(l) {
			t.Errorf("no catalogue for %s", l)
		}
	}
	if len(Languages) < 30 {
		t.Errorf("%d languages, want at least 30", len(Languages))
	}
	t.Logf("languages served: %d %v", len(Languages), Languages)
}

// TestPluralCLDR: a plural string has exactly the CLDR categories its
// language uses for whole numbers, and Plural picks them by CLDR rule.
func TestPluralCLDR(t *testing.T) {
	t.Parallel()
	for _, lang := range Languages {
		var have []string
		for k := range catalogs[lang] {
			if pluralBase(k) == "state.seen.text" {
				have = append(have, k[len("state.seen.text."):])
			}
		}
		slices.Sort(have)
		want := PluralCategories(lang)
		slices.Sort(want)
		if !slices.Equal(have, want) {
			t.Errorf("%s: state.seen.text has forms %v, CLDR's are %v", lang, have, want)
		}
	}
	for _, tt := range []struct {
		lang string
		n    int64
		form string
	}{{"en", 1, "one"}, {"en", 2, "other"}, {"pl", 2, "few"}, {"pl", 5, "many"}, {"ru", 21, "one"}, {"ru", 3, "few"}, {"ja", 1, "other"}, {"ar", 2, "two"}, {"fr", 0, "one"}, {"cs", 3, "few"}} {
		if !Supported(tt.lang) {
			t.Errorf("no %s", tt.lang)
			continue
		}
		if got, want := Plural(tt.lang, "state.seen.text", tt.n), T(tt.lang, "state.seen.text."+tt.form, tt.n); got != want {
			t.Errorf("Plural(%s, %d) = %q, want the %s form %q", tt.lang, tt.n, got, tt.form, want)
		}
	}
}

// TestNumbersCLDR: numbers and money follow each language's CLDR
// symbols, grouping and digits.
func TestNumbersCLDR(t *testing.T) {
	t.Parallel()
	d := decimal.RequireFromString
	for _, tt := range []struct{ lang, got, want string }{
		{"fr", Number("fr", d("1234567.5"), 2), "1\u202f234\u202f567,50"},
		{"hi", Number("hi", d("1234567"), 0), "12,34,567"},
		{"fa", Number("fa", d("1234.5"), 2), "\u200e۱٬۲۳۴٫۵۰"},
		{"he", Number("he", d("0.5"), 2), "\u200f0.50"},
		{"pt", Money("pt", d("1234.5"), kassa.EUR), "€\u00a01.234,50"},
		{"ja", Money("ja", d("1500"), kassa.JPY), "￥1,500"},
		{"ru", BTC("ru", 14368), "0,00014368 BTC"},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %q, want %q", tt.lang, tt.got, tt.want)
		}
	}
}

// TestTimeCLDR: a time is the language's CLDR medium date and short
// time (English keeps ISO 8601: docs/decisions.md, "Languages:
// catalogues and CLDR").
func TestTimeCLDR(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 25, 21, 44, 0, 0, time.UTC)
	for lang, want := range map[string]string{
		"fr": "25 nov. 2026, 21:44 UTC",
		"ja": "2026/11/25, 21:44 UTC",
		"de": "25.11.2026, 21:44 UTC",
		"en": "2026-11-25 21:44 UTC",
	} {
		if got := Time(lang, at); got != want {
			t.Errorf("Time(%s) = %q, want %q", lang, got, want)
		}
	}
	for _, lang := range Languages {
		if Time(lang, at) == Time("en", at) && lang != "en" {
			t.Errorf("%s: no CLDR date format", lang)
		}
	}
}

func TestDir(t *testing.T) {
	t.Parallel()
	for lang, want := range map[string]string{"ar": "rtl", "fa": "rtl", "he": "rtl", "en": "ltr", "ja": "ltr", "xx": "ltr"} {
		if got := Dir(lang); got != want {
			t.Errorf("Dir(%s) = %s, want %s", lang, got, want)
		}
	}
}

func TestNegotiateRegions(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{"no": "nb", "nb-NO": "nb", "pt-BR,pt;q=0.9": "pt", "zh-CN": "zh", "he-IL": "he", "fa-IR": "fa", "sw, am": "en"} {
		if got := Negotiate(header); got != want {
			t.Errorf("Negotiate(%q) = %s, want %s", header, got, want)
		}
	}
}
