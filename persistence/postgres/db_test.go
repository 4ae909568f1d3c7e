package postgres

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// server is the one PostgreSQL server of this package's tests; each test
// gets a schema of its own on it.
var server *harness.Postgres

func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(m.Run()) // every test skips: openTest and the rest ask for server
	}
	s, err := harness.StartPostgres()
	if err != nil {
		// Not a skip: CI must see that the store was not tested.
		fmt.Fprintf(os.Stderr, "FAIL: cannot start PostgreSQL for the tests: %v\n", err)
		os.Exit(1)
	}
	server = s
	code := m.Run()
	if err := s.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// openTest opens a store on a fresh schema and closes it when t ends.
func openTest(t *testing.T) *DB {
	t.Helper()
	return openTestDSN(t, newSchema(t))
}

// newSchema makes a fresh schema on the test server and returns its DSN.
// Every test's schema comes from here, so every test that needs the
// server skips under -short, when there is none.
func newSchema(t testing.TB) string {
	t.Helper()
	harness.SkipShort(t, "PostgreSQL")
	dsn, err := server.NewSchema(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return dsn
}

// openTestDSN opens the store at dsn and closes it when t ends.
func openTestDSN(t *testing.T, dsn string) *DB {
	t.Helper()
	db, err := Open(t.Context(), dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestContract runs the ports' contract suites on PostgreSQL.
func TestContract(t *testing.T) {
	t.Run("KeyValue", func(t *testing.T) {
		kassatest.RunKeyValue(t, func(t *testing.T) kassa.KeyValue { return openTest(t) })
	})
	t.Run("Journal", func(t *testing.T) {
		kassatest.RunJournal(t, func(t *testing.T) kassa.Journal { return openTest(t) })
	})
	t.Run("History", func(t *testing.T) {
		kassatest.RunHistory(t, func(t *testing.T) kassatest.HistoryStorage {
			db := openTest(t)
			return kassatest.HistoryStorage{Journal: db, History: db}
		})
	})
	t.Run("Reader", func(t *testing.T) {
		kassatest.RunReader(t, func(t *testing.T) kassatest.Storage {
			db := openTest(t)
			return kassatest.Storage{Journal: db, Reader: db}
		})
	})
	t.Run("ForwardStore", func(t *testing.T) {
		kassatest.RunForwardStore(t, func(t *testing.T) kassatest.ForwardStorage {
			db := openTest(t)
			return kassatest.ForwardStorage{Journal: db, Reader: db, Forwards: db}
		})
	})
	t.Run("PayoutStore", func(t *testing.T) {
		kassatest.RunPayoutStore(t, func(t *testing.T) kassatest.PayoutStorage {
			db := openTest(t)
			return kassatest.PayoutStorage{Journal: db, Reader: db, Payouts: db}
		})
	})
	t.Run("SimStore", func(t *testing.T) {
		kassatest.RunSimStore(t, func(t *testing.T) func(string) simstore.Store {
			db := openTest(t)
			return func(name string) simstore.Store { return db.State(name) }
		})
	})
}

// TestSeqTaken: a second activation of an actor that writes a sequence
// number already in its stream fails with a Conflict, and nothing of its
// batch is stored.
func TestSeqTaken(t *testing.T) {
	db := openTest(t)
	ctx := t.Context()
	s := kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_1"}
	first := kassatest.NewInvoice("inv_1", "s1", kassatest.Epoch)
	kassatest.Commit(t, db, func(b kassa.Batch) {
		b.AppendEvent(s, 1, []byte("first"))
		b.PutInvoice(first, nil, 1)
	})
	stale := *first
	stale.Status = kassa.InvoiceExpired
	b := db.NewBatch()
	b.AppendEvent(s, 1, []byte("second"))
	b.PutInvoice(&stale, nil, 1)
	b.PutTransaction(&kassa.Transaction{StoreID: "s1", Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 5, CreatedAt: kassatest.Epoch})
	err := db.Commit(ctx, b)
	if !errors.Is(err, ErrSeqTaken) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("second commit of seq 1 = %v (code %s), want ErrSeqTaken, a Conflict", err, kassa.ErrorCode(err))
	}
	var got []string
	if err := db.Events(ctx, s, 0, func(_ uint64, e []byte) error { got = append(got, string(e)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != "first" {
		t.Errorf("events after the refused commit = %q, want only the first", got)
	}
	if inv, _ := db.Invoice(ctx, "inv_1"); inv == nil || inv.Status != kassa.InvoiceNew {
		t.Errorf("the refused batch changed the snapshot: %+v", inv)
	}
	if bal, err := db.Balance(ctx, "s1"); bal != 0 || err != nil {
		t.Errorf("the refused batch changed the balance: %d, %v", bal, err)
	}
}

// TestMigrateTwice: opening an up-to-date database applies nothing and
// keeps the data.
func TestMigrateTwice(t *testing.T) {
	dsn := newSchema(t)
	ctx := t.Context()
	for i := range 2 {
		db, err := Open(ctx, dsn, Options{})
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if i == 0 {
			err = db.PutValue(ctx, "k", []byte("v"), time.Now().Add(time.Hour))
		} else if v, ok, gerr := db.GetValue(ctx, "k"); string(v) != "v" || !ok || gerr != nil {
			err = fmt.Errorf("value after reopening = %q, %v, %v", v, ok, gerr)
		}
		db.Close()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestMigrateConcurrently: nodes starting together on an empty database
// each open it; the advisory lock has the schema made once.
func TestMigrateConcurrently(t *testing.T) {
	dsn := newSchema(t)
	const nodes = 4
	errs := make(chan error, nodes)
	for range nodes {
		go func() {
			db, err := Open(t.Context(), dsn, Options{})
			if err == nil {
				db.Close()
			}
			errs <- err
		}()
	}
	for range nodes {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	db := openTestDSN(t, dsn)
	var versions int
	if err := db.pool.QueryRow(t.Context(), `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil {
		t.Fatal(err)
	}
	if versions != len(migrations) {
		t.Errorf("%d migrations recorded, want %d", versions, len(migrations))
	}
}
