package postgres

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
)

// TestOutageIsUnavailable: while PostgreSQL is down, reads, commits and
// small values fail with the code Unavailable (the API's 503 with
// Retry-After), not as internal errors (500); once it is back the same
// handle works again by itself. Before, every such error was a bare
// driver error: "internal", 500.
func TestOutageIsUnavailable(t *testing.T) {
	srv, dsn := harness.PostgresForTest(t)
	db := openTestDSN(t, dsn)
	st := &kassa.Store{ID: "shop", Name: "Shop", Currency: kassa.EUR}
	kassatest.Commit(t, db, func(b kassa.Batch) { b.PutStore(st, 1) })

	if err := srv.Down(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	_, readErr := db.Store(ctx, "shop")
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: "shop"}, 2, []byte("x"))
	commitErr := db.Commit(ctx, b)
	_, _, kvErr := db.GetValue(ctx, "k")
	_, reqErr := db.Request(ctx, "shop", "req_1")
	for what, err := range map[string]error{"read": readErr, "commit": commitErr, "value": kvErr, "request": reqErr} {
		if kassa.ErrorCode(err) != kassa.Unavailable {
			t.Errorf("%s while PostgreSQL is down: %v (code %s), want unavailable", what, err, kassa.ErrorCode(err))
		}
	}

	if err := srv.Up(); err != nil {
		t.Fatal(err)
	}
	kassatest.WaitUntil(t, "the store read again after PostgreSQL came back", func() bool {
		got, err := db.Store(t.Context(), "shop")
		return err == nil && got.Name == "Shop"
	})
	kassatest.Commit(t, db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: "shop"}, 2, []byte("x"))
	})
}
