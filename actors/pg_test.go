package actors

import (
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/postgres"
	"github.com/kassapay/kassa/persistence/postgres/pgtest"
)

// The actors tests that need a store shared by several Systems (the
// outbox claims of cluster mode) run on a throw-away PostgreSQL server,
// started by the first of them and stopped after the package's tests.
var (
	pgOnce   sync.Once
	pgServer *pgtest.Server
	pgErr    error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if pgServer != nil {
		if err := pgServer.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	os.Exit(code)
}

// openPG opens a store on a fresh schema of the test server with clock;
// open opens one more handle on the same schema (another node's).
func openPG(t *testing.T, clock kassa.Clock) (db *postgres.DB, open func() *postgres.DB) {
	t.Helper()
	pgOnce.Do(func() { pgServer, pgErr = pgtest.Start() })
	if pgErr != nil {
		// Not a skip: scripts/install-test-deps.sh installs PostgreSQL.
		t.Fatalf("cannot start PostgreSQL for the test: %v", pgErr)
	}
	dsn, err := pgServer.NewSchema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	open = func() *postgres.DB {
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	return open(), open
}
