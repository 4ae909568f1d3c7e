package dashboard

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

var (
	inviteLinkRe   = regexp.MustCompile(`<code id="invite-link">[^<]*invite=([A-Za-z0-9_-]+)</code>`)
	inviteRevokeRe = regexp.MustCompile(`action="/dashboard/invites/([0-9a-f]{64})/revoke"`)
)

// TestInvitationsListedAndRevoked: the Invitations page lists the open
// invitations (who made each, when, until when; the link itself was
// shown once and is not kept), and an operator revokes one with a
// CSRF-checked POST: it no longer signs anyone up and leaves the list.
func TestInvitationsListedAndRevoked(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Signup = SignupInvite })
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "op@example.com", password: "correct horse battery", admin: true}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.get("/dashboard/login")
	if code := c.login("op@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	c.get("/dashboard/invites")
	var codes []string
	for range 2 {
		_, body, _ := c.post("/dashboard/invites", nil)
		m := inviteLinkRe.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no invitation link on the page:\n%s", body)
		}
		codes = append(codes, m[1])
	}
	_, body, _ := c.get("/dashboard/invites")
	ids := inviteRevokeRe.FindAllStringSubmatch(body, -1)
	if len(ids) != 2 || strings.Count(body, "op@example.com") < 2 || !strings.Contains(body, msg("invites.shownonce")) {
		t.Fatalf("the page does not list both invitations with their maker and the shown-once note:\n%s", body)
	}
	for _, code := range codes {
		if strings.Contains(body, code) {
			t.Error("the list shows an invitation's secret code again")
		}
	}
	if !strings.Contains(body, "2026-03-11") { // made at the test clock's time, 7 days
		t.Error("the list does not show the expiry")
	}

	// The revoke is a POST that needs the CSRF token.
	revoke := "/dashboard/invites/" + ids[0][1] + "/revoke"
	if code, _, _ := c.postRaw(revoke, url.Values{}); code != http.StatusForbidden {
		t.Errorf("revoke without the CSRF token: %d", code)
	}
	if code, _, hdr := c.post(revoke, nil); code != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/dashboard/invites") {
		t.Fatalf("revoke: %d to %s", code, hdr.Get("Location"))
	}
	_, body, _ = c.get("/dashboard/invites")
	if left := inviteRevokeRe.FindAllStringSubmatch(body, -1); len(left) != 1 || left[0][1] == ids[0][1] {
		t.Errorf("after the revoke the list holds %v", left)
	}
	valid := 0
	for _, code := range codes {
		if ok, _ := e.dash.inviteValid(t.Context(), code); ok {
			valid++
		}
	}
	if valid != 1 {
		t.Errorf("%d invitations still sign up, want 1", valid)
	}
	if code, _, _ := c.post("/dashboard/invites/"+strings.Repeat("0", 64)+"/revoke", nil); code != http.StatusNotFound {
		t.Errorf("revoking an unknown invitation: %d", code)
	}

	// A merchant has no Invitations page and cannot revoke.
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "m@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	m := e.client()
	m.get("/dashboard/login")
	m.login("m@example.com", "correct horse battery")
	m.get("/dashboard/stores")
	if code, _, _ := m.post("/dashboard/invites/"+ids[1][1]+"/revoke", nil); code != http.StatusNotFound {
		t.Errorf("a merchant's revoke: %d", code)
	}
}
