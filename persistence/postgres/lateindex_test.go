package postgres

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kassapay/kassa/kassatest"
)

// schemaIndexes are the definitions of every index of the schema at this
// binary's version (pg_get_indexdef without the schema's name), the same
// whether the migrations ran in one transaction or built their late
// indexes after it: a database at a version has one schema.
var schemaIndexes = []string{
	`CREATE UNIQUE INDEX api_keys_pkey ON api_keys USING btree (key_hash)`,
	`CREATE UNIQUE INDEX balances_pkey ON balances USING btree (store_id)`,
	`CREATE INDEX deliveries_by_webhook ON deliveries USING btree (webhook_id, created_ms, id)`,
	`CREATE UNIQUE INDEX deliveries_pkey ON deliveries USING btree (id)`,
	`CREATE UNIQUE INDEX events_pkey ON events USING btree (kind, stream, seq)`,
	`CREATE UNIQUE INDEX forward_queue_pkey ON forward_queue USING btree (store_id, transaction_id)`,
	`CREATE UNIQUE INDEX forwards_pkey ON forwards USING btree (id)`,
	`CREATE UNIQUE INDEX invoices_by_address ON invoices USING btree (address) WHERE (address IS NOT NULL)`,
	`CREATE INDEX invoices_by_email_key ON invoices USING btree (store_id, email_key, created_ms, id) WHERE (email_key IS NOT NULL)`,
	`CREATE INDEX invoices_by_order_key ON invoices USING btree (store_id, order_key, created_ms, id) WHERE (order_key IS NOT NULL)`,
	`CREATE UNIQUE INDEX invoices_by_payment_hash ON invoices USING btree (payment_hash) WHERE (payment_hash IS NOT NULL)`,
	`CREATE INDEX invoices_by_store ON invoices USING btree (store_id, created_ms, id)`,
	`CREATE INDEX invoices_by_watch_tx ON invoices USING btree (watch_tx, id) WHERE ((address IS NOT NULL) AND (watch_tx IS NOT NULL))`,
	`CREATE UNIQUE INDEX invoices_pkey ON invoices USING btree (id)`,
	`CREATE INDEX invoices_with_address_by_created ON invoices USING btree (created_ms, id) WHERE (address IS NOT NULL)`,
	`CREATE INDEX kv_by_expiry ON kv USING btree (expires_ms)`,
	`CREATE UNIQUE INDEX kv_pkey ON kv USING btree (key)`,
	`CREATE UNIQUE INDEX leases_pkey ON leases USING btree (role)`,
	`CREATE INDEX open_forwards ON forwards USING btree (store_id, id) WHERE open`,
	`CREATE INDEX open_invoices_by_deadline ON open_invoices USING btree (deadline_ms, invoice_id)`,
	`CREATE UNIQUE INDEX open_invoices_pkey ON open_invoices USING btree (invoice_id)`,
	`CREATE INDEX outbox_by_delivery ON outbox USING btree (webhook_id, delivery_id)`,
	`CREATE INDEX outbox_claimed ON outbox USING btree (webhook_id, claim_expires_ms) WHERE (claimed_by IS NOT NULL)`,
	`CREATE UNIQUE INDEX outbox_pkey ON outbox USING btree (webhook_id, seq)`,
	`CREATE INDEX payment_requests_by_store ON payment_requests USING btree (store_id, created_ms, id)`,
	`CREATE UNIQUE INDEX payment_requests_paid_pkey ON payment_requests_paid USING btree (id)`,
	`CREATE UNIQUE INDEX payment_requests_pkey ON payment_requests USING btree (id)`,
	`CREATE INDEX payouts_by_store ON payouts USING btree (store_id, created_ms, id)`,
	`CREATE UNIQUE INDEX payouts_pkey ON payouts USING btree (id)`,
	`CREATE INDEX payouts_to_send ON payouts USING btree (id) WHERE to_send`,
	`CREATE INDEX pull_payments_by_store ON pull_payments USING btree (store_id, created_ms, id)`,
	`CREATE UNIQUE INDEX pull_payments_pkey ON pull_payments USING btree (id)`,
	`CREATE INDEX requests_by_age ON requests USING btree (at_ms) WHERE (kind <> 'pooladdress'::text)`,
	`CREATE UNIQUE INDEX requests_pkey ON requests USING btree (store_id, request_id)`,
	`CREATE UNIQUE INDEX schema_migrations_pkey ON schema_migrations USING btree (version)`,
	`CREATE UNIQUE INDEX sim_state_pkey ON sim_state USING btree (space, key)`,
	`CREATE UNIQUE INDEX store_history_pkey ON store_history USING btree (store_id, seq)`,
	`CREATE UNIQUE INDEX stores_pkey ON stores USING btree (id)`,
	`CREATE INDEX transactions_by_invoice ON transactions USING btree (invoice_id, id) WHERE (invoice_id IS NOT NULL)`,
	`CREATE INDEX transactions_by_store ON transactions USING btree (store_id, created_ms, id)`,
	`CREATE UNIQUE INDEX transactions_pkey ON transactions USING btree (id)`,
	`CREATE INDEX webhooks_by_store ON webhooks USING btree (store_id, id)`,
	`CREATE UNIQUE INDEX webhooks_pkey ON webhooks USING btree (id)`,
}

// indexState is the definition of each index of the schema of pool's
// search path, and whether it is valid.
func indexState(t *testing.T, pool *pgxpool.Pool) (defs []string, invalid []string) {
	t.Helper()
	rows, err := pool.Query(t.Context(), `SELECT c.relname, replace(pg_get_indexdef(c.oid), current_schema() || '.', ''), i.indisvalid
		FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = current_schema() ORDER BY c.relname`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var name, def string
		var valid bool
		if err := rows.Scan(&name, &def, &valid); err != nil {
			t.Fatal(err)
		}
		defs = append(defs, def)
		if !valid {
			invalid = append(invalid, name)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return defs, invalid
}

// checkIndexes fails t unless the schema of pool has exactly
// schemaIndexes, all valid.
func checkIndexes(t *testing.T, pool *pgxpool.Pool, when string) {
	t.Helper()
	defs, invalid := indexState(t, pool)
	if len(invalid) > 0 {
		t.Errorf("%s, INVALID indexes: %v", when, invalid)
	}
	for _, d := range defs {
		if !slices.Contains(schemaIndexes, d) {
			t.Errorf("%s, an index not in the schema: %s", when, d)
		}
	}
	for _, d := range schemaIndexes {
		if !slices.Contains(defs, d) {
			t.Errorf("%s, an index missing: %s", when, d)
		}
	}
}

// lateIndexNames are the names of all late indexes.
func lateIndexNames() []string {
	var names []string
	for v := range len(migrations) + 1 {
		for _, ix := range lateIndexes[v] {
			names = append(names, ix.name)
		}
	}
	return names
}

// TestMigrationIndexesFresh: a fresh database ends with the schema's
// every index, all valid; so does one at each version before a
// migration with late indexes, once a start migrates it (building them
// after the migration commits).
func TestMigrationIndexesFresh(t *testing.T) {
	checkIndexes(t, openTest(t).pool, "on a fresh database")
	names := lateIndexNames()
	for _, name := range []string{"invoices_by_watch_tx", "invoices_with_address_by_created"} {
		if !slices.Contains(names, name) {
			t.Errorf("%s is built in its migration's transaction, not late", name)
		}
	}
	for v := 1; v < len(migrations); v++ {
		if len(lateIndexes[v+1]) == 0 {
			continue
		}
		dsn, pool := schemaAt(t, v)
		openTestDSN(t, dsn)
		checkIndexes(t, pool, fmt.Sprintf("from version %d", v))
	}
}

// TestMigrationIndexesRebuilt: a database whose migrations committed
// but whose late indexes were not built (one missing, one INVALID, left
// by a failed concurrent build) gets them built and valid, to their
// definitions, at the next start.
func TestMigrationIndexesRebuilt(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, len(migrations))
	// Two invoices with an address created in the same millisecond, so
	// that a unique build on created_ms fails.
	for _, id := range []string{"inv_1", "inv_2"} {
		if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ($1, 's1', 1000, 1, '\x7b7d', $1)`, id); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `DROP INDEX invoices_by_watch_tx`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `DROP INDEX invoices_with_address_by_created`); err != nil {
		t.Fatal(err)
	}
	var pgErr *pgconn.PgError
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY invoices_with_address_by_created ON invoices (created_ms) WHERE address IS NOT NULL`); !errors.As(err, &pgErr) || pgErr.Code != "23505" {
		t.Fatalf("the failing build: %v, want a unique violation", err)
	}
	if _, invalid := indexState(t, pool); !slices.Equal(invalid, []string{"invoices_with_address_by_created"}) {
		t.Fatalf("INVALID indexes before the start: %v, want the failed build's", invalid)
	}

	var logs kassatest.LogBuffer
	db, err := Open(ctx, dsn, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	checkIndexes(t, db.pool, "after the next start")
	for _, name := range []string{"invoices_by_watch_tx", "invoices_with_address_by_created"} {
		if !strings.Contains(logs.String(), `msg="store: built index" index=`+name+" elapsed=") {
			t.Errorf("the log tells no build of %s with its duration:\n%s", name, logs.String())
		}
	}
	var n int
	if err := db.pool.QueryRow(ctx, `SELECT count(*) FROM invoices WHERE address IS NOT NULL AND created_ms >= 0`).Scan(&n); err != nil || n != 2 {
		t.Errorf("invoices with an address after the rebuild: %d, %v; want 2", n, err)
	}
}

// TestMigrationIndexesOneNodeAtATime: a start that finds a late index
// INVALID while another node holds the index lock (building it) waits,
// leaving the index alone, and builds it once the lock is free.
func TestMigrationIndexesOneNodeAtATime(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, len(migrations))
	if _, err := pool.Exec(ctx, `DROP INDEX invoices_with_address_by_created`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ('inv_1', 's1', 1000, 1, '\x7b7d', 'a1'), ('inv_2', 's1', 1000, 1, '\x7b7d', 'a2')`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, `CREATE UNIQUE INDEX CONCURRENTLY invoices_with_address_by_created ON invoices (created_ms) WHERE address IS NOT NULL`); err == nil {
		t.Fatal("the failing build succeeded")
	}
	// The other node: a session holding the index lock.
	other, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close(context.WithoutCancel(ctx))
	if err := lockIndexes(ctx, other, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}

	var logs kassatest.LogBuffer
	opened := openAsync(t, dsn, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const waiting = "waiting for another node's index build"
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), waiting); {
		select {
		case err := <-opened:
			t.Fatalf("the start returned (%v) while another node held the index lock, without waiting:\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the start never waited for the index lock:\n%s", logs.String())
		}
	}
	time.Sleep(3 * indexLockPoll)
	if _, invalid := indexState(t, pool); !slices.Equal(invalid, []string{"invoices_with_address_by_created"}) {
		t.Errorf("INVALID indexes while another node holds the lock: %v, want the other's build left alone", invalid)
	}
	if _, err := other.Exec(ctx, `SELECT pg_advisory_unlock($1)`, int64(indexLock)); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, pool, "once the lock was free")
}

// openAsync opens the store at dsn in a goroutine; the channel gives
// Open's error, and the store is closed when t ends. The open is
// cancelled when t ends.
func openAsync(t *testing.T, dsn string, o Options) <-chan error {
	t.Helper()
	var db *DB
	opened, finished := make(chan error, 1), make(chan struct{})
	go func() {
		defer close(finished)
		var err error
		db, err = Open(t.Context(), dsn, o)
		opened <- err
	}()
	t.Cleanup(func() {
		<-finished
		if db != nil {
			db.Close()
		}
	})
	return opened
}

// TestMigrationIndexDoesNotBlockWrites: while a late index's build waits
// for a transaction that wrote to invoices and stays open, an INSERT
// into invoices from a third session completes: the build takes no
// lock that stops writes (CREATE INDEX in the migration's transaction
// would queue a SHARE lock that every later write waits behind).
func TestMigrationIndexDoesNotBlockWrites(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, 12)
	held, heldPID := holdInvoiceWrite(t, pool)
	// Rolled back before the starts' cleanups wait for them, which would
	// wait for it.
	defer held.Rollback(context.WithoutCancel(ctx))

	opened := openAsync(t, dsn, Options{})
	// The start's index build waits for the held transaction.
	waitBlockedBy(t, pool, heldPID, opened, "the start")

	third, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close(context.WithoutCancel(ctx))
	if _, err := third.Exec(ctx, `SET lock_timeout = '5s'`); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := third.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ('inv_during', 's1', 1001, 1, '\x7b7d', 'a2')`); err != nil {
		t.Errorf("a write to invoices during the index build: %v after %v", err, time.Since(start).Round(time.Millisecond))
	}

	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-opened; err != nil {
		t.Fatal(err)
	}
	checkIndexes(t, pool, "after the start")
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM invoices`).Scan(&n); err != nil || n != 2 {
		t.Errorf("invoices after the start: %d, %v; want 2", n, err)
	}
}

// TestMigrationIndexesTwoNodesAtOnce: two nodes start on a database
// whose late indexes are missing; the first one's build waits for a
// transaction left open, the second waits for the first, and both start
// once the transaction ends. A second node that waited inside a
// statement would hold a snapshot the first one's concurrent build waits
// for: a deadlock.
func TestMigrationIndexesTwoNodesAtOnce(t *testing.T) {
	ctx := t.Context()
	dsn, pool := schemaAt(t, len(migrations))
	if _, err := pool.Exec(ctx, `DROP INDEX invoices_by_watch_tx; DROP INDEX invoices_with_address_by_created`); err != nil {
		t.Fatal(err)
	}
	held, heldPID := holdInvoiceWrite(t, pool)
	// Rolled back before the starts' cleanups wait for them, which would
	// wait for it.
	defer held.Rollback(context.WithoutCancel(ctx))

	first := openAsync(t, dsn, Options{})
	waitBlockedBy(t, pool, heldPID, first, "the first start")
	var logs kassatest.LogBuffer
	second := openAsync(t, dsn, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for deadline := time.Now().Add(20 * time.Second); !strings.Contains(logs.String(), "waiting for another node's index build"); {
		select {
		case err := <-second:
			t.Fatalf("the second start returned (%v) during the first one's build:\n%s", err, logs.String())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the second start never waited for the first:\n%s", logs.String())
		}
	}
	time.Sleep(3 * indexLockPoll)
	if err := held.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Errorf("the first start: %v", err)
	}
	if err := <-second; err != nil {
		t.Errorf("the second start: %v", err)
	}
	checkIndexes(t, pool, "after both starts")
}

// holdInvoiceWrite opens a transaction that writes a row of invoices and
// stays open until the caller ends it; it returns the transaction and
// its server process id.
func holdInvoiceWrite(t *testing.T, pool *pgxpool.Pool) (pgx.Tx, int) {
	t.Helper()
	ctx := t.Context()
	held, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := held.Exec(ctx, `INSERT INTO invoices (id, store_id, created_ms, seq, doc, address) VALUES ('inv_held', 's1', 1000, 1, '\x7b7d', 'a1')`); err != nil {
		t.Fatal(err)
	}
	var pid int
	if err := held.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	return held, pid
}

// waitBlockedBy waits until some session waits for the server process
// pid (an index build waiting for its open transaction), failing if the
// start who (its result on started) returns first or none waits in 20 s.
func waitBlockedBy(t *testing.T, pool *pgxpool.Pool, pid int, started <-chan error, who string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); ; {
		var blocked int
		if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))`, pid).Scan(&blocked); err != nil {
			t.Fatal(err)
		}
		if blocked > 0 {
			return
		}
		select {
		case err := <-started:
			t.Fatalf("%s returned (%v) without waiting for the open transaction", who, err)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("no index build waited for the open transaction")
		}
	}
}
