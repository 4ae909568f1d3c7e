package persistence

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kassapay/kassa"
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
		commit(t, db, func(b kassa.Batch) { b.PutStore(newStore("s"+string(rune('a'+i%26)), "key"), uint64(i+1)) })
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkPrivate(t, dir)
}

// checkPrivate fails unless dir is 0700 and every file below it 0600.
func checkPrivate(t *testing.T, dir string) {
	t.Helper()
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
	if files < 3 {
		t.Errorf("only %d files in %s", files, dir)
	}
}
