package harness

import (
	"context"
	"io"
	"testing"
)

// Opener returns a function that opens, with open, one more handle on
// one store (in tests of cluster mode: one handle per node of a cluster
// that shares the store, e.g. postgres.Open on a PostgresSchema DSN);
// each handle is closed when t ends, and a failure to open fails t.
//
// It takes the open function rather than a DSN because the tests of
// package postgres use this package: it must not import
// persistence/postgres.
func Opener[DB io.Closer](t testing.TB, open func(context.Context) (DB, error)) func() DB {
	return func() DB {
		t.Helper()
		db, err := open(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
}
