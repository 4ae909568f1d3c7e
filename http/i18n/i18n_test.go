package i18n

import (
	"net/http/httptest"
	"regexp"
	"slices"
	"testing"
)

// verbs finds the fmt verbs of a string, explicit argument indexes
// included.
var verbs = regexp.MustCompile(`%(\[\d+\])?[a-z%]`)

func TestCataloguesMatch(t *testing.T) {
	t.Parallel()
	want := Keys(Default)
	for _, lang := range Languages {
		if got := Keys(lang); !slices.Equal(got, want) {
			t.Errorf("%s has keys %v, want the English ones %v", lang, got, want)
		}
		if Name(lang) == "" {
			t.Errorf("%s has no name", lang)
		}
		for _, k := range want {
			en, other := verbs.FindAllString(catalogs[Default][k], -1), verbs.FindAllString(catalogs[lang][k], -1)
			slices.Sort(en)
			slices.Sort(other)
			if !slices.Equal(en, other) {
				t.Errorf("%s %q has placeholders %v, English %v", lang, k, other, en)
			}
		}
	}
}

func TestNegotiate(t *testing.T) {
	t.Parallel()
	tests := map[string]string{
		"":                          "en",
		"de":                        "de",
		"de-CH, en;q=0.8":           "de",
		"en-US,en;q=0.9,de;q=0.8":   "en",
		"fr-FR, de;q=0.5, en;q=0.4": "de",
		"fr, it":                    "en",
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
