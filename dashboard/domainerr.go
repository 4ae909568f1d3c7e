package dashboard

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The domain's errors carry their message in English, for the APIs and
// across the cluster's nodes. A page shows them in its language the
// gettext way: catalogues/errors/*.po hold each message's English
// format (the Errorf or FieldError format in the source) and its
// translation with the same verbs in the same order. domainText finds
// the format an English message was made from, reads the arguments
// back out of it, and puts them into the translation. A message no
// format matches stays English.

//go:embed catalogues/errors/*.po
var errorCatalogueFiles embed.FS

// errorCatalogues are the domain messages' translations by language,
// keyed by English format.
var errorCatalogues = func() map[string]map[string]string {
	out := map[string]map[string]string{}
	files, err := fs.Glob(errorCatalogueFiles, "catalogues/errors/*.po")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		b, err := errorCatalogueFiles.ReadFile(f)
		if err != nil {
			panic(err)
		}
		c, err := i18n.ParseCatalogue(string(b))
		if err != nil || c.Lang != strings.TrimSuffix(path.Base(f), ".po") {
			panic(fmt.Sprintf("dashboard: catalogue %s: %v (Language %q)", f, err, c.Lang))
		}
		for k, en := range c.English {
			if k != en {
				panic(fmt.Sprintf("dashboard: catalogue %s: msgctxt %q is not its msgid %q", f, k, en))
			}
		}
		out[c.Lang] = c.Strings
	}
	return out
}()

// errorFormats are the catalogued formats, most specific (most literal
// text) first, compiled at the first error a page shows rather than at
// every start of the binary.
var errorFormats = sync.OnceValue(func() []errorFormat {
	english := map[string]bool{}
	for _, c := range errorCatalogues {
		for en := range c {
			english[en] = true
		}
	}
	formats := make([]errorFormat, 0, len(english))
	for en := range english {
		formats = append(formats, compileFormat(en))
	}
	slices.SortFunc(formats, func(a, b errorFormat) int {
		if a.literal != b.literal {
			return b.literal - a.literal
		}
		return strings.Compare(a.format, b.format)
	})
	return formats
})

// fmtVerb is a fmt verb: flags, width, precision, an explicit argument
// index are not used by the domain's formats but are read as one verb.
var fmtVerb = regexp.MustCompile(`%[-+# 0]*(\[\d+\])?\d*(\.\d+)?[a-zA-Z%]`)

// errorFormat is one English format and the pattern that reads its
// arguments back out of a message made from it.
type errorFormat struct {
	format  string
	re      *regexp.Regexp
	literal int    // the format's characters outside its verbs
	verbs   []byte // the verb of each argument
}

func compileFormat(format string) errorFormat {
	var re strings.Builder
	re.WriteString(`^`)
	last, literal := 0, 0
	var verbs []byte
	for _, loc := range fmtVerb.FindAllStringIndex(format, -1) {
		re.WriteString(regexp.QuoteMeta(format[last:loc[0]]))
		literal += loc[0] - last
		verb := format[loc[1]-1]
		if verb != '%' {
			verbs = append(verbs, verb)
		}
		switch verb {
		case '%':
			re.WriteString(`%`)
			literal++
		case 'd':
			re.WriteString(`(-?[0-9]+)`)
		case 'q':
			re.WriteString(`("(?:[^"\\]|\\.)*")`)
		default:
			re.WriteString(`(.*?)`)
		}
		last = loc[1]
	}
	re.WriteString(regexp.QuoteMeta(format[last:]))
	literal += len(format) - last
	re.WriteString(`$`)
	return errorFormat{format: format, re: regexp.MustCompile(re.String()), literal: literal, verbs: verbs}
}

// domainText is the English domain message english in lang: its
// format's translation with the message's arguments, or english itself
// when no catalogued format made it. An argument printed with %s or %v
// that is a domain message itself ("is not a Lightning address: %s") is
// translated as well.
func domainText(lang, english string) string {
	cat := errorCatalogues[lang]
	if cat == nil {
		return english
	}
	for _, f := range errorFormats() {
		m := f.re.FindStringSubmatch(english)
		if m == nil {
			continue
		}
		tr, ok := cat[f.format]
		if !ok {
			return english
		}
		args := m[1:]
		for i, v := range f.verbs {
			if (v == 's' || v == 'v') && len(args[i]) < len(english) {
				args[i] = domainText(lang, args[i])
			}
		}
		return fillFormat(tr, args)
	}
	return english
}

// fillFormat puts args, in order, in place of format's verbs (%% is %).
func fillFormat(format string, args []string) string {
	var b strings.Builder
	last, i := 0, 0
	for _, loc := range fmtVerb.FindAllStringIndex(format, -1) {
		b.WriteString(format[last:loc[0]])
		switch {
		case format[loc[1]-1] == '%':
			b.WriteByte('%')
		case i < len(args):
			b.WriteString(args[i])
			i++
		}
		last = loc[1]
	}
	b.WriteString(format[last:])
	return b.String()
}

// errorText is err's message for a page in lang: each field's message
// after its field's name, one field's or the error's own message
// translated.
func errorText(lang string, err error) string {
	var e *kassa.Error
	if !errors.As(err, &e) {
		return kassa.ErrorMessage(err)
	}
	if len(e.Fields) == 0 {
		return domainText(lang, e.Message)
	}
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = f.Field + ": " + domainText(lang, f.Message)
	}
	return strings.Join(parts, "; ")
}
