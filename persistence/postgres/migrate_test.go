package postgres

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/persistence/format"
)

// TestMigrationLookupColumns: a database written by schema 5 (the
// address and payment hash of an invoice in lookup tables) is migrated
// to the columns of the invoice's row: every invoice is found by its
// address and by its hash, an address reused by a newer invoice still
// names the newer one, an invoice without either has neither, and the
// lookup tables are gone. Creates after the migration keep the rules:
// a new invoice with a reused address takes it, and one with a fresh
// address is found by it.
func TestMigrationLookupColumns(t *testing.T) {
	ctx := t.Context()
	harness.SkipShort(t, "PostgreSQL")
	dsn, pool := schemaAt(t, 5)
	// Schema 5's writes of a new invoice (PutInvoice before 6).
	const n = 50
	old := func(inv *kassa.Invoice) {
		t.Helper()
		doc, err := format.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc) VALUES ($1, $2, $3, 1, $4)`,
			inv.ID, inv.StoreID, ms(inv.CreatedAt), doc); err != nil {
			t.Fatal(err)
		}
		if inv.OnchainAddress != "" {
			if _, err := pool.Exec(ctx, `INSERT INTO invoice_addresses (address, invoice_id) VALUES ($1, $2)
				ON CONFLICT (address) DO UPDATE SET invoice_id = EXCLUDED.invoice_id`, inv.OnchainAddress, inv.ID); err != nil {
				t.Fatal(err)
			}
		}
		if inv.PaymentHash != "" {
			if _, err := pool.Exec(ctx, `INSERT INTO invoice_payment_hashes (hash, invoice_id) VALUES ($1, $2)
				ON CONFLICT (hash) DO UPDATE SET invoice_id = EXCLUDED.invoice_id`, inv.PaymentHash, inv.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	byAddress, byHash := map[string]string{}, map[string]string{}
	for i := range n {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%02d", i), "s1", kassatest.Epoch)
		switch i % 5 {
		case 1: // on-chain only
			inv.OnchainAddress = fmt.Sprintf("bcrt1q%02d", i)
		case 2: // Lightning only
			inv.PaymentHash = fmt.Sprintf("hash_%02d", i)
		case 3: // neither (a zero-amount invoice, say)
		default:
			inv.OnchainAddress, inv.PaymentHash = fmt.Sprintf("bcrt1q%02d", i), fmt.Sprintf("hash_%02d", i)
		}
		if i == n-1 { // reuses the first invoice's address and hash
			inv.OnchainAddress, inv.PaymentHash = "bcrt1q00", "hash_00"
		}
		old(inv)
		if inv.OnchainAddress != "" {
			byAddress[inv.OnchainAddress] = inv.ID
		}
		if inv.PaymentHash != "" {
			byHash[inv.PaymentHash] = inv.ID
		}
	}
	if byAddress["bcrt1q00"] != "inv_49" || byHash["hash_00"] != "inv_49" {
		t.Fatal("the test's reused address and hash are not the newest invoice's")
	}

	db := openTestDSN(t, dsn)
	for addr, want := range byAddress {
		if id, err := db.InvoiceIDByAddress(ctx, addr); id != want || err != nil {
			t.Errorf("after the migration, InvoiceIDByAddress(%s) = %q, %v; want %s", addr, id, err, want)
		}
	}
	for hash, want := range byHash {
		if id, err := db.InvoiceIDByPaymentHash(ctx, hash); id != want || err != nil {
			t.Errorf("after the migration, InvoiceIDByPaymentHash(%s) = %q, %v; want %s", hash, id, err, want)
		}
	}
	for i := range n {
		id := fmt.Sprintf("inv_%02d", i)
		if inv, err := db.Invoice(ctx, id); err != nil || inv.ID != id {
			t.Errorf("after the migration, Invoice(%s) = %v, %v", id, inv, err)
		}
	}
	var set int
	if err := db.pool.QueryRow(ctx, `SELECT count(address) + count(payment_hash) FROM invoices`).Scan(&set); err != nil {
		t.Fatal(err)
	}
	if set != len(byAddress)+len(byHash) {
		t.Errorf("addresses and hashes in the invoices' rows = %d, want %d", set, len(byAddress)+len(byHash))
	}
	var left int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_schema = current_schema()
		AND table_name IN ('invoice_addresses', 'invoice_payment_hashes')`).Scan(&left); err != nil || left != 0 {
		t.Errorf("lookup tables left after the migration: %d, %v", left, err)
	}

	again := kassatest.NewInvoice("inv_again", "s1", kassatest.Epoch)
	again.OnchainAddress, again.PaymentHash = "bcrt1q04", "hash_02"
	fresh := kassatest.NewInvoice("inv_fresh", "s1", kassatest.Epoch)
	fresh.OnchainAddress, fresh.PaymentHash = "bcrt1qfresh", "hash_fresh"
	for _, inv := range []*kassa.Invoice{again, fresh} {
		commitT(t, db, func(b kassa.Batch) {
			b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte("created"))
			b.PutInvoice(inv, nil, 1)
		})
		if id, err := db.InvoiceIDByAddress(ctx, inv.OnchainAddress); id != inv.ID || err != nil {
			t.Errorf("InvoiceIDByAddress(%s) = %q, %v; want %s", inv.OnchainAddress, id, err, inv.ID)
		}
		if id, err := db.InvoiceIDByPaymentHash(ctx, inv.PaymentHash); id != inv.ID || err != nil {
			t.Errorf("InvoiceIDByPaymentHash(%s) = %q, %v; want %s", inv.PaymentHash, id, err, inv.ID)
		}
	}
	if id, err := db.InvoiceIDByPaymentHash(ctx, "hash_04"); id != "inv_04" || err != nil {
		t.Errorf("InvoiceIDByPaymentHash(hash_04) = %q, %v; want inv_04 (only its address was taken)", id, err)
	}
}

// schemaAt makes a fresh schema on the test server migrated to its
// first n migrations, as an older Kassa left it, and returns its DSN and
// a pool on it (closed when the test ends).
func schemaAt(t *testing.T, n int) (string, *pgxpool.Pool) {
	t.Helper()
	dsn := newSchema(t)
	pool, err := pgxpool.New(t.Context(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	if err := migrateTo(t.Context(), pool, migrations[:n], nil); err != nil {
		t.Fatal(err)
	}
	return dsn, pool
}

// TestMigrationSearchTerms: the invoices of a database written by
// schema 6 (no search terms) are found by order id (OrderID, or
// metadata.orderId without it), e-mail and id once migrated, more than
// a fill page of them, and their progress is logged.
func TestMigrationSearchTerms(t *testing.T) {
	ctx := t.Context()
	harness.SkipShort(t, "PostgreSQL")
	dsn, pool := schemaAt(t, 6)
	const n = fillPage + 7
	rows := make([][]any, 0, n)
	for i := range n {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%05d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		inv.BuyerEmail = fmt.Sprintf("Buyer%d@Example.com", i)
		if i%2 == 0 {
			inv.OrderID = fmt.Sprintf("ORD-%d", i)
		} else {
			inv.Metadata = json.RawMessage(fmt.Sprintf(`{"orderId":"ORD-%d"}`, i))
		}
		doc, err := format.Marshal(inv)
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, []any{inv.ID, inv.StoreID, ms(inv.CreatedAt), int64(1), doc})
	}
	if _, err := pool.CopyFrom(ctx, pgx.Identifier{"invoices"}, []string{"id", "store_id", "created_ms", "seq", "doc"}, pgx.CopyFromRows(rows)); err != nil {
		t.Fatal(err)
	}
	var logs kassatest.LogBuffer
	db, err := Open(ctx, dsn, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	find := func(q kassa.SearchQuery, want ...string) {
		t.Helper()
		var ids []string
		if _, err := db.SearchInvoices(ctx, "s1", q, func(inv *kassa.Invoice) error { ids = append(ids, inv.ID); return nil }); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(ids, want) {
			t.Errorf("after the migration, SearchInvoices(%+v) = %v, want %v", q, ids, want)
		}
	}
	find(kassa.SearchQuery{Text: "ord-1006", Exact: true}, "inv_01006")
	find(kassa.SearchQuery{Text: "ord-1005", Exact: true}, "inv_01005")
	find(kassa.SearchQuery{Text: "buyer3@example.COM", In: kassa.SearchEmail}, "inv_00003")
	find(kassa.SearchQuery{Text: "ord-100", ListQuery: kassa.ListQuery{Limit: 3}}, "inv_01006", "inv_01005", "inv_01004")
	find(kassa.SearchQuery{Text: "INV_00002"}, "inv_00002")
	if !strings.Contains(logs.String(), "indexed invoices for search") || !strings.Contains(logs.String(), fmt.Sprint("invoices=", n)) {
		t.Errorf("the migration's log says nothing of the %d invoices indexed: %s", n, logs.String())
	}
}
