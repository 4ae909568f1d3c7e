package persistence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestFilePermissions checks that the store's directory is 0700 and its
// files 0600, also when the directory and some files existed before with
// looser modes: the data holds API keys and webhook secrets.
func TestFilePermissions(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pebble")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "old-notes"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 50 {
		commit(t, db, func(b kassa.Batch) { b.PutStore(kassatest.NewStore("s"+string(rune('a'+i%26)), "key"), uint64(i+1)) })
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)
}

// checkPrivate fails unless dir is 0700 and every file below it 0600,
// with at least Pebble's three files.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
	if files := kassatest.CheckPrivate(t, dir); files < 3 {
		t.Errorf("only %d files in %s", files, dir)
	}
}
