// Package i18n holds the strings of the customer pages (checkout, pay
// link page, receipt) in every language they speak, one gettext PO
// catalogue per language (catalogue.go, catalogues/*.po), and picks a
// page's language from the request: a ?lang= parameter first, then the
// Accept-Language header, else English. Pages look strings up by key
// (namespaced by page: "checkout.", "paylink.", "receipt."), so a new
// language is one more catalogue file, and a test checks that every
// catalogue has every key with the same placeholders.
//
// It is also the one formatter of money and times (format.go: Money,
// Sats, BTC, Number, Time, ISOTime) and of a pay link's status
// (PayLinkStatus) for every page that shows them: the checkout, the pay
// link page, the receipt and the dashboard.
package i18n

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// Default is the language of a request that asks for none we speak.
const Default = "en"

// catalogues are the embedded catalogues by language.
var catalogues = loadCatalogues()

// catalogs maps a language to its strings by key.
var catalogs = func() map[string]map[string]string {
	out := map[string]map[string]string{}
	for lang, c := range catalogues {
		out[lang] = c.Strings
	}
	return out
}()

// Languages are the languages there are catalogues for, Default first,
// then by code.
var Languages = func() []string {
	out := []string{Default}
	for lang := range catalogues {
		if lang != Default {
			out = append(out, lang)
		}
	}
	slices.Sort(out[1:])
	return out
}()

// Name returns lang in its own words ("Deutsch"), from its catalogue.
func Name(lang string) string {
	if c, ok := catalogues[lang]; ok {
		return c.Name
	}
	return ""
}

// Supported reports whether there is a catalogue for lang.
func Supported(lang string) bool { _, ok := catalogs[lang]; return ok }

// FromRequest picks the language of r: ?lang= when it names a supported
// language, else the first supported one of Accept-Language by quality,
// else Default.
func FromRequest(r *http.Request) string { return Choose(r) }

// Choose picks the language of a page: ?lang= when it names a
// supported language (the reader's own choice on the page), else the
// first of prefer that matches a supported one (the invoice's requested
// language, then the store's), else FromRequest's.
func Choose(r *http.Request, prefer ...string) string {
	if l := strings.ToLower(r.URL.Query().Get("lang")); Supported(l) {
		return l
	}
	for _, p := range prefer {
		if p == "" {
			continue
		}
		if l := supportedBase(p); l != "" {
			return l
		}
	}
	return Negotiate(r.Header.Get("Accept-Language"))
}

// maxAcceptLanguage bounds the header read, which the client chooses.
const maxAcceptLanguage = 512

// ChooseAmong picks a page's language among langs, which hold Default:
// ?lang= when it is one of them, else the first of prefer that is (a
// reader's earlier choice), else the one Accept-Language prefers by base
// language, else Default. It is for pages with fewer catalogues than the
// customer pages (the dashboard).
func ChooseAmong(r *http.Request, langs []string, prefer ...string) string {
	among := func(tag string) string {
		base, _, _ := strings.Cut(strings.ToLower(tag), "-")
		if slices.Contains(langs, base) {
			return base
		}
		return ""
	}
	if l := among(r.URL.Query().Get("lang")); l != "" {
		return l
	}
	for _, p := range prefer {
		if l := among(p); l != "" {
			return l
		}
	}
	return negotiate(r.Header.Get("Accept-Language"), among)
}

// Negotiate returns the supported language an Accept-Language header
// prefers ("de-CH, en;q=0.8" gives de), or Default.
func Negotiate(header string) string { return negotiate(header, supportedBase) }

// negotiate returns the language match gives for the entry of header
// with the highest quality (the earliest of equals), or Default.
func negotiate(header string, match func(tag string) string) string {
	if len(header) > maxAcceptLanguage {
		header = header[:maxAcceptLanguage]
	}
	best, bestQ := Default, 0.0
	for i, part := range strings.Split(header, ",") {
		tag, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		q := 1.0
		if v, ok := strings.CutPrefix(strings.TrimSpace(params), "q="); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil || f < 0 || f > 1 {
				continue
			}
			q = f
		}
		base := match(strings.TrimSpace(tag))
		// Earlier entries win ties: the small bonus keeps the order.
		if base != "" && q > 0 && q-float64(i)*1e-6 > bestQ {
			best, bestQ = base, q-float64(i)*1e-6
		}
	}
	return best
}

// T returns the string key in lang, formatted with args (fmt verbs), or
// in Default when lang has no such key, or the key itself when no
// catalogue has it (a bug a test catches, not a broken page).
func T(lang, key string, args ...any) string {
	s, ok := catalogs[lang][key]
	if !ok {
		if s, ok = catalogs[Default][key]; !ok {
			return key
		}
	}
	if len(args) == 0 {
		return s
	}
	return fmt.Sprintf(s, args...)
}

// Plural returns the form of key for n by lang's CLDR plural rules
// (key+".one", ".few", ..., else key+".other"), formatted with n and
// then args.
func Plural(lang, key string, n int64, args ...any) string {
	lang = pick(lang)
	k := key + "." + pluralForm(lang, n)
	if _, ok := catalogs[lang][k]; !ok {
		k = key + ".other"
	}
	return T(lang, k, append([]any{n}, args...)...)
}
