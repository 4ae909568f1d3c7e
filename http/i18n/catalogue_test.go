package i18n

import (
	"strings"
	"testing"
)

// TestCatalogueFiles: every catalogue is a PO file that names its
// language and its source, a machine-made one flags each entry fuzzy
// for review, and each entry's msgid is the English text of today, so a
// translator sees what changed.
func TestCatalogueFiles(t *testing.T) {
	t.Parallel()
	if len(catalogues) < 2 {
		t.Fatalf("%d catalogues embedded", len(catalogues))
	}
	en := catalogues[Default]
	for lang, c := range catalogues {
		if c.Name == "" || c.Source == "" {
			t.Errorf("%s: X-Language-Name %q, X-Source %q", lang, c.Name, c.Source)
		}
		for k, s := range c.Strings {
			if c.Machine && !c.Fuzzy[k] {
				t.Errorf("%s %s: machine-made but not flagged fuzzy", lang, k)
			}
			want, ok := en.Strings[k]
			if !ok {
				want = en.Strings[pluralBase(k)+".other"]
			}
			if c.English[k] != want {
				t.Errorf("%s %s: msgid %q, but the English text is %q", lang, k, c.English[k], want)
			}
			_ = s
		}
	}
}

func TestParsePO(t *testing.T) {
	t.Parallel()
	c, err := parsePO(`# comment
msgid ""
msgstr ""
"Language: xx\n"
"X-Source: test\n"
"X-Machine-Translated: yes\n"

#, fuzzy, c-format
msgctxt "a.b"
msgid "Pay %s"
msgstr ""
"Zahle "
"\"%s\"\n"
`)
	if err != nil {
		t.Fatal(err)
	}
	if c.Lang != "xx" || !c.Machine || c.Strings["a.b"] != "Zahle \"%s\"\n" || !c.Fuzzy["a.b"] || c.English["a.b"] != "Pay %s" {
		t.Errorf("parsed %+v", c)
	}
	for _, bad := range []string{
		"msgid \"x\"\nmsgstr \"y\"\n", // no header, no key
		"msgid \"\"\nmsgstr \"Language: xx\\n\"\n\nmsgctxt \"k\"\nmsgid \"a\"\nmsgid_plural \"b\"\n", // gettext plurals
		"msgid \"\"\nmsgstr \"Language: xx\\n\"\n\nmsgctxt \"k\"\nmsgid \"a\"\nmsgstr \"b\"\n\nmsgctxt \"k\"\nmsgid \"a\"\nmsgstr \"c\"\n",
	} {
		if _, err := parsePO(bad); err == nil {
			t.Errorf("parsePO accepted %q", bad)
		}
	}
	if !strings.Contains(catalogues["de"].Source, "Kassa") {
		t.Errorf("de source %q", catalogues["de"].Source)
	}
}
