package i18n

import (
	"slices"
	"strings"

	"golang.org/x/text/feature/plural"
	"golang.org/x/text/language"
)

// The language rules that come from CLDR data through libraries, not
// from tables here: plural categories (golang.org/x/text/feature/plural),
// writing direction (the language's likely script, golang.org/x/text/
// language), numbers and money (github.com/bojanz/currency, format.go)
// and dates (github.com/go-playground/locales, format.go).

// formNames are CLDR's names of the plural categories, the suffixes of
// a plural string's keys.
var formNames = map[plural.Form]string{
	plural.Zero: "zero", plural.One: "one", plural.Two: "two",
	plural.Few: "few", plural.Many: "many", plural.Other: "other",
}

// pluralForm is the CLDR plural category of the whole number n in lang.
func pluralForm(lang string, n int64) string {
	if n < 0 {
		n = -n
	}
	// MatchPlural takes an int; counts beyond it behave as their last
	// six digits do for every CLDR rule.
	return formNames[plural.Cardinal.MatchPlural(language.Make(lang), int(n%1_000_000), 0, 0, 0, 0)]
}

// PluralCategories returns the CLDR plural categories lang uses for
// whole numbers, the forms a plural string needs in its catalogue
// ("one", "few", "many", "other" for Polish; "other" alone for
// Japanese).
func PluralCategories(lang string) []string {
	var out []string
	for n := int64(0); n <= 1000; n++ {
		if f := pluralForm(lang, n); !slices.Contains(out, f) {
			out = append(out, f)
		}
	}
	return out
}

// rtlScripts are the ISO 15924 scripts written right to left that a
// language's likely script can be.
var rtlScripts = []string{"Arab", "Hebr", "Thaa", "Syrc", "Nkoo", "Adlm", "Rohg", "Mand", "Samr"}

// Dir returns lang's writing direction, "rtl" or "ltr", for an HTML
// dir attribute: right to left when its likely script is.
func Dir(lang string) string {
	s, _ := language.Make(lang).Script()
	if slices.Contains(rtlScripts, s.String()) {
		return "rtl"
	}
	return "ltr"
}

// matcher matches a requested language to a supported one by CLDR's
// rules of closeness ("no" to nb, "pt-BR" to pt).
var matcher = func() language.Matcher {
	tags := make([]language.Tag, len(Languages))
	for i, l := range Languages {
		tags[i] = language.Make(l)
	}
	return language.NewMatcher(tags)
}()

// supportedBase returns the supported language that tag asks for: its
// base language when there is a catalogue for it, else the one CLDR
// deems the same language ("no" and nb, "iw" and he), else "". A
// language CLDR deems merely understood by its speakers (Swahili's
// English) is not taken: the next one the reader listed may be theirs.
func supportedBase(tag string) string {
	base, _, _ := strings.Cut(strings.ToLower(tag), "-")
	if Supported(base) {
		return base
	}
	t, err := language.Parse(tag)
	if err != nil {
		return ""
	}
	m, i, conf := matcher.Match(t)
	tb, _ := t.Base()
	mb, _ := m.Base()
	if conf == language.Exact || (conf == language.High && tb == mb) {
		return Languages[i]
	}
	return ""
}
