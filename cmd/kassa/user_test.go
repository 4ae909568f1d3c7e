package main

import (
	"bytes"
	"context"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAdminRefusedTokenExplained: an admin command whose token the
// server refuses says which server it asked, where that address came
// from, which token file it sent, and what to do, instead of a bare 401.
func TestAdminRefusedTokenExplained(t *testing.T) {
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(nethttp.StatusUnauthorized)
		w.Write([]byte(`{"code":"unauthorized","message":"unauthorized"}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("not-this-servers-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := filepath.Join(dir, "pw")
	if err := os.WriteFile(pw, []byte("a long enough password\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KASSA_SERVER", srv.URL)
	var stdout, stderr bytes.Buffer
	err := runAdmin(context.Background(), []string{"user", "create", "--email", "a@example.com", "--password-file", pw, "--data", dir}, &stdout, &stderr)
	if err == nil {
		t.Fatal("a refused token succeeded")
	}
	for _, want := range []string{srv.URL, "KASSA_SERVER", filepath.Join(dir, "admin.token"), "401", "--server"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}

	// Nothing listening: the error names the address and how to name another.
	t.Setenv("KASSA_SERVER", "")
	t.Setenv("KASSA_LISTEN", "127.0.0.1:1")
	err = runAdmin(context.Background(), []string{"user", "create", "--email", "a@example.com", "--password-file", pw, "--data", dir}, &stdout, &stderr)
	for _, want := range []string{"http://127.0.0.1:1", "KASSA_LISTEN", "--server"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("the error does not say %q: %v", want, err)
		}
	}
}

// TestUserResetTwoFactor: `kassa user reset-2fa --email E` asks the
// server, with the admin token, to turn E's second factor off, and prints
// the answer; without --email it is a usage error.
func TestUserResetTwoFactor(t *testing.T) {
	var path, auth, body string
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		data, _ := io.ReadAll(r.Body)
		path, auth, body = r.URL.Path, r.Header.Get("Authorization"), string(data)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"email":"shop@example.com","twoFactor":false,"sessionsEnded":true}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("the-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("KASSA_SERVER", srv.URL)
	var stdout, stderr bytes.Buffer
	if err := runAdmin(context.Background(), []string{"user", "reset-2fa", "--email", "shop@example.com", "--data", dir}, &stdout, &stderr); err != nil {
		t.Fatalf("reset-2fa: %v (%s)", err, stderr.String())
	}
	if path != "/dashboard/admin/users/reset-2fa" || auth != "Bearer the-token" || !strings.Contains(body, `"email":"shop@example.com"`) {
		t.Errorf("asked %s with %q: %s", path, auth, body)
	}
	if !strings.Contains(stdout.String(), `"sessionsEnded":true`) {
		t.Errorf("printed %q", stdout.String())
	}
	if err := runAdmin(context.Background(), []string{"user", "reset-2fa", "--data", dir}, &stdout, &stderr); err == nil {
		t.Error("reset-2fa without --email succeeded")
	}
}
