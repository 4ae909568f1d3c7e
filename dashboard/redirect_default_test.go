package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestStoreRedirectAutomatically: the settings form's checkbox sets and
// clears Store.DefaultRedirectAutomatically, and the page shows it.
func TestStoreRedirectAutomatically(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Alice's Shop")
	save := func(extra url.Values) {
		t.Helper()
		c.get("/dashboard/stores/" + st.ID + "/")
		form := url.Values{"name": {"Alice's Shop"}, "currency": {"EUR"}, "confirmations": {"1"},
			"defaultRedirectUrl": {"https://alice.example/thanks"}}
		for k, v := range extra {
			form[k] = v
		}
		if code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", form); code != http.StatusSeeOther {
			t.Fatalf("save settings: %d %s", code, body)
		}
	}
	save(url.Values{"defaultRedirectAutomatically": {"on"}})
	if after, _ := e.db.Store(t.Context(), st.ID); !after.DefaultRedirectAutomatically {
		t.Error("checked: not stored")
	}
	if _, body, _ := c.get("/dashboard/stores/" + st.ID + "/"); !strings.Contains(body, `name="defaultRedirectAutomatically" value="on" checked`) {
		t.Error("the settings page does not show the box checked")
	}
	save(nil)
	if after, _ := e.db.Store(t.Context(), st.ID); after.DefaultRedirectAutomatically {
		t.Error("unchecked: still stored")
	}
}
