package pgtest

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// Schema starts a server of t's own, stopped when t ends, and returns
// the DSN of a fresh schema on it. When the server cannot be started, t
// fails (not a skip: scripts/install-test-deps.sh installs PostgreSQL).
// Under -short (the fast tier) t is skipped: it needs PostgreSQL.
func Schema(t testing.TB) string {
	t.Helper()
	SkipShort(t)
	s, err := Start()
	if err != nil {
		t.Fatalf("cannot start PostgreSQL for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Log(err)
		}
	})
	dsn, err := s.NewSchema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// SkipShort skips t under -short (`make test-short`), saying that it
// needs PostgreSQL; `make test` runs it.
func SkipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs PostgreSQL: skipped under -short (make test runs it)")
	}
}

// Shared is one server for all the tests of a package, started by the
// first test that asks for a schema; the package's TestMain stops it.
// The zero value is ready to use.
type Shared struct {
	once   sync.Once
	server *Server
	err    error
}

// Schema returns the DSN of a fresh schema on the shared server,
// starting the server first if no test has. When the server cannot be
// started, t fails (not a skip: scripts/install-test-deps.sh installs
// PostgreSQL). Under -short t is skipped, as with Schema.
func (sh *Shared) Schema(t testing.TB) string {
	t.Helper()
	SkipShort(t)
	sh.once.Do(func() { sh.server, sh.err = Start() })
	if sh.err != nil {
		t.Fatalf("cannot start PostgreSQL for the test: %v", sh.err)
	}
	dsn, err := sh.server.NewSchema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// Run runs the package's tests (m.Run) and then stops the server if a
// test started it; a failure to stop is printed, not counted. It returns
// m.Run's exit code, for TestMain to hand to os.Exit.
func (sh *Shared) Run(m *testing.M) int {
	code := m.Run()
	if err := sh.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Stop stops the shared server if a test started it.
func (sh *Shared) Stop() error {
	if sh.server == nil {
		return nil
	}
	return sh.server.Stop()
}
