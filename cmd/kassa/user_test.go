package main

import (
	"bytes"
	"context"
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
