package greenfield_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDefaultLanguage: checkout.defaultLanguage is the language of the
// invoice's checkout, over the browser's Accept-Language; the page's
// language switch (?lang=) still wins, and the invoice reads it back. A
// value that is no language tag is refused.
func TestDefaultLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	body := strings.Replace(createBody, `"defaultLanguage":null`, `"defaultLanguage":"ja-JP"`, 1)
	w := e.do("POST", base+"/api/v1/stores/store_a/invoices", body)
	expectStatus(t, w, http.StatusOK)
	inv := decode[struct {
		ID       string `json:"id"`
		Checkout struct {
			DefaultLanguage *string `json:"defaultLanguage"`
		} `json:"checkout"`
	}](t, w)
	if inv.Checkout.DefaultLanguage == nil || *inv.Checkout.DefaultLanguage != "ja-JP" {
		t.Errorf("checkout.defaultLanguage read back as %v", inv.Checkout.DefaultLanguage)
	}
	page := func(query string) string {
		r := httptest.NewRequest("GET", "/checkout/"+inv.ID+query, nil)
		r.Header.Set("Accept-Language", "de-DE,de;q=0.9")
		rec := httptest.NewRecorder()
		e.h.ServeHTTP(rec, r)
		expectStatus(t, rec, http.StatusOK)
		return rec.Body.String()
	}
	if got := page(""); !strings.Contains(got, `<html lang="ja" dir="ltr">`) {
		t.Errorf("checkout of a ja-JP invoice for a German browser is not Japanese:\n%.300s", got)
	}
	if got := page("?lang=pt"); !strings.Contains(got, `<html lang="pt" dir="ltr">`) {
		t.Errorf("the language switch does not win over the invoice's language:\n%.300s", got)
	}

	w = e.do("POST", base+"/api/v1/stores/store_a/invoices", strings.Replace(createBody, `"defaultLanguage":null`, `"defaultLanguage":"not a language"`, 1))
	expectValidation(t, w, "checkout.defaultLanguage")

	// The store's default language, when the invoice asks for none, wins
	// over the browser's.
	st, err := e.db.Store(t.Context(), "store_a")
	if err != nil {
		t.Fatal(err)
	}
	st.DefaultLanguage = "fr"
	b := e.db.NewBatch()
	b.PutStore(st, 0)
	if err := e.db.Commit(t.Context(), b); err != nil {
		t.Fatal(err)
	}
	w = e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody)
	expectStatus(t, w, http.StatusOK)
	inv.ID = decode[struct {
		ID string `json:"id"`
	}](t, w).ID
	if got := page(""); !strings.Contains(got, `<html lang="fr" dir="ltr">`) {
		t.Errorf("checkout of a French store for a German browser is not French:\n%.300s", got)
	}
}
