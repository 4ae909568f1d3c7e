package postgres

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest/harness"
)

// TestMigrationRequestAges: the request records stored before their
// time was a column count from the migration: a sweep a RequestWindow
// after it keeps them, one later deletes them; a pool address's record
// stays.
func TestMigrationRequestAges(t *testing.T) {
	ctx := t.Context()
	harness.SkipShort(t, "PostgreSQL")
	dsn, pool := schemaAt(t, 8)
	for _, r := range []kassa.RequestRecord{
		{StoreID: "s1", ID: "req_1", Kind: kassa.RequestInvoice, ResultID: "inv_1"},
		{StoreID: "pool", ID: "bcrt1qaddr", Kind: kassa.RequestPoolAddress, ResultID: "inv_1"},
	} {
		doc, _ := json.Marshal(r)
		if _, err := pool.Exec(ctx, `INSERT INTO requests (store_id, request_id, doc) VALUES ($1, $2, $3)`, r.StoreID, r.ID, doc); err != nil {
			t.Fatal(err)
		}
	}
	migrated := time.Now()
	db, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	have := func(store, id string) bool {
		_, err := db.Request(ctx, store, id)
		if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	if _, err := db.SweepExpired(ctx, migrated.Add(kassa.RequestWindow-time.Minute)); err != nil {
		t.Fatal(err)
	}
	if !have("s1", "req_1") {
		t.Fatal("a record stored before the migration expired sooner than a RequestWindow after it")
	}
	if _, err := db.SweepExpired(ctx, time.Now().Add(kassa.RequestWindow+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if have("s1", "req_1") {
		t.Fatal("a record stored before the migration is kept past its window")
	}
	if !have("pool", "bcrt1qaddr") {
		t.Fatal("a pool address's record was deleted")
	}
}
