package main

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/kassapay/kassa/kassatest/harness"
)

// The end-to-end tests run against Pebble in the data directory, or,
// with KASSA_E2E_STORE=postgres, against a throw-away PostgreSQL server:
// each data directory gets a schema of its own, so that a restart on the
// same directory finds its data again (`make test-pg`).

var e2ePG struct {
	server *harness.Postgres
	mu     sync.Mutex
	dsn    map[string]string // data directory → its schema's address
}

// e2eOnPostgres says whether the end-to-end tests run on PostgreSQL.
func e2eOnPostgres() bool {
	v := os.Getenv("KASSA_E2E_STORE")
	return v == "postgres" || v == "cluster"
}

// startE2EStore starts the PostgreSQL server when the tests run on it.
func startE2EStore() error {
	switch v := os.Getenv("KASSA_E2E_STORE"); v {
	case "", "pebble":
		return nil
	case "postgres", "cluster":
	default:
		return fmt.Errorf("KASSA_E2E_STORE=%q: use pebble, postgres or cluster", v)
	}
	s, err := harness.StartPostgres()
	if err != nil {
		return fmt.Errorf("FAIL: KASSA_E2E_STORE=postgres, but PostgreSQL does not start: %w", err)
	}
	e2ePG.server = s
	e2ePG.dsn = map[string]string{}
	return nil
}

func stopE2EStore() {
	stopE2EClusters()
	if e2ePG.server != nil {
		if err := e2ePG.server.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
}

// e2eStoreArgs returns the --store flag of a server with data in dir:
// none on Pebble, the address of dir's own schema on PostgreSQL.
func e2eStoreArgs(t *testing.T, dir string) []string {
	t.Helper()
	if e2ePG.server == nil {
		return nil
	}
	e2ePG.mu.Lock()
	defer e2ePG.mu.Unlock()
	dsn, ok := e2ePG.dsn[dir]
	if !ok {
		var err error
		if dsn, err = e2ePG.server.NewSchema(context.Background()); err != nil {
			t.Fatal(err)
		}
		e2ePG.dsn[dir] = dsn
	}
	return append([]string{"--store", dsn}, e2eClusterArgs(t, dir)...)
}

// skipOnPostgres skips a test that is about Pebble's files when the
// tests run on PostgreSQL.
func skipOnPostgres(t *testing.T, why string) {
	t.Helper()
	if e2eOnPostgres() {
		t.Skip("KASSA_E2E_STORE=postgres: " + why)
	}
}
