package persistence

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestRequestRecordsOfOlderBuildsExpire: request records an older Kassa
// wrote (no time, no age key, no "ver/requests") are given one at Open,
// stamped with the clock then, so they expire a RequestWindow later and
// not sooner; a pool address's record is left alone; the next Open does
// not walk them again.
func TestRequestRecordsOfOlderBuildsExpire(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db, err := Open("kassa", Options{FS: fs, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	// What an older Kassa left: records without a time or an age key.
	for _, r := range []kassa.RequestRecord{
		{StoreID: "s1", ID: "req_1", Kind: kassa.RequestInvoice, ResultID: "inv_1"},
		{StoreID: "pool", ID: "bcrt1qaddr", Kind: kassa.RequestPoolAddress, ResultID: "inv_1"},
	} {
		doc, _ := json.Marshal(r)
		if err := db.db.Set(requestKey(r.StoreID, r.ID), doc, pebble.Sync); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.db.Delete(requestAgeVersionKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	opened := kassatest.Epoch.Add(30 * 24 * time.Hour)
	clock.Advance(opened.Sub(kassatest.Epoch))
	var logs kassatest.LogBuffer
	db, err = Open("kassa", Options{FS: fs, Clock: clock, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !strings.Contains(logs.String(), "records=1") {
		t.Errorf("the open's log does not count the one record given an age: %s", logs.String())
	}
	have := func(store, id string) bool {
		_, err := db.Request(ctx, store, id)
		if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
			t.Fatal(err)
		}
		return err == nil
	}
	if _, err := db.SweepExpired(ctx, opened.Add(kassa.RequestWindow)); err != nil {
		t.Fatal(err)
	}
	if !have("s1", "req_1") {
		t.Fatal("an older build's record expired sooner than a RequestWindow after the open that aged it")
	}
	if _, err := db.SweepExpired(ctx, opened.Add(kassa.RequestWindow+time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if have("s1", "req_1") {
		t.Fatal("an older build's record is kept past its window")
	}
	if !have("pool", "bcrt1qaddr") {
		t.Fatal("a pool address's record was deleted")
	}
}
