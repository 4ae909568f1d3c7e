//go:build daemon

package lnd_test

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/persistence/postgres"
)

// Nodes of a cluster share one pool over PostgreSQL: taking at once,
// they hand out each address once, and every take after the last
// address fails with ErrNoWalletAddress.
func TestPoolSharedByNodesOverPostgres(t *testing.T) {
	harness.SkipShort(t, "PostgreSQL")
	dsn, clock := harness.PostgresSchema(t), kassatest.NewTestClock(time.Now())
	open := harness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: clock})
	})
	testPoolShared(t, func() lnd.PoolStore { return open() })
}

// Two nodes refilling the shared pool at once over PostgreSQL: one
// stalls between reading the pool and writing it while the other fills
// it; each address lnd gave either node stays in the pool, none is
// written over. Before, the stalled node's write replaced the record
// the other had written, and the other's ten new addresses were lost
// to the pool (taken from lnd's wallet, never handed out).
func TestPoolRefillsAtOnceOverPostgresKeepEveryAddress(t *testing.T) {
	harness.SkipShort(t, "PostgreSQL")
	dsn, clock := harness.PostgresSchema(t), kassatest.NewTestClock(time.Now())
	open := harness.Opener(t, func(ctx context.Context) (*postgres.DB, error) {
		return postgres.Open(ctx, dsn, postgres.Options{Clock: clock})
	})
	testPoolRefillsAtOnce(t, func() lnd.PoolStore { return open() })
}
