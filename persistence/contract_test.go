package persistence

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/kassatest"
)

// openForContract opens a fresh store of backend bk ("mem" or "disk") and
// closes it when the test ends.
func openForContract(t *testing.T, bk string) *DB {
	t.Helper()
	dir, o := "kassa", Options{FS: vfs.NewMem()}
	if bk == "disk" {
		dir, o = t.TempDir(), Options{}
	}
	db, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := db.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	return db
}

// TestContract runs the ports' contract suites on Pebble in memory and
// on disk.
func TestContract(t *testing.T) {
	for _, bk := range []string{"mem", "disk"} {
		t.Run(bk, func(t *testing.T) {
			t.Parallel()
			t.Run("Journal", func(t *testing.T) {
				kassatest.RunJournal(t, func(t *testing.T) kassa.Journal { return openForContract(t, bk) })
			})
			t.Run("Reader", func(t *testing.T) {
				kassatest.RunReader(t, func(t *testing.T) kassatest.Storage {
					db := openForContract(t, bk)
					return kassatest.Storage{Journal: db, Reader: db}
				})
			})
			t.Run("KeyValue", func(t *testing.T) {
				kassatest.RunKeyValue(t, func(t *testing.T) kassa.KeyValue { return openForContract(t, bk) })
			})
			t.Run("History", func(t *testing.T) {
				kassatest.RunHistory(t, func(t *testing.T) kassatest.HistoryStorage {
					db := openForContract(t, bk)
					return kassatest.HistoryStorage{Journal: db, History: db}
				})
			})
			t.Run("ForwardStore", func(t *testing.T) {
				kassatest.RunForwardStore(t, func(t *testing.T) kassatest.ForwardStorage {
					db := openForContract(t, bk)
					return kassatest.ForwardStorage{Journal: db, Reader: db, Forwards: db}
				})
			})
			t.Run("PayoutStore", func(t *testing.T) {
				kassatest.RunPayoutStore(t, func(t *testing.T) kassatest.PayoutStorage {
					db := openForContract(t, bk)
					return kassatest.PayoutStorage{Journal: db, Reader: db, Payouts: db}
				})
			})
			t.Run("SimStore", func(t *testing.T) {
				kassatest.RunSimStore(t, func(t *testing.T) func(string) simstore.Store {
					db := openForContract(t, bk)
					return func(name string) simstore.Store { return db.State(name) }
				})
			})
		})
	}
}
