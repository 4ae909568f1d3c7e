package kassa_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// TestReadmeNamesEveryPackage checks that the README's architecture
// table names every package of the module, so that the page a newcomer
// reads first does not drift from the code: a package is named when
// the Architecture section holds `path`, or `prefix/...` for a prefix
// of its path.
func TestReadmeNamesEveryPackage(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, arch, ok := strings.Cut(string(readme), "\n## Architecture\n")
	if !ok {
		t.Fatal("README.md has no Architecture section")
	}
	if next := strings.Index(arch, "\n## "); next >= 0 {
		arch = arch[:next]
	}
	named := func(pkg string) bool {
		if strings.Contains(arch, "`"+pkg+"`") {
			return true
		}
		for p := pkg; p != "."; p = filepath.Dir(p) {
			if strings.Contains(arch, "`"+p+"/...`") {
				return true
			}
		}
		return false
	}
	var missing []string
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		name := d.Name()
		if path != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules") {
			return filepath.SkipDir
		}
		if path != "." {
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // another module (third_party): not Kassa's packages
			}
		}
		if path == "." || !hasPackage(t, path) {
			return nil
		}
		if !named(filepath.ToSlash(path)) {
			missing = append(missing, filepath.ToSlash(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("README.md's Architecture section does not name these packages: %s", strings.Join(missing, ", "))
	}
}

// hasPackage says whether dir holds Go files other than tests.
func hasPackage(t *testing.T, dir string) bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if n := e.Name(); !e.IsDir() && strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
			return true
		}
	}
	return false
}

// TestDecisionRecordsAreShort checks that each record of
// docs/decisions.md (a "## " section: one decision, why, and its
// consequences) is at most 15 lines, a defect's history belonging in
// its commit message and figures in the bench output, and that the
// index at the top has a line for it.
func TestDecisionRecordsAreShort(t *testing.T) {
	data, err := os.ReadFile("docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	const limit = 16 // lines a record stays under
	index, _, _ := strings.Cut(string(data), "\n# ")
	title, lines := "", 0
	check := func() {
		if title != "" && title != "## Index" && lines >= limit {
			t.Errorf("docs/decisions.md: %q is %d lines, want under %d", title, lines, limit)
		}
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "## ") {
			check()
			title, lines = line, 0
			if r := strings.TrimPrefix(line, "## "); r != "Index" && !strings.Contains(index, "- ["+r+"](#"+anchor(r)+"): ") {
				t.Errorf("docs/decisions.md: the index has no line \"- [%s](#%s): …\"", r, anchor(r))
			}
			continue
		}
		lines++
	}
	check()
}

// TestDecisionsReadInTwentyMinutes holds docs/decisions.md to at most
// 5,000 words (as wc -w counts them), about twenty minutes of reading,
// so that a newcomer can read every decision: a record that grows past
// it is condensed, or merges with the record it replaces.
func TestDecisionsReadInTwentyMinutes(t *testing.T) {
	data, err := os.ReadFile("docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	const ceiling = 5000
	if n := len(strings.Fields(string(data))); n > ceiling {
		t.Errorf("docs/decisions.md is %d words, want at most %d: condense or merge records", n, ceiling)
	}
}

// anchor is the fragment GitHub gives a heading: lower case, without
// punctuation other than hyphens and underscores, spaces as hyphens.
func anchor(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	return b.String()
}

// TestDecisionCitationsExist checks that every record title a Go
// comment, README.md or a document under docs/ cites as
// `docs/decisions.md, "Title"`, `decisions.md "Title"` or
// `"Title" in docs/decisions.md` names a record of docs/decisions.md,
// so that renaming or merging a record cannot leave a citation behind. A
// citation may shorten a title to its first words ("Cluster mode" for
// "Cluster mode (`--cluster etcd://…`)").
func TestDecisionCitationsExist(t *testing.T) {
	data, err := os.ReadFile("docs/decisions.md")
	if err != nil {
		t.Fatal(err)
	}
	var titles []string
	for _, line := range strings.Split(string(data), "\n") {
		if r, ok := strings.CutPrefix(line, "## "); ok {
			titles = append(titles, r)
		}
	}
	exists := func(cited string) bool {
		for _, title := range titles {
			rest, ok := strings.CutPrefix(title, cited)
			if ok && (rest == "" || !unicode.IsLetter([]rune(rest)[0]) && !unicode.IsDigit([]rune(rest)[0])) {
				return true
			}
		}
		return false
	}
	// Comment and line breaks inside a citation become one space.
	joins := regexp.MustCompile(`\s*\n\s*(//\s*)?`)
	after := regexp.MustCompile(`decisions\.md,?\s+\(?\\?"([^"\\]+)\\?"((?:\s*(?:,|and)\s*\\?"[^"\\]+\\?")*)`)
	more := regexp.MustCompile(`\\?"([^"\\]+)\\?"`)
	before := regexp.MustCompile(`"([^"]+)" in (?:docs/)?decisions\.md`)
	checked := 0
	err = filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() {
			if path != "." && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, ".md") {
			return nil
		}
		if strings.HasSuffix(name, ".md") && path != "README.md" && filepath.Dir(path) != "docs" || path == "docs_test.go" {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		// Both patterns hold "decisions.md" whole, and joins only turns
		// line breaks into spaces: a file without it cites nothing.
		if !bytes.Contains(src, []byte("decisions.md")) {
			return nil
		}
		text := joins.ReplaceAllString(string(src), " ")
		var cited []string
		for _, m := range after.FindAllStringSubmatch(text, -1) {
			cited = append(cited, m[1])
			for _, n := range more.FindAllStringSubmatch(m[2], -1) {
				cited = append(cited, n[1])
			}
		}
		for _, m := range before.FindAllStringSubmatch(text, -1) {
			cited = append(cited, m[1])
		}
		for _, c := range cited {
			checked++
			if !exists(c) {
				t.Errorf("%s cites %q, which is no record title (or its first words) in docs/decisions.md", filepath.ToSlash(path), c)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d citations checked", checked)
	if checked == 0 {
		t.Error("found no citation of docs/decisions.md: the patterns no longer match how the tree cites records")
	}
}
