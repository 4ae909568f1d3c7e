package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// login signs c in with email and password and reports the status.
func (c *client) login(email, password string) int {
	c.e.t.Helper()
	c.get("/dashboard/login")
	code, _, _ := c.post("/dashboard/login", url.Values{"email": {email}, "password": {password}})
	return code
}

// TestChangePassword: the account page changes the password when the
// current one is given; the browser that changed it stays signed in, the
// account's other sessions end, and only the new password signs in.
func TestChangePassword(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	other := e.client()
	if code := other.login("a@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("second sign-in: %d", code)
	}
	// Someone else's session is not touched.
	bob := e.client()
	bob.signup("b@example.com")

	if code, body, _ := c.get("/dashboard/account"); code != http.StatusOK || !strings.Contains(body, `autocomplete="current-password"`) {
		t.Fatalf("account page: %d %s", code, body)
	}
	bad := []struct {
		form url.Values
		code int
	}{
		{url.Values{"current": {"wrong password!"}, "password": {"new horse battery"}, "confirm": {"new horse battery"}}, http.StatusUnprocessableEntity},
		{url.Values{"current": {"correct horse battery"}, "password": {"short"}, "confirm": {"short"}}, http.StatusUnprocessableEntity},
		{url.Values{"current": {"correct horse battery"}, "password": {"new horse battery"}, "confirm": {"new horse batterz"}}, http.StatusUnprocessableEntity},
	}
	for _, b := range bad {
		if code, body, _ := c.post("/dashboard/account/password", b.form); code != b.code || !strings.Contains(body, `id="error"`) {
			t.Errorf("%v: %d, want %d with an error: %s", b.form, code, b.code, body)
		}
	}
	// Without the form's CSRF token: refused.
	if code, _, _ := c.postRaw("/dashboard/account/password", url.Values{"current": {"correct horse battery"},
		"password": {"new horse battery"}, "confirm": {"new horse battery"}}); code != http.StatusForbidden {
		t.Errorf("without CSRF token: %d, want 403", code)
	}
	if code, _, _ := other.get("/dashboard/stores"); code != http.StatusOK {
		t.Fatalf("the other session before the change: %d", code)
	}

	c.get("/dashboard/account")
	code, body, hdr := c.post("/dashboard/account/password", url.Values{"current": {"correct horse battery"},
		"password": {"new horse battery"}, "confirm": {"new horse battery"}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/account?done=password" {
		t.Fatalf("change: %d %s %s", code, hdr.Get("Location"), body)
	}
	if code, _, _ := c.get("/dashboard/stores"); code != http.StatusOK {
		t.Errorf("the session that changed the password: %d, want still signed in", code)
	}
	if code, _, hdr := other.get("/dashboard/stores"); code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/login" {
		t.Errorf("the other session after the change: %d %s, want sent to log in", code, hdr.Get("Location"))
	}
	if code, _, _ := bob.get("/dashboard/stores"); code != http.StatusOK {
		t.Errorf("another account's session after the change: %d", code)
	}
	if code := e.client().login("a@example.com", "correct horse battery"); code != http.StatusUnauthorized {
		t.Errorf("old password: %d, want 401", code)
	}
	if code := e.client().login("a@example.com", "new horse battery"); code != http.StatusSeeOther {
		t.Errorf("new password: %d, want 303", code)
	}
	u, err := e.dash.user(t.Context(), "a@example.com")
	if err != nil || !strings.HasPrefix(u.PasswordHash, "$argon2id$") {
		t.Errorf("stored hash = %v, %v", u, err)
	}
}

// TestAdminSetPasswordNeedsTheToken: the reset `kassa user password`
// calls answers 401 without the admin token and changes nothing.
func TestAdminSetPasswordNeedsTheToken(t *testing.T) {
	e := newEnv(t)
	e.client().signup("a@example.com")
	for _, auth := range []string{"", "Bearer wrong", "Basic admin-token"} {
		req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/admin/users/password", strings.NewReader(`{"email":"a@example.com","password":"taken over now"}`))
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusUnauthorized {
			t.Errorf("Authorization %q: %d, want 401", auth, res.StatusCode)
		}
	}
	if code := e.client().login("a@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Errorf("the password changed without the token: login %d", code)
	}
}

// TestAdminAccountCommandErrors: the account commands of the kassa
// command answer each refusal with its own status and a message, and
// change nothing.
func TestAdminAccountCommandErrors(t *testing.T) {
	e := newEnv(t)
	e.client().signup("a@example.com")
	for _, tt := range []struct {
		name, path, body string
		want             int
	}{
		{"not JSON", "/dashboard/admin/users", `{"email":`, http.StatusBadRequest},
		{"invalid email", "/dashboard/admin/users", `{"email":"not an address","password":"correct horse battery"}`, http.StatusUnprocessableEntity},
		{"short password", "/dashboard/admin/users", `{"email":"b@example.com","password":"short"}`, http.StatusUnprocessableEntity},
		{"taken email", "/dashboard/admin/users", `{"email":"a@example.com","password":"correct horse battery"}`, http.StatusConflict},
		{"password not JSON", "/dashboard/admin/users/password", `[]`, http.StatusBadRequest},
		{"unknown account", "/dashboard/admin/users/password", `{"email":"nobody@example.com","password":"correct horse battery"}`, http.StatusNotFound},
		{"short new password", "/dashboard/admin/users/password", `{"email":"a@example.com","password":"short"}`, http.StatusUnprocessableEntity},
	} {
		req, _ := http.NewRequest("POST", e.srv.URL+tt.path, strings.NewReader(tt.body))
		req.Header.Set("Authorization", "Bearer admin-token")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			Message string `json:"message"`
		}
		decodeErr := json.NewDecoder(res.Body).Decode(&out)
		res.Body.Close()
		if res.StatusCode != tt.want || decodeErr != nil || out.Message == "" {
			t.Errorf("%s: %d %q (%v), want %d with a message", tt.name, res.StatusCode, out.Message, decodeErr, tt.want)
		}
	}
	if u, err := e.dash.user(t.Context(), "b@example.com"); u != nil || err != nil {
		t.Errorf("a refused create stored the account: %v, %v", u, err)
	}
	if code := e.client().login("a@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Errorf("a refused password change changed it: login %d", code)
	}
}
