package persistence

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestSearchIndexBuiltAtOpen: a store written before the search index
// (its invoices without search keys, no "ver/search") is indexed once
// when opened, with its progress logged; the next open does not walk
// the invoices again.
func TestSearchIndexBuiltAtOpen(t *testing.T) {
	ctx := t.Context()
	fs := vfs.NewMem()
	db, err := Open("kassa", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	const n = indexBatch + 5
	b := db.NewBatch()
	for i := range n {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%05d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		inv.OrderID, inv.BuyerEmail = fmt.Sprintf("ORD-%d", i), fmt.Sprintf("Buyer%d@Example.com", i)
		b.PutInvoice(inv, nil, 1)
	}
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	// What an older Kassa left: the invoices without their search keys.
	if err := db.db.DeleteRange([]byte("isr/"), prefixEnd([]byte("isr/")), pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.db.Delete(searchVersionKey, pebble.Sync); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	var logs kassatest.LogBuffer
	db, err = Open("kassa", Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	find := func(q kassa.SearchQuery, want ...string) {
		t.Helper()
		var ids []string
		if _, err := db.SearchInvoices(ctx, "s1", q, func(inv *kassa.Invoice) error { ids = append(ids, inv.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("SearchInvoices(%+v) = %v, want %v", q, ids, want)
		}
	}
	find(kassa.SearchQuery{Text: "ord-1004", Exact: true}, "inv_01004")
	find(kassa.SearchQuery{Text: "BUYER7@", In: kassa.SearchEmail}, "inv_00007")
	find(kassa.SearchQuery{Text: "ord-100", ListQuery: kassa.ListQuery{Limit: 2}}, "inv_01004", "inv_01003")
	if !strings.Contains(logs.String(), fmt.Sprint("invoices=", n)) {
		t.Errorf("the open's log says nothing of the %d invoices indexed: %s", n, logs.String())
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	var again kassatest.LogBuffer
	db, err = Open("kassa", Options{FS: fs, Logger: slog.New(slog.NewTextHandler(&again, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if strings.Contains(again.String(), "indexed") {
		t.Errorf("a second open indexed again: %s", again.String())
	}
}

// BenchmarkSearchOrderID looks up one order id (exact) in a store of
// 100,000 invoices written in bulk, each with an order id and an e-mail,
// and reports the disk the store takes per invoice once compacted.
func BenchmarkSearchOrderID(b *testing.B) {
	const n = 100_000
	ctx := context.Background()
	dir := b.TempDir()
	db, err := Open(dir, Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	start := time.Now()
	for i := 0; i < n; i += 1000 {
		batch := db.NewBatch()
		for j := i; j < i+1000; j++ {
			inv := kassatest.NewInvoice(kassa.NewID(""), "st_bench", kassatest.Epoch.Add(time.Duration(j)*time.Second))
			inv.OrderID, inv.BuyerEmail = fmt.Sprintf("ord-inr-%d", j), fmt.Sprintf("buyer%d@example.com", j)
			batch.PutInvoice(inv, nil, 1)
		}
		if err := db.Commit(ctx, batch); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.CompactAll(ctx); err != nil {
		b.Fatal(err)
	}
	index, err := db.db.EstimateDiskUsage([]byte("isr/"), prefixEnd([]byte("isr/")))
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("wrote %d invoices in %v; %d bytes on disk per invoice, of which the search index about %d",
		n, time.Since(start).Round(time.Millisecond), dirSize(b, dir)/n, index/n)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		q := kassa.SearchQuery{Text: fmt.Sprintf("ORD-INR-%d", i*7919%n), In: kassa.SearchOrderID, Exact: true, ListQuery: kassa.ListQuery{Limit: 50}}
		found := 0
		if _, err := db.SearchInvoices(ctx, "st_bench", q, func(*kassa.Invoice) error { found++; return nil }); err != nil || found != 1 {
			b.Fatalf("search %q: %d found, %v", q.Text, found, err)
		}
	}
}

func dirSize(tb testing.TB, dir string) int64 {
	var size int64
	err := filepath.Walk(dir, func(_ string, fi os.FileInfo, err error) error {
		if err == nil && !fi.IsDir() {
			size += fi.Size()
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return size
}
