package dashboard

import (
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// TestChangeNonMember: changing the role of, or removing, an email that
// is not a member of the store (no account, or an account of another
// store) answers 404 with the members page and a message naming the
// email, in the reader's language; nothing changes.
func TestChangeNonMember(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	other := e.client()
	other.signup("other@example.com")
	other.createStore("Elsewhere")
	members := "/dashboard/stores/" + st.ID + "/members"

	owner.get(members)
	for _, email := range []string{"nobody@example.com", "other@example.com"} {
		for _, try := range []struct {
			path string
			form url.Values
		}{
			{members + "/role", url.Values{"email": {email}, "role": {"Manager"}}},
			{members + "/remove", url.Values{"email": {email}}},
		} {
			for _, lang := range []string{"en", "de"} {
				try.form.Set("csrf", owner.csrf)
				code, body := owner.postLang(try.path, lang, try.form)
				want := fmt.Sprintf(msgIn(lang, "members.notmember"), email)
				if code != http.StatusNotFound || !strings.Contains(html.UnescapeString(body), want) || !strings.Contains(body, `class="member"`) {
					t.Errorf("%s %s (%s): %d, want 404 with the members page and %q\n%s", try.path, email, lang, code, want, body)
				}
			}
		}
	}
	if _, ok := roleOf(t, e, "other@example.com", st.ID); ok {
		t.Error("an account of another store joined the store")
	}
	if r, ok := roleOf(t, e, "owner@example.com", st.ID); !ok || r != kassa.RoleOwner {
		t.Errorf("owner's role: %q %v", r, ok)
	}
}

// TestMembersPageRefusalsInGerman: the members page's own refusals (the
// last owner stepping down, an unknown role) read in the reader's
// language, not in the English of the error behind them.
func TestMembersPageRefusalsInGerman(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	members := "/dashboard/stores/" + st.ID + "/members"
	owner.get(members)
	for _, try := range []struct {
		form url.Values
		code int
		key  string
	}{
		{url.Values{"email": {"owner@example.com"}, "role": {"Manager"}}, http.StatusConflict, "members.lastowner"},
		{url.Values{"email": {"owner@example.com"}, "role": {"Boss"}}, http.StatusUnprocessableEntity, "members.badrole"},
	} {
		try.form.Set("csrf", owner.csrf)
		code, body := owner.postLang(members+"/role", "de", try.form)
		want := msgIn("de", try.key)
		if code != try.code || want == msgIn("en", try.key) || !strings.Contains(html.UnescapeString(body), want) {
			t.Errorf("role %v: %d, want %d with %q\n%s", try.form, code, try.code, want, body)
		}
	}
}
