//go:build !daemon || !bench

package kassa_test

import (
	"bufio"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTestsBehindBuildTags speaks for the packages whose every test
// file carries the build tag daemon (the tests need a real PostgreSQL or
// etcd) or bench (the bench's own yardstick): built without the tags, as
// go test ./... and the fast tier build, they have no test binary that
// could say why their tests did not run, so this one says it, naming
// them; make test builds them with -tags daemon,bench. A package with
// some untagged tests has its own stand-in (TestDaemonNeedsTag).
func TestTestsBehindBuildTags(t *testing.T) {
	tagged := map[string]bool{}   // package dirs with a tagged test file
	untagged := map[string]bool{} // package dirs with an untagged one
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "third_party" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		dir := filepath.Dir(path)
		if line := firstLine(t, path); line == "//go:build daemon" || line == "//go:build bench" {
			tagged[dir] = true
		} else {
			untagged[dir] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var only []string
	for dir := range tagged {
		if !untagged[dir] {
			only = append(only, dir)
		}
	}
	slices.Sort(only)
	if len(only) > 0 {
		t.Skipf("skipped: the tests of %s build only with -tags daemon or bench (make test builds them)", strings.Join(only, ", "))
	}
}

// firstLine returns a file's first line.
func firstLine(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Scan()
	return s.Text()
}
