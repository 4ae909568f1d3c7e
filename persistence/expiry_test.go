package persistence

import (
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestExpiryClaims runs the expiry claims' contract on Pebble, where the
// one node's sweeper is the only claimer.
func TestExpiryClaims(t *testing.T) {
	kassatest.RunExpiryClaims(t, func(t *testing.T, clock kassa.Clock) (kassa.Journal, kassa.ExpiryClaims) {
		db, err := Open("", Options{InMemory: true, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db, db
	})
}
