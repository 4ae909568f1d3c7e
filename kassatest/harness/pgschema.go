package harness

import (
	"fmt"
	"os"
	"sync"
	"testing"
)

// PostgresSchema starts a server of t's own, stopped when t ends, and
// returns the DSN of a fresh schema on it. When the server cannot be
// started, t fails (not a skip: scripts/install-test-deps.sh installs
// PostgreSQL). Under -short (the fast tier) t is skipped: it needs
// PostgreSQL.
func PostgresSchema(t testing.TB) string {
	t.Helper()
	_, dsn := PostgresForTest(t)
	return dsn
}

// PostgresForTest is PostgresSchema that also returns the server, for a
// test that takes it Down and Up.
func PostgresForTest(t testing.TB) (*Postgres, string) {
	t.Helper()
	SkipShort(t, "PostgreSQL")
	s, err := StartPostgres()
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
	return s, dsn
}

// SharedPostgres is one server for all the tests of a package, started by the
// first test that asks for a schema; the package's TestMain stops it.
// The zero value is ready to use.
type SharedPostgres struct {
	once   sync.Once
	server *Postgres
	err    error
}

// Schema returns the DSN of a fresh schema on the shared server,
// starting the server first if no test has. When the server cannot be
// started, t fails (not a skip: scripts/install-test-deps.sh installs
// PostgreSQL). Under -short t is skipped, as with PostgresSchema.
func (sh *SharedPostgres) Schema(t testing.TB) string {
	t.Helper()
	SkipShort(t, "PostgreSQL")
	sh.once.Do(func() { sh.server, sh.err = StartPostgres() })
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
func (sh *SharedPostgres) Run(m *testing.M) int {
	code := m.Run()
	if err := sh.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	return code
}

// Stop stops the shared server if a test started it.
func (sh *SharedPostgres) Stop() error {
	if sh.server == nil {
		return nil
	}
	return sh.server.Stop()
}
