package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
)

// migrations are the schema's versions, applied in order. The schema a
// database at a version has, its late indexes (lateIndexes) included,
// never changes: a change of schema is a new entry, and a released
// entry changes only in how it reaches its schema (a database that
// applied it never runs it again).
var migrations = []string{
	// 1: journal, snapshots, read model, ledger, outbox, small values.
	`CREATE TABLE events (
		kind text COLLATE "C" NOT NULL,
		stream text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		data bytea NOT NULL,
		PRIMARY KEY (kind, stream, seq)
	);
	CREATE TABLE stores (
		id text COLLATE "C" PRIMARY KEY,
		seq bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE TABLE api_keys (
		key_hash text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL
	);
	CREATE TABLE invoices (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		created_ms bigint NOT NULL,
		seq bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX invoices_by_store ON invoices (store_id, created_ms, id);
	CREATE TABLE invoice_addresses (
		address text COLLATE "C" PRIMARY KEY,
		invoice_id text COLLATE "C" NOT NULL
	);
	CREATE TABLE invoice_payment_hashes (
		hash text COLLATE "C" PRIMARY KEY,
		invoice_id text COLLATE "C" NOT NULL
	);
	CREATE TABLE open_invoices (
		invoice_id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		deadline_ms bigint NOT NULL
	);
	CREATE INDEX open_invoices_by_deadline ON open_invoices (deadline_ms, invoice_id);
	CREATE SEQUENCE transaction_ids;
	CREATE TABLE transactions (
		id bigint PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		invoice_id text COLLATE "C",
		created_ms bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX transactions_by_store ON transactions (store_id, created_ms, id);
	CREATE INDEX transactions_by_invoice ON transactions (invoice_id, id) WHERE invoice_id IS NOT NULL;
	CREATE TABLE balances (
		store_id text COLLATE "C" PRIMARY KEY,
		balance bigint NOT NULL
	);
	CREATE TABLE payment_requests (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		created_ms bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX payment_requests_by_store ON payment_requests (store_id, created_ms, id);
	CREATE TABLE payment_requests_paid (
		id text COLLATE "C" PRIMARY KEY,
		invoice_id text COLLATE "C" NOT NULL
	);
	CREATE TABLE webhooks (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX webhooks_by_store ON webhooks (store_id, id);
	CREATE TABLE deliveries (
		id text COLLATE "C" PRIMARY KEY,
		webhook_id text COLLATE "C" NOT NULL,
		created_ms bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX deliveries_by_webhook ON deliveries (webhook_id, created_ms, id);
	CREATE SEQUENCE outbox_seqs;
	CREATE TABLE outbox (
		webhook_id text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		delivery_id text COLLATE "C" NOT NULL,
		PRIMARY KEY (webhook_id, seq)
	);
	CREATE TABLE kv (
		key text COLLATE "C" PRIMARY KEY,
		value bytea NOT NULL,
		expires_ms bigint NOT NULL
	);
	CREATE INDEX kv_by_expiry ON kv (expires_ms);`,
	// 2: the forward queue and forwards, the simulators' state.
	`CREATE TABLE forward_queue (
		store_id text COLLATE "C" NOT NULL,
		transaction_id bigint NOT NULL,
		doc bytea NOT NULL,
		PRIMARY KEY (store_id, transaction_id)
	);
	CREATE TABLE forwards (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		open boolean NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX open_forwards ON forwards (store_id, id) WHERE open;
	CREATE TABLE sim_state (
		space text COLLATE "C" NOT NULL,
		key text COLLATE "C" NOT NULL,
		value bytea NOT NULL,
		PRIMARY KEY (space, key)
	);`,
	// 3: cluster mode: claims on outbox deliveries and on overdue
	// invoices, and the leases of the roles one node runs at a time.
	`ALTER TABLE outbox ADD COLUMN claimed_by text COLLATE "C";
	ALTER TABLE outbox ADD COLUMN claim_expires_ms bigint NOT NULL DEFAULT 0;
	ALTER TABLE open_invoices ADD COLUMN claimed_by text COLLATE "C";
	ALTER TABLE open_invoices ADD COLUMN claim_expires_ms bigint NOT NULL DEFAULT 0;
	CREATE TABLE leases (
		role text COLLATE "C" PRIMARY KEY,
		holder text COLLATE "C" NOT NULL,
		epoch bigint NOT NULL,
		expires_ms bigint NOT NULL
	);`,
	// 4: a pending delivery's not-before time in the outbox, so that a
	// retry waiting for its time holds none of its endpoint's later
	// deliveries back from a claim (docs/decisions.md, "Outbox
	// claims"); filled in from the deliveries already pending.
	`ALTER TABLE outbox ADD COLUMN not_before_ms bigint NOT NULL DEFAULT 0;
	UPDATE outbox o SET not_before_ms = (extract(epoch FROM (convert_from(d.doc, 'UTF8')::jsonb->>'notBefore')::timestamptz) * 1000)::bigint
		FROM deliveries d
		WHERE d.id = o.delivery_id AND convert_from(d.doc, 'UTF8')::jsonb ? 'notBefore';`,
	// 5: the request ids of creates (kassa.RequestBatch), written in the
	// create's own transaction: a retry on any node finds what the first
	// attempt created (docs/decisions.md, "One create per request").
	`CREATE TABLE requests (
		store_id text COLLATE "C" NOT NULL,
		request_id text COLLATE "C" NOT NULL,
		doc bytea NOT NULL,
		PRIMARY KEY (store_id, request_id)
	);`,
	// 6: an invoice's address and payment hash are columns of its row,
	// unique where set, instead of rows of two lookup tables: a create
	// writes one row where it wrote three (docs/decisions.md, "PostgreSQL
	// store"). The lookups' rows move into the columns; an address or
	// hash names one invoice in either schema. Its two unique indexes are
	// built in the transaction, not by buildIndexes: the committer tells
	// a reused address or hash by their violation (lookupIndexes), so
	// they enforce the rule from the commit on.
	`ALTER TABLE invoices ADD COLUMN address text COLLATE "C";
	ALTER TABLE invoices ADD COLUMN payment_hash text COLLATE "C";
	UPDATE invoices i SET address = a.address FROM invoice_addresses a WHERE a.invoice_id = i.id;
	UPDATE invoices i SET payment_hash = h.hash FROM invoice_payment_hashes h WHERE h.invoice_id = i.id;
	CREATE UNIQUE INDEX invoices_by_address ON invoices (address) WHERE address IS NOT NULL;
	CREATE UNIQUE INDEX invoices_by_payment_hash ON invoices (payment_hash) WHERE payment_hash IS NOT NULL;
	DROP TABLE invoice_addresses;
	DROP TABLE invoice_payment_hashes;`,
	// 7: the search terms of an invoice (kassa.Invoice.SearchTerms:
	// folded in Go, by one rule with the Pebble store) are columns of
	// its row, written by the statements that write the row, with an
	// index per term under the store (docs/decisions.md, "Invoice
	// search"), built by buildIndexes. The terms of the invoices already
	// stored are filled in by fillSearchTerms in the same transaction.
	`ALTER TABLE invoices ADD COLUMN order_key text COLLATE "C";
	ALTER TABLE invoices ADD COLUMN email_key text COLLATE "C";`,
	// 8: refunds: pull payments and payouts, with a partial index of the
	// payouts to send (docs/decisions.md, "Refunds: pull payments and
	// payouts").
	`CREATE TABLE pull_payments (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		created_ms bigint NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX pull_payments_by_store ON pull_payments (store_id, created_ms, id);
	CREATE TABLE payouts (
		id text COLLATE "C" PRIMARY KEY,
		store_id text COLLATE "C" NOT NULL,
		created_ms bigint NOT NULL,
		to_send boolean NOT NULL,
		doc bytea NOT NULL
	);
	CREATE INDEX payouts_by_store ON payouts (store_id, created_ms, id);
	CREATE INDEX payouts_to_send ON payouts (id) WHERE to_send;`,
	// 9: a request record's kind and time are columns, so that the
	// sweeper deletes the records older than kassa.RequestWindow by an
	// index (a pool address's record is kept: RequestRecord.Expires).
	// The records already stored count from the migration: they expire
	// a RequestWindow after it, never sooner than a record written now.
	// The index is built by buildIndexes.
	`ALTER TABLE requests ADD COLUMN kind text COLLATE "C" NOT NULL DEFAULT '';
	ALTER TABLE requests ADD COLUMN at_ms bigint NOT NULL DEFAULT 0;
	UPDATE requests SET kind = coalesce(convert_from(doc, 'UTF8')::jsonb->>'kind', ''),
		at_ms = (extract(epoch FROM now()) * 1000)::bigint;`,
	// 10: the outbox rows of one endpoint by delivery, and its live
	// claims, by index: the claim, the fence of a claimed commit and
	// the delete of a sent delivery each read one row, not the
	// endpoint's whole backlog (docs/decisions.md, "Outbox claims").
	// Both are built by buildIndexes: the migration's SQL is empty.
	``,
	// 11: a store's history (kassa.HistoryLine), one row per change,
	// keyed by the sequence number of the change's event and written in
	// the change's transaction (docs/decisions.md, "A store's history").
	`CREATE TABLE store_history (
		store_id text COLLATE "C" NOT NULL,
		seq bigint NOT NULL,
		at_ns bigint NOT NULL,
		kind text COLLATE "C" NOT NULL,
		actor text COLLATE "C" NOT NULL,
		doc bytea NOT NULL,
		PRIMARY KEY (store_id, seq)
	);`,
	// 12: the feed of new on-chain addresses for a cluster's chain
	// watcher (kassa.AddressFeed, watched.go): each new invoice's row
	// carries the id of the transaction that wrote it, set by a default
	// so that every writer sets it, and the address's derivation index
	// and confirmations; an index by transaction reads all stores' new
	// addresses at once (built by buildIndexes). Rows written before it
	// have none: the watcher loads them at start as before.
	`ALTER TABLE invoices ADD COLUMN watch_tx bigint;
	ALTER TABLE invoices ALTER COLUMN watch_tx SET DEFAULT pg_current_xact_id()::text::bigint;
	ALTER TABLE invoices ADD COLUMN address_index bigint;
	ALTER TABLE invoices ADD COLUMN confirmations integer;`,
	// 13: the load at start of the chain watcher
	// (kassa.AddressFeed.WatchedAddresses) reads all stores' recent
	// invoices with an address by creation time, by an index built by
	// buildIndexes: the migration's SQL is empty.
	``,
}

// lateIndex is an index that buildIndexes builds with CREATE INDEX
// CONCURRENTLY once its migration has committed: the build blocks no
// write to its table, however long the table.
type lateIndex struct {
	name string
	on   string // what follows the name in CREATE INDEX
}

// lateIndexes are the indexes of each migration (by version) built by
// buildIndexes, or in the migration's transaction when it makes the
// database. Each is on a table that can be large when the migration
// runs, and only speeds queries that are correct without it, so a
// database may serve for a while without it. A unique index that
// enforces a rule the code relies on is never here: it is built in its
// migration's transaction (migration 6).
var lateIndexes = map[int][]lateIndex{
	7: {
		{"invoices_by_order_key", `ON invoices (store_id, order_key, created_ms, id) WHERE order_key IS NOT NULL`},
		{"invoices_by_email_key", `ON invoices (store_id, email_key, created_ms, id) WHERE email_key IS NOT NULL`},
	},
	9: {{"requests_by_age", `ON requests (at_ms) WHERE kind <> 'pooladdress'`}},
	10: {
		{"outbox_by_delivery", `ON outbox (webhook_id, delivery_id)`},
		{"outbox_claimed", `ON outbox (webhook_id, claim_expires_ms) WHERE claimed_by IS NOT NULL`},
	},
	12: {{"invoices_by_watch_tx", `ON invoices (watch_tx, id) WHERE address IS NOT NULL AND watch_tx IS NOT NULL`}},
	13: {{"invoices_with_address_by_created", `ON invoices (created_ms, id) WHERE address IS NOT NULL`}},
}

// fills are the steps of a migration that Go does after its SQL, in its
// transaction: by the migration's version.
var fills = map[int]func(ctx context.Context, tx pgx.Tx, log *slog.Logger) error{
	7: fillSearchTerms,
}

// migrationLock is the advisory lock key that serialises migrations of
// nodes starting at once ("kassa" in ASCII).
const migrationLock = 0x6b61737361

// indexLock is the session-level advisory lock key that serialises the
// index builds of nodes starting at once ("kassai" in ASCII).
const indexLock = 0x6b6173736169

// migrate applies the migrations the database lacks, in one transaction
// under the advisory lock, so that nodes starting together apply each
// once, then builds their late indexes (buildIndexes). It refuses a
// database whose schema is newer than this binary.
func migrate(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) error {
	return migrateTo(ctx, pool, migrations, log)
}

// migrateTo applies the first len(steps) migrations and builds their
// late indexes (tests stop at an older version to check the next one's
// changes to data).
func migrateTo(ctx context.Context, pool *pgxpool.Pool, steps []string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := applyMigrations(ctx, pool, steps, log); err != nil {
		return err
	}
	return buildIndexes(ctx, pool, len(steps), log)
}

// applyMigrations applies the first len(steps) migrations the database
// lacks in one transaction under migrationLock; on a new database it
// builds their late indexes in it too.
func applyMigrations(ctx context.Context, pool *pgxpool.Pool, steps []string, log *slog.Logger) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(migrationLock)); err != nil {
		return fmt.Errorf("postgres: migration lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	var have int
	if err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&have); err != nil {
		return fmt.Errorf("postgres: migrate: %w", err)
	}
	if have > len(steps) {
		return fmt.Errorf("postgres: the database's schema is version %d, newer than this binary's %d", have, len(steps))
	}
	for v := have + 1; v <= len(steps); v++ {
		if strings.TrimSpace(steps[v-1]) != "" {
			if _, err := tx.Exec(ctx, steps[v-1]); err != nil {
				return fmt.Errorf("postgres: migration %d: %w", v, err)
			}
		}
		if fill := fills[v]; fill != nil {
			if err := fill(ctx, tx, log); err != nil {
				return fmt.Errorf("postgres: migration %d: %w", v, err)
			}
		}
		if have == 0 {
			// A new database's tables are made in this transaction,
			// empty and seen by no one else: their late indexes cost
			// nothing to build in it.
			for _, ix := range lateIndexes[v] {
				if _, err := tx.Exec(ctx, `CREATE INDEX `+pgx.Identifier{ix.name}.Sanitize()+` `+ix.on); err != nil {
					return fmt.Errorf("postgres: migration %d: index %s: %w", v, ix.name, err)
				}
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version) VALUES ($1)`, v); err != nil {
			return fmt.Errorf("postgres: migration %d: %w", v, err)
		}
	}
	return tx.Commit(ctx)
}

// buildIndexes makes every late index of the first version migrations
// exist and be valid, one node at a time under the session-level
// advisory lock indexLock: a node that died during a build, or after
// its migration committed and before the build, left an index missing
// or INVALID (pg_index.indisvalid), and the next start drops the
// INVALID one and builds it again. Every start runs it; when all are
// valid it takes no lock. Each build is logged with its duration.
func buildIndexes(ctx context.Context, pool *pgxpool.Pool, version int, log *slog.Logger) error {
	var want []lateIndex
	for v := 1; v <= version; v++ {
		want = append(want, lateIndexes[v]...)
	}
	if len(want) == 0 {
		return nil
	}
	c, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("postgres: build indexes: %w", err)
	}
	conn := c.Conn()
	locked := false
	defer func() {
		if locked {
			if _, err := conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(indexLock)); err != nil {
				// The lock is the session's: ending the session frees it.
				conn.Close(context.WithoutCancel(ctx))
			}
		}
		c.Release()
	}()
	for _, ix := range want {
		valid, err := indexValid(ctx, conn, ix.name)
		if err != nil {
			return fmt.Errorf("postgres: build index %s: %w", ix.name, err)
		}
		if valid {
			continue
		}
		if !locked {
			if err := lockIndexes(ctx, conn, log); err != nil {
				// The lock may be taken unseen: ending the session frees it.
				conn.Close(context.WithoutCancel(ctx))
				return err
			}
			locked = true
			// Under the lock no other node builds: an INVALID index
			// seen now is a failed build's.
			if valid, err = indexValid(ctx, conn, ix.name); err != nil {
				return fmt.Errorf("postgres: build index %s: %w", ix.name, err)
			} else if valid {
				continue
			}
		}
		start, name := time.Now(), pgx.Identifier{ix.name}.Sanitize()
		log.Info("store: building index", "index", ix.name)
		if _, err := conn.Exec(ctx, `DROP INDEX CONCURRENTLY IF EXISTS `+name); err != nil {
			return fmt.Errorf("postgres: drop invalid index %s: %w", ix.name, err)
		}
		if _, err := conn.Exec(ctx, `CREATE INDEX CONCURRENTLY IF NOT EXISTS `+name+` `+ix.on); err != nil {
			return fmt.Errorf("postgres: build index %s: %w", ix.name, err)
		}
		log.Info("store: built index", "index", ix.name, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// lockIndexes takes indexLock on conn. It polls with
// pg_try_advisory_lock rather than wait in pg_advisory_lock: a waiting
// statement holds a snapshot, and CREATE INDEX CONCURRENTLY waits for
// every older snapshot to end, so the holder's build would wait for the
// waiter and the waiter for the holder.
func lockIndexes(ctx context.Context, conn *pgx.Conn, log *slog.Logger) error {
	for logged := false; ; logged = true {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(indexLock)).Scan(&got); err != nil {
			return fmt.Errorf("postgres: index lock: %w", err)
		}
		if got {
			return nil
		}
		if !logged {
			log.Info("store: waiting for another node's index build")
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("postgres: index lock: %w", ctx.Err())
		case <-time.After(indexLockPoll):
		}
	}
}

// indexLockPoll is how often lockIndexes tries indexLock.
const indexLockPoll = 200 * time.Millisecond

// indexValid tells whether the index name exists in the schema of the
// search path and is valid.
func indexValid(ctx context.Context, conn *pgx.Conn, name string) (bool, error) {
	var valid bool
	err := conn.QueryRow(ctx, `SELECT coalesce((SELECT indisvalid FROM pg_index WHERE indexrelid = to_regclass($1)), false)`, name).Scan(&valid)
	return valid, err
}

// fillSearchTerms writes the search terms of every invoice stored,
// a page of rows at a time by id, logging its progress.
func fillSearchTerms(ctx context.Context, tx pgx.Tx, log *slog.Logger) error {
	start := time.Now()
	after, n := "", 0
	for {
		rows, err := tx.Query(ctx, `SELECT id, doc FROM invoices WHERE id > $1 ORDER BY id LIMIT $2`, after, fillPage)
		if err != nil {
			return err
		}
		var b pgx.Batch
		read := 0
		for rows.Next() {
			var doc []byte
			if err := rows.Scan(&after, &doc); err != nil {
				rows.Close()
				return err
			}
			read++
			var inv kassa.Invoice
			if err := format.Unmarshal(doc, &inv); err != nil {
				rows.Close()
				return fmt.Errorf("decode invoice %s: %w", after, err)
			}
			if t := inv.SearchTerms(); t.OrderID != "" || t.Email != "" {
				b.Queue(`UPDATE invoices SET order_key = nullif($2, ''), email_key = nullif($3, '') WHERE id = $1`, after, t.OrderID, t.Email)
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if b.Len() > 0 {
			if err := tx.SendBatch(ctx, &b).Close(); err != nil {
				return err
			}
		}
		n += read
		if read < fillPage {
			break
		}
		if n%(100*fillPage) == 0 {
			log.Info("store: indexing invoices for search", "invoices", n, "elapsed", time.Since(start).Round(time.Millisecond))
		}
	}
	if n > 0 {
		log.Info("store: indexed invoices for search", "invoices", n, "elapsed", time.Since(start).Round(time.Millisecond))
	}
	return nil
}

// fillPage is how many invoices fillSearchTerms reads at a time.
const fillPage = 1000
