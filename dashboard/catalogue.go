package dashboard

import (
	"embed"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"slices"
	"strings"

	"github.com/kassapay/kassa/http/i18n"
)

// The dashboard's translations are gettext PO catalogues in
// catalogues/, one per language, in the customer pages' form (package
// http/i18n): msgctxt the key of strs, msgid its English text, msgstr
// the translation; machine-made entries are flagged fuzzy. English is
// strs itself.

//go:embed catalogues/*.po
var catalogueFiles embed.FS

// catalogues are the translations by language, and Languages the
// dashboard's languages, English first.
var catalogues, Languages = func() (map[string]map[string]string, []string) {
	out := map[string]map[string]string{}
	langs := []string{"en"}
	files, err := fs.Glob(catalogueFiles, "catalogues/*.po")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		b, err := catalogueFiles.ReadFile(f)
		if err != nil {
			panic(err)
		}
		c, err := i18n.ParseCatalogue(string(b))
		if err != nil || c.Lang != strings.TrimSuffix(path.Base(f), ".po") {
			panic(fmt.Sprintf("dashboard: catalogue %s: %v (Language %q)", f, err, c.Lang))
		}
		out[c.Lang] = c.Strings
		langs = append(langs, c.Lang)
	}
	slices.Sort(langs[1:])
	return out, langs
}()

// german is the German catalogue.
var german = catalogues["de"]

// langCookie keeps the language a reader picked with ?lang=.
const langCookie = "kassa_lang"

// lang returns the language of the dashboard for r: ?lang=, else the
// one picked before (a cookie), else the browser's (Accept-Language),
// else English. With w, a ?lang= choice is kept in the cookie for the
// next pages; an error page (w nil) does not keep it.
func (h *Dashboard) lang(w http.ResponseWriter, r *http.Request) string {
	return chooseLang(w, r)
}

// requestLang is r's language, as lang finds it, without keeping a
// choice.
func requestLang(r *http.Request) string { return chooseLang(nil, r) }

// tr is key's string in r's language: what the Go code says on a page
// (errors, notices) is translated as the templates' t is.
func tr(r *http.Request, key string) string { return msgIn(requestLang(r), key) }

func chooseLang(w http.ResponseWriter, r *http.Request) string {
	var picked string
	if c, err := r.Cookie(langCookie); err == nil {
		picked = c.Value
	}
	lang := i18n.ChooseAmong(r, Languages, picked)
	if q := r.URL.Query().Get("lang"); w != nil && q != "" && q == lang && q != picked {
		http.SetCookie(w, &http.Cookie{Name: langCookie, Value: lang, Path: "/dashboard", MaxAge: 365 * 24 * 3600,
			HttpOnly: true, Secure: r.TLS != nil, SameSite: http.SameSiteLaxMode})
	}
	return lang
}
