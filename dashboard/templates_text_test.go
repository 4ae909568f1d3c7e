package dashboard

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// templateExamples are the literal texts a template may show as they
// are: technical names and example values that read the same in every
// language.
var templateExamples = map[string]bool{
	"segwit (BIP84)":  true,
	"taproot (BIP86)": true,
}

var (
	templateAction = regexp.MustCompile(`(?s)\{\{.*?\}\}`)
	// readerAttr matches the attributes a reader sees or hears.
	readerAttr = regexp.MustCompile(`\s(data-confirm|aria-label|title|placeholder|alt)="((?:[^"{]|\{\{.*?\}\})*)"`)
	textNode   = regexp.MustCompile(`>([^<>]+)<`)
	letters    = regexp.MustCompile(`[A-Za-z]`)
	// exampleValue is an address, colour or URL shown as an example.
	exampleValue = regexp.MustCompile(`^([a-z]+:|#[0-9a-fA-F]{3,8}$|[^ ]+@[^ ]+$)`)
)

// TestTemplatesTranslateText: every text a reader sees in a template,
// in data-confirm, aria-label, title, placeholder and alt attributes
// and between tags, goes through {{t "key"}}, so that it is in the
// reader's language; only example values (URLs, addresses, colours)
// and templateExamples are literal.
func TestTemplatesTranslateText(t *testing.T) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil || len(names) == 0 {
		t.Fatalf("templates: %v %v", names, err)
	}
	for _, name := range names {
		b, err := templateFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		src := string(b)
		for _, m := range readerAttr.FindAllStringSubmatch(src, -1) {
			lit := strings.TrimSpace(templateAction.ReplaceAllString(m[2], " "))
			if letters.MatchString(lit) && !exampleValue.MatchString(lit) && !templateExamples[lit] {
				t.Errorf("%s: %s=%q has literal text %q, not {{t}}", name, m[1], m[2], lit)
			}
		}
		body := templateAction.ReplaceAllString(src, "")
		body = regexp.MustCompile(`(?s)<(script|style)\b.*?</(script|style)>`).ReplaceAllString(body, "")
		for _, m := range textNode.FindAllStringSubmatch(body, -1) {
			lit := strings.TrimSpace(m[1])
			if letters.MatchString(lit) && !templateExamples[lit] {
				t.Errorf("%s: literal text %q between tags, not {{t}}", name, lit)
			}
		}
	}
}
