package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kassapay/kassa/kassatest"
)

// TestDataDirPermissions checks that the data directory ends up 0700 and
// every file in it 0600, also when the directory and the admin token
// existed before with looser modes.
func TestDataDirPermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil { // whatever the umask
		t.Fatal(err)
	}
	token := filepath.Join(dir, "admin.token")
	if err := os.WriteFile(token, []byte("0123456789abcdef0123456789abcdef0123\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(token, 0o644); err != nil {
		t.Fatal(err)
	}
	s := startServer(t, dir)
	s.createStore("--name", "Private")
	s.Stop()

	files := kassatest.CheckPrivate(t, dir)
	// Pebble's files and the admin token; on PostgreSQL only the token.
	least := 4
	if e2eOnPostgres() {
		least = 1
	}
	if files < least {
		t.Errorf("only %d files in %s", files, dir)
	}
}
