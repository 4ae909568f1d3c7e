package kassatest

import (
	"io/fs"
	"path/filepath"
	"testing"
)

// CheckPrivate fails t unless dir and every directory below it are 0700
// and every file below it 0600 (the data holds API keys and webhook
// secrets), and returns how many files it found.
func CheckPrivate(t testing.TB, dir string) (files int) {
	t.Helper()
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
	return files
}
