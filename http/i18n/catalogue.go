package i18n

import (
	"bufio"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"
)

// The catalogues are gettext PO files, one per language, in catalogues/
// and embedded in the binary. Each entry's msgctxt is the key a page
// looks up ("checkout.order"), its msgid the English text (what a
// translator translates), its msgstr the text in the file's language. A
// plural string has one entry per CLDR plural category the language
// uses, keyed "<key>.<category>" ("state.seen.text.few"). The header
// names the language (Language, X-Language-Name), where the text comes
// from (X-Source) and whether a machine made it (X-Machine-Translated);
// each machine-made entry carries the fuzzy flag until a translator has
// reviewed it. Unlike msgfmt, the pages show fuzzy entries: a machine's
// translation is better for a customer than English.

//go:embed catalogues/*.po
var catalogueFiles embed.FS

// Catalogue is one language's strings and what its header says.
type Catalogue struct {
	// Lang is the file's Language header, which is also its name
	// (de.po): a BCP 47 tag.
	Lang string
	// Name is the language in its own words (X-Language-Name).
	Name string
	// Source says where the text comes from (X-Source).
	Source string
	// Machine reports a machine-made catalogue (X-Machine-Translated: yes).
	Machine bool
	// Strings are the texts by key; Fuzzy the keys flagged fuzzy, those
	// a translator has yet to review.
	Strings map[string]string
	Fuzzy   map[string]bool
	// English are the msgids by key, the English text each entry
	// translates.
	English map[string]string
}

// loadCatalogues reads every embedded catalogue. A malformed file is a
// bug in the binary, so it panics at start, and a test sees it first.
func loadCatalogues() map[string]*Catalogue {
	out := map[string]*Catalogue{}
	files, err := fs.Glob(catalogueFiles, "catalogues/*.po")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		b, err := catalogueFiles.ReadFile(f)
		if err != nil {
			panic(err)
		}
		c, err := parsePO(string(b))
		if err != nil {
			panic(fmt.Sprintf("i18n: %s: %v", f, err))
		}
		if want := strings.TrimSuffix(path.Base(f), ".po"); c.Lang != want {
			panic(fmt.Sprintf("i18n: %s says Language: %q", f, c.Lang))
		}
		out[c.Lang] = c
	}
	return out
}

// poEntry is one entry of a PO file being read.
type poEntry struct {
	flags                []string
	ctxt, id, str        string
	hasCtxt, hasID, hasS bool
}

// parsePO reads a PO file: its header and its entries with a msgctxt
// (the key). Comments other than flags are ignored; plural entries
// (msgid_plural) are refused: plurals are entries per CLDR category.
func parsePO(src string) (*Catalogue, error) {
	c := &Catalogue{Strings: map[string]string{}, Fuzzy: map[string]bool{}, English: map[string]string{}}
	var e poEntry
	var last *string
	headerSeen := false
	flush := func(line int) error {
		if !e.hasID && !e.hasCtxt {
			e = poEntry{}
			return nil
		}
		if !e.hasID || !e.hasS {
			return fmt.Errorf("line %d: an entry needs msgid and msgstr", line)
		}
		switch {
		case !e.hasCtxt && e.id == "":
			if headerSeen {
				return fmt.Errorf("line %d: a second header", line)
			}
			headerSeen = true
			for _, h := range strings.Split(e.str, "\n") {
				k, v, _ := strings.Cut(h, ":")
				v = strings.TrimSpace(v)
				switch strings.TrimSpace(k) {
				case "Language":
					c.Lang = v
				case "X-Language-Name":
					c.Name = v
				case "X-Source":
					c.Source = v
				case "X-Machine-Translated":
					c.Machine = v == "yes"
				}
			}
		case !e.hasCtxt:
			return fmt.Errorf("line %d: entry %q has no msgctxt (its key)", line, e.id)
		default:
			if _, dup := c.Strings[e.ctxt]; dup {
				return fmt.Errorf("line %d: key %q twice", line, e.ctxt)
			}
			c.Strings[e.ctxt] = e.str
			c.English[e.ctxt] = e.id
			if slices.Contains(e.flags, "fuzzy") {
				c.Fuzzy[e.ctxt] = true
			}
		}
		e = poEntry{}
		return nil
	}
	sc := bufio.NewScanner(strings.NewReader(src))
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
			if err := flush(n); err != nil {
				return nil, err
			}
			last = nil
		case strings.HasPrefix(line, "#,"):
			for _, f := range strings.Split(line[2:], ",") {
				e.flags = append(e.flags, strings.TrimSpace(f))
			}
		case strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, `"`):
			if last == nil {
				return nil, fmt.Errorf("line %d: a string outside an entry", n)
			}
			s, err := strconv.Unquote(line)
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			*last += s
		default:
			kw, rest, _ := strings.Cut(line, " ")
			s, err := strconv.Unquote(strings.TrimSpace(rest))
			if err != nil {
				return nil, fmt.Errorf("line %d: %v", n, err)
			}
			switch kw {
			case "msgctxt":
				if e.hasID {
					if err := flush(n); err != nil {
						return nil, err
					}
				}
				e.ctxt, e.hasCtxt, last = s, true, &e.ctxt
			case "msgid":
				if e.hasID {
					if err := flush(n); err != nil {
						return nil, err
					}
				}
				e.id, e.hasID, last = s, true, &e.id
			case "msgstr":
				e.str, e.hasS, last = s, true, &e.str
			default:
				return nil, fmt.Errorf("line %d: %s is not supported (plurals are one entry per CLDR category)", n, kw)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if err := flush(n); err != nil {
		return nil, err
	}
	if c.Lang == "" {
		return nil, fmt.Errorf("no Language header")
	}
	return c, nil
}

// ParseCatalogue reads a catalogue in this package's PO form, for the
// other pages that keep catalogues of their own (the dashboard's).
func ParseCatalogue(src string) (*Catalogue, error) { return parsePO(src) }

// pluralBase is key without its plural category ("state.seen.text" of
// "state.seen.text.few").
func pluralBase(key string) string {
	i := strings.LastIndexByte(key, '.')
	if i < 0 {
		return key
	}
	return key[:i]
}
