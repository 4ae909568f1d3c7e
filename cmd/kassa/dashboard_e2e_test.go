package main

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestUserCreateCLI runs the real binary with the default sign-up,
// invitation-only: sign-up without an invitation is refused, and
// nothing warns of open sign-up; `kassa user create --admin`
// makes the operator, who logs in and sees the invitations page;
// `kassa user password` resets the password and signs the operator out.
func TestUserCreateCLI(t *testing.T) {
	dir := t.TempDir()
	s := startServer(t, dir)
	jar, _ := cookiejar.New(nil)
	hc := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	get := func(path string) (int, string) {
		res, err := hc.Get(s.url + path)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	post := func(path string, form url.Values) int {
		_, page := get("/dashboard/login")
		form.Set("csrf", csrf.FindStringSubmatch(page)[1])
		res, err := hc.PostForm(s.url+path, form)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := post("/dashboard/signup", url.Values{"email": {"x@example.com"}, "password": {"correct horse battery"}}); code != http.StatusForbidden {
		t.Errorf("sign-up without an invitation: %d", code)
	}
	if strings.Contains(s.Logs(), "sign-up is open") {
		t.Errorf("the default sign-up is logged as open")
	}
	pw := filepath.Join(t.TempDir(), "pw")
	os.WriteFile(pw, []byte("correct horse battery\n"), 0o600)
	out := s.mustCLI("user", "create", "--admin", "--email", "op@example.com", "--password-file", pw)
	if !strings.Contains(out, `"admin":true`) {
		t.Fatalf("user create printed %q", out)
	}
	if _, err := s.cli("user", "create", "--email", "op@example.com", "--password-file", pw); err == nil || !strings.Contains(err.Error(), "409") {
		t.Errorf("a second account with the same email: %v", err)
	}
	if code := post("/dashboard/login", url.Values{"email": {"op@example.com"}, "password": {"correct horse battery"}}); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	if code, body := get("/dashboard/stores"); code != 200 || !strings.Contains(body, "/dashboard/invites") {
		t.Errorf("operator's store list: %d", code)
	}

	// `kassa user password` resets the password and ends the sessions.
	pw2 := filepath.Join(t.TempDir(), "pw2")
	os.WriteFile(pw2, []byte("battery staple horse\n"), 0o600)
	if out := s.mustCLI("user", "password", "op@example.com", "--password-file", pw2); !strings.Contains(out, `"sessionsEnded":true`) {
		t.Fatalf("user password printed %q", out)
	}
	if code, _ := get("/dashboard/stores"); code != http.StatusSeeOther {
		t.Errorf("the session after a reset: %d, want sent to log in", code)
	}
	if code := post("/dashboard/login", url.Values{"email": {"op@example.com"}, "password": {"correct horse battery"}}); code != http.StatusUnauthorized {
		t.Errorf("login with the old password: %d", code)
	}
	if code := post("/dashboard/login", url.Values{"email": {"op@example.com"}, "password": {"battery staple horse"}}); code != http.StatusSeeOther {
		t.Errorf("login with the new password: %d", code)
	}
	if _, err := s.cli("user", "password", "nobody@example.com", "--password-file", pw2); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("reset of an unknown account: %v", err)
	}
	os.WriteFile(pw2, []byte("short\n"), 0o600)
	if _, err := s.cli("user", "password", "op@example.com", "--password-file", pw2); err == nil || !strings.Contains(err.Error(), "422") {
		t.Errorf("reset to a short password: %v", err)
	}
}
