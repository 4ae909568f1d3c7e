package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
)

// getLang reads path with Accept-Language lang.
func (c *client) getLang(path, lang string) (int, string) {
	c.e.t.Helper()
	req, _ := http.NewRequest("GET", c.e.srv.URL+path, nil)
	req.Header.Set("Accept-Language", lang)
	code, body, _ := c.read(c.http.Do(req))
	c.remember(body)
	return code, body
}

// postLang sends form with Accept-Language lang.
func (c *client) postLang(path, lang string, form url.Values) (int, string) {
	c.e.t.Helper()
	req, _ := http.NewRequest("POST", c.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept-Language", lang)
	code, body, _ := c.read(c.http.Do(req))
	return code, body
}

// TestErrorPagesInGerman: a browser that asks for German gets the
// dashboard's 404, 403 and 500 pages in German, layout included, and
// one that does not gets them in English.
func TestErrorPagesInGerman(t *testing.T) {
	var failInvite atomic.Bool
	e := newEnv(t, func(d *Deps) {
		d.KV = &faultyKV{KeyValue: d.KV, putErr: func(key string) error {
			if failInvite.Load() && strings.HasPrefix(key, "dash/invite/") {
				return errors.New("injected: the write failed")
			}
			return nil
		}}
	})
	c := e.client()
	c.signup("op@example.com")
	german := regexp.MustCompile(`<html lang="de">`)

	code, body := c.getLang("/dashboard/no-such-page", "de-CH, en;q=0.5")
	if code != http.StatusNotFound || !german.MatchString(body) || !strings.Contains(body, msgIn("de", "err.notfound")) ||
		!strings.Contains(body, msgIn("de", "nav.logout")) || strings.Contains(body, msg("err.notfound")) {
		t.Errorf("404 in German: %d %s", code, body)
	}
	code, body = c.postLang("/dashboard/invites", "de", url.Values{"csrf": {"wrong"}})
	if code != http.StatusForbidden || !german.MatchString(body) || !strings.Contains(body, msgIn("de", "err.csrf")) {
		t.Errorf("403 in German: %d %s", code, body)
	}
	c.getLang("/dashboard/invites", "de")
	failInvite.Store(true)
	code, body = c.postLang("/dashboard/invites", "de", url.Values{"csrf": {c.csrf}})
	if code != http.StatusInternalServerError || !german.MatchString(body) || !strings.Contains(body, msgIn("de", "err.internal")) {
		t.Errorf("500 in German: %d %s", code, body)
	}
	failInvite.Store(false)

	code, body = c.getLang("/dashboard/no-such-page", "sw, en;q=0.5")
	if code != http.StatusNotFound || !strings.Contains(body, `<html lang="en">`) || !strings.Contains(body, msg("err.notfound")) {
		t.Errorf("404 in English: %d %s", code, body)
	}
	// Every page speaks German to a German browser.
	if code, body := c.getLang("/dashboard/stores", "de"); code != http.StatusOK || !german.MatchString(body) || !strings.Contains(body, msgIn("de", "stores.new")) {
		t.Errorf("stores page for a German browser: %d", code)
	}
}

// TestDashboardLanguages: the dashboard's pages speak English, German,
// Spanish, French, Portuguese and Italian, from Accept-Language or the
// switch (?lang=, kept in a cookie for the next pages).
func TestDashboardLanguages(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("op@example.com")
	for _, lang := range []string{"de", "es", "fr", "pt", "it"} {
		code, body := c.getLang("/dashboard/stores", lang)
		if code != http.StatusOK || !strings.Contains(body, `<html lang="`+lang+`">`) || !strings.Contains(body, msgIn(lang, "stores.new")) ||
			!strings.Contains(body, msgIn(lang, "nav.logout")) || strings.Contains(body, ">"+msg("stores.new")+"<") {
			t.Errorf("%s: stores page %d in another language:\n%.400s", lang, code, body)
		}
	}
	// The switch: ?lang=it, then the next page without it stays Italian.
	if _, body := c.getLang("/dashboard/stores?lang=it", "en"); !strings.Contains(body, `<html lang="it">`) || !strings.Contains(body, `hreflang="pt" lang="pt">Português</a>`) {
		t.Errorf("?lang=it: %.300s", body)
	}
	if _, body := c.getLang("/dashboard/account", "en"); !strings.Contains(body, `<html lang="it">`) || !strings.Contains(body, msgIn("it", "account.password")) {
		t.Errorf("the page after ?lang=it: %.300s", body)
	}
}

// dashSameAsEnglish are dashboard translations allowed to equal the
// English text, by key and language.
var dashSameAsEnglish = map[string][]string{
	"app": {"de", "es", "fr", "pt", "it"}, "nav.webhooks": {"de", "es", "fr", "pt"}, "hooks.title": {"de", "es", "fr", "pt"},
	"hook.title": {"de", "es", "fr", "pt", "it"}, "hook.code": {"de"}, "hook.status": {"de"}, "inv.status": {"de"},
	"links.status": {"de"}, "field.name": {"de"}, "settings.wallet": {"de"}, "nav.invites": {"fr"}, "inv.titlepage": {"fr"},
	"inv.confs": {"fr"}, "inv.txid": {"fr"}, "tx.type": {"fr"}, "links.desc": {"fr"}, "links.url": {"de"},
	"passkey.title": {"de"}, "hist.kind.webhook": {"de", "es", "fr", "pt"}, "hist.account": {"it"},
}

// TestDashboardCatalogues: every dashboard catalogue has every English
// key with the same placeholders, names its source, and translates the
// text (dashSameAsEnglish names the words that are the same).
func TestDashboardCatalogues(t *testing.T) {
	if len(Languages) < 6 {
		t.Errorf("dashboard languages %v, want at least six", Languages)
	}
	verbs := regexp.MustCompile(`%(\[\d+\])?[a-z%]`)
	for _, lang := range Languages[1:] {
		c := catalogues[lang]
		for k, en := range strs {
			s, ok := c[k]
			if !ok {
				t.Errorf("%s: key %s missing", lang, k)
				continue
			}
			if a, b := verbs.FindAllString(en, -1), verbs.FindAllString(s, -1); strings.Join(a, " ") != strings.Join(b, " ") {
				t.Errorf("%s %s: placeholders %v, English %v", lang, k, b, a)
			}
			if s == en && !slices.Contains(dashSameAsEnglish[k], lang) {
				t.Errorf("%s %s: %q is the English text", lang, k, s)
			}
		}
		for k := range c {
			if _, ok := strs[k]; !ok {
				t.Errorf("%s: key %s is not in strs", lang, k)
			}
		}
	}
}

// TestGermanStringsExist: every German string has an English one, and
// the error page and the layout have all theirs in German.
func TestGermanStringsExist(t *testing.T) {
	for key := range german {
		if _, ok := strs[key]; !ok {
			t.Errorf("German %q has no English string", key)
		}
	}
	for _, name := range []string{"templates/layout.html", "templates/error.html"} {
		data, err := templateFS.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range regexp.MustCompile(`\{\{t "([^"]+)"\}\}`).FindAllStringSubmatch(string(data), -1) {
			if _, ok := german[m[1]]; !ok {
				t.Errorf("%s: %q has no German string", name, m[1])
			}
		}
	}
	// The error pages' messages, and the text issue 20 added (the
	// transfer line's routing fee, the held balance's notice).
	for _, key := range []string{"err.notfound", "err.csrf", "err.internal", "err.form", "err.signin", "tx.routing", "settings.held"} {
		if _, ok := german[key]; !ok {
			t.Errorf("%q has no German string", key)
		}
	}
}

// TestStoreDefaultLanguage: a store's settings name the language of its
// customer pages; a value that is no language tag is refused.
func TestStoreDefaultLanguage(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Alice's Shop")
	c.get("/dashboard/stores/" + st.ID + "/")
	code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Alice's Shop"}, "currency": {"EUR"},
		"confirmations": {"1"}, "defaultLanguage": {"fr"}})
	if code != http.StatusSeeOther {
		t.Fatalf("save settings: %d %s", code, body)
	}
	if after, _ := e.db.Store(t.Context(), st.ID); after.DefaultLanguage != "fr" {
		t.Errorf("default language stored as %q", after.DefaultLanguage)
	}
	if _, body, _ := c.get("/dashboard/stores/" + st.ID + "/"); !strings.Contains(body, `<option value="fr" selected>Français</option>`) {
		t.Errorf("the settings page does not show French chosen")
	}
	code, body, _ = c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Alice's Shop"}, "currency": {"EUR"},
		"confirmations": {"1"}, "defaultLanguage": {"not a language"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "defaultLanguage") {
		t.Errorf("a bad language: %d", code)
	}
}
