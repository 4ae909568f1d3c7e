package dashboard

import (
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestGoMessagesInGerman: the messages the Go code puts on a page (a
// form's error, a refusal) speak the reader's language as the
// templates do: a German session reads them in German, an English one
// in English.
func TestGoMessagesInGerman(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("op@example.com")
	st := c.createStore("Laden")
	base := "/dashboard/stores/" + st.ID
	has := func(what, body, lang, key string) {
		t.Helper()
		if want := html.EscapeString(msgIn(lang, key)); !strings.Contains(body, want) {
			t.Errorf("%s in %s: the page lacks %q:\n%.600s", what, lang, want, body)
		}
		if lang != "en" && strings.Contains(body, html.EscapeString(msg(key))) {
			t.Errorf("%s in %s: the page has the English %q", what, lang, msg(key))
		}
	}
	for _, lang := range []string{"de", "en"} {
		// A date the form cannot read (dateRange).
		code, body := c.getLang(base+"/transactions?from=03/04/2026", lang)
		if code != http.StatusBadRequest {
			t.Errorf("a bad date: %d", code)
		}
		has("bad date", body, lang, "err.date")
		// A top-up out of range (balance.go).
		c.getLang(base+"/balance", lang)
		_, body = c.postLang(base+"/balance/topup", lang, url.Values{"csrf": {c.csrf}, "amount": {"ten"}})
		has("top-up", body, lang, "err.topup")
		// An invoice amount that is no number (formAmount).
		c.getLang(base+"/invoices/new", lang)
		_, body = c.postLang(base+"/invoices", lang, url.Values{"csrf": {c.csrf}, "amount": {"zwölf"}, "currency": {"EUR"}})
		has("invoice amount", body, lang, "err.number")
		// The new passwords differ (account.go).
		c.getLang("/dashboard/account", lang)
		_, body = c.postLang("/dashboard/account/password", lang, url.Values{"csrf": {c.csrf}, "current": {"correct horse battery"},
			"password": {"another long password"}, "confirm": {"yet another password"}})
		has("password change", body, lang, "err.confirm")
	}
	// A wrong password at sign-in (auth.go), signed out.
	o := e.client()
	o.getLang("/dashboard/login", "de")
	_, body := o.postLang("/dashboard/login", "de", url.Values{"csrf": {o.csrf}, "email": {"op@example.com"}, "password": {"wrong password!"}})
	has("sign-in", body, "de", "err.login")
}
