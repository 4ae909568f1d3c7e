// Package postgres stores Kassa's actors in PostgreSQL, for cluster mode
// where several nodes share one store. It implements the same ports as
// the Pebble store (kassa.Journal, kassa.Reader, kassa.KeyValue) and
// passes the same contract suites (kassatest).
//
// Each actor's events are rows keyed (kind, stream, seq): a second
// activation of one actor that writes a sequence number already taken
// fails with a Conflict error (ErrSeqTaken) and reloads. A Batch commits
// whole or not at all, in a transaction it may share with the batches of
// other actors committed at the same time (group commit, group.go), each
// with its own checks. Snapshots and the read model are rows holding the same
// JSON the Pebble store keeps, with columns for what is looked up or
// ordered by (dates in milliseconds, so pages and cursors match the
// Pebble store's). Identifiers use the "C" collation, so ordering is by
// bytes as in Pebble. The schema is versioned in the binary (migrations)
// and applied by Open under an advisory lock; the indexes of tables that
// grow are built after the migration commits, CONCURRENTLY, so that an
// upgrade blocks no writes (buildIndexes). See docs/decisions.md,
// "PostgreSQL store".
package postgres
