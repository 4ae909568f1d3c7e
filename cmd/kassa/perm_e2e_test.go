package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"
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

	files := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if got := info.Mode().Perm(); got != want {
			t.Errorf("%s has mode %o, want %o", path, got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Pebble's files and the admin token; on PostgreSQL only the token.
	least := 4
	if e2eOnPostgres() {
		least = 1
	}
	if files < least {
		t.Errorf("only %d files in %s", files, dir)
	}
}
