package actors

import (
	"os"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/pgnode"
	"github.com/kassapay/kassa/persistence/postgres"
	"github.com/kassapay/kassa/persistence/postgres/pgtest"
)

// The actors tests that need a store shared by several Systems (the
// outbox claims of cluster mode) run on a throw-away PostgreSQL server,
// started by the first of them and stopped after the package's tests.
var pg pgtest.Shared

func TestMain(m *testing.M) { os.Exit(pg.Run(m)) }

// openPG opens a store on a fresh schema of the test server with clock;
// open opens one more handle on the same schema (another node's).
func openPG(t *testing.T, clock kassa.Clock) (db *postgres.DB, open func() *postgres.DB) {
	t.Helper()
	open = pgnode.Opener(t, pg.Schema(t), clock)
	return open(), open
}
