package i18n

import (
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// verbs finds the fmt verbs of a string, explicit argument indexes
// included.
var verbs = regexp.MustCompile(`%(\[\d+\])?[a-z%]`)

// sameAsEnglish are the translations allowed to equal the English text:
// names and words that are the same in that language. Key to languages
// ("*": every language).
var sameAsEnglish = map[string][]string{
	"tab.lightning":  {"*"},
	"sim.banner":     {"de", "fr"},
	"paylink.status": {"de", "nl", "id"},
	"receipt.txid":   {"fr"},
	"receipt.date":   {"fr"},
}

// TestCataloguesMatch: every catalogue has every key of the English one
// (a plural string in exactly the CLDR forms of its language), with the
// same placeholders, and no translation is the English text unless
// sameAsEnglish allows it.
func TestCataloguesMatch(t *testing.T) {
	t.Parallel()
	en := catalogs[Default]
	plurals := map[string]bool{}
	for k := range en {
		if b, ok := strings.CutSuffix(k, ".other"); ok {
			plurals[b] = true
		}
	}
	for _, lang := range Languages {
		c := catalogs[lang]
		if Name(lang) == "" {
			t.Errorf("%s has no name", lang)
		}
		want := map[string]string{} // key: its English text
		for k, s := range en {
			if !plurals[pluralBase(k)] {
				want[k] = s
			}
		}
		for b := range plurals {
			for _, f := range PluralCategories(lang) {
				want[b+"."+f] = en[b+".other"]
			}
		}
		for k := range want {
			if _, ok := c[k]; !ok {
				t.Errorf("%s: key %s missing", lang, k)
			}
		}
		for k, s := range c {
			english, ok := want[k]
			if !ok {
				t.Errorf("%s: key %s is not in the English catalogue (or not a CLDR form of %s)", lang, k, lang)
				continue
			}
			if plurals[pluralBase(k)] {
				// A plural form may say its number once or twice.
				if a, b := placeholderSet(english), placeholderSet(s); !slices.Equal(a, b) {
					t.Errorf("%s %s: placeholders %v, English %v", lang, k, b, a)
				}
			} else if a, b := placeholders(english), placeholders(s); !slices.Equal(a, b) {
				t.Errorf("%s %s: placeholders %v, English %v", lang, k, b, a)
			}
			if lang != Default && s == english && !slices.Contains(sameAsEnglish[k], "*") && !slices.Contains(sameAsEnglish[k], lang) {
				t.Errorf("%s %s: %q is the English text (translate it, or allow it in sameAsEnglish)", lang, k, s)
			}
		}
	}
}

// placeholders are the fmt verbs of s, sorted.
func placeholders(s string) []string {
	v := verbs.FindAllString(s, -1)
	slices.Sort(v)
	return v
}

// placeholderSet are the distinct fmt verbs of s, sorted.
func placeholderSet(s string) []string { return slices.Compact(placeholders(s)) }

func TestNegotiate(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                          "en",
		"de":                        "de",
		"de-CH, en;q=0.8":           "de",
		"en-US,en;q=0.9,de;q=0.8":   "en",
		"sw-KE, de;q=0.5, en;q=0.4": "de",
		"sw, am":                    "en",
		"de;q=0, en":                "en",
		"de;q=bad, en;q=0.1":        "en",
		"DE-at":                     "de",
		"en;q=0.5, de;q=0.5":        "en",
	}
	for header, want := range tests {
		if got := Negotiate(header); got != want {
			t.Errorf("Negotiate(%q) = %s, want %s", header, got, want)
		}
	}
}

func TestFromRequest(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest("GET", "/checkout/x?lang=de", nil)
	r.Header.Set("Accept-Language", "en")
	if got := FromRequest(r); got != "de" {
		t.Errorf("?lang=de over Accept-Language en gave %s", got)
	}
	r = httptest.NewRequest("GET", "/checkout/x?lang=xx", nil)
	r.Header.Set("Accept-Language", "de-DE")
	if got := FromRequest(r); got != "de" {
		t.Errorf("unknown ?lang with Accept-Language de gave %s", got)
	}
}

func TestT(t *testing.T) {
	t.Parallel()
	if got := T("de", "checkout.order", "A-1"); got != "Bestellung A-1" {
		t.Errorf("T = %q", got)
	}
	if got := T("xx", "checkout.order", "A-1"); got != "Order A-1" {
		t.Errorf("unknown language: %q, want English", got)
	}
	if got := T("en", "no.such.key"); got != "no.such.key" {
		t.Errorf("missing key: %q", got)
	}
	if got := Plural("en", "state.seen.text", 1); !regexp.MustCompile(`\(1 confirmation\)`).MatchString(got) {
		t.Errorf("Plural one: %q", got)
	}
	if got := Plural("en", "state.seen.text", 3); !regexp.MustCompile(`\(3 confirmations\)`).MatchString(got) {
		t.Errorf("Plural other: %q", got)
	}
}
