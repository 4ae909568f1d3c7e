package actors

import (
	"context"
	"os"
	"testing"

	"github.com/kassapay/kassa"
	testharness "github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/persistence/postgres"
)

// The actors tests that need a store shared by several Systems (the
// outbox claims of cluster mode) run on a throw-away PostgreSQL server,
// started by the first of them and stopped after the package's tests.
var pg testharness.SharedPostgres

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// openPG opens a store on a fresh schema of the test server with clock;
// open opens one more handle on the same schema (another node's).
func openPG(t *testing.T, clock kassa.Clock) (db *postgres.DB, open func() *postgres.DB) {
	t.Helper()
	dsn := pg.Schema(t)
	open = testharness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: clock})
	})
	return open(), open
}
