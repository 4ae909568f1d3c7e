package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/metrics"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/persistence/postgres"
)

// storage is everything `kassa serve` keeps: Pebble in the data directory
// by default, PostgreSQL with --store postgres://… (docs/decisions.md,
// "PostgreSQL store").
type storage interface {
	kassa.Journal
	kassa.Reader
	kassa.KeyValue
	// SwapValue writes a value only over the one given (the lnd
	// address pool's record, lnd.PoolStore).
	SwapValue(ctx context.Context, key string, old, value []byte, expires time.Time) (bool, error)
	kassa.RequestReader
	kassa.ForwardStore
	kassa.PayoutStore
	kassa.HistoryReader
	// State is the key-value space name of a simulated backend.
	State(name string) simstore.Store
	// SweepExpired deletes the small values that expired before now and
	// the request records older than kassa.RequestWindow.
	SweepExpired(ctx context.Context, now time.Time) (int, error)
	// Err is the failure that stopped the store, nil while it works;
	// Failed is closed when there is one.
	Err() error
	Failed() <-chan struct{}
	Close() error
}

// openStorage opens the store that --store names: empty or "pebble" is
// Pebble in DATA/pebble, a postgres:// (or postgresql://) URL is that
// database.
func openStorage(ctx context.Context, c Config, clock kassa.Clock, stats *metrics.Set, log *slog.Logger) (storage, error) {
	switch {
	case c.Store == "" || c.Store == "pebble":
		db, err := persistence.Open(filepath.Join(c.Data, "pebble"), persistence.Options{Logger: log, Clock: clock, Metrics: stats})
		if err != nil {
			return nil, err
		}
		return pebbleStorage{db}, nil
	case strings.HasPrefix(c.Store, "postgres://"), strings.HasPrefix(c.Store, "postgresql://"):
		db, err := postgres.Open(ctx, c.Store, postgres.Options{Clock: clock, Logger: log})
		if err != nil {
			// The address may hold a password: never print it.
			return nil, fmt.Errorf("--store: %w", err)
		}
		log.Info("store: PostgreSQL", "database", postgres.Redact(c.Store))
		return pgStorage{db}, nil
	}
	return nil, fmt.Errorf("--store %q: use pebble or postgres://user:pass@host:port/db", postgres.Redact(c.Store))
}

// pebbleStorage is the Pebble store as a storage.
type pebbleStorage struct{ *persistence.DB }

func (p pebbleStorage) State(name string) simstore.Store { return p.DB.State(name) }

// pgStorage is the PostgreSQL store as a storage. It is the address
// feed of a cluster's chain watcher (chainrpc.Config.Reader).
type pgStorage struct{ *postgres.DB }

var _ kassa.AddressFeed = pgStorage{}

func (p pgStorage) State(name string) simstore.Store { return p.DB.State(name) }

// Err is always nil: a failed query fails its request, and PostgreSQL
// keeps what it acknowledged, so nothing calls for a restart.
func (pgStorage) Err() error { return nil }

// Failed is never closed.
func (pgStorage) Failed() <-chan struct{} { return nil }

// outboxClaims returns the outbox claims of a store that several nodes
// share (PostgreSQL), by which webhook endpoints claim each delivery
// before sending it (docs/decisions.md, "Outbox claims"); nil for
// Pebble, whose one node sends as before.
func outboxClaims(db storage) kassa.OutboxClaims {
	claims, _ := db.(kassa.OutboxClaims)
	return claims
}

// nodeHolder names this process in claims and leases: host, process and
// a random part, so that a restarted node never passes for its former
// self.
func nodeHolder() string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%s/%d/%s", host, os.Getpid(), kassa.NewID(""))
}
