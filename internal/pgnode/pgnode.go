// Package pgnode opens, for tests, handles on one PostgreSQL schema: one
// handle per node of a cluster that shares the store.
package pgnode

import (
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/postgres"
)

// Opener returns a function that opens one more handle on the schema at
// dsn (see pgtest.Schema), whose lease expiries are judged by clock; each
// handle is closed when t ends, and a failure to open fails t.
func Opener(t testing.TB, dsn string, clock kassa.Clock) func() *postgres.DB {
	return func() *postgres.DB {
		t.Helper()
		db, err := postgres.Open(t.Context(), dsn, postgres.Options{Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
}
