package harness

// A throw-away PostgreSQL 15 server for tests: a fresh cluster made by
// initdb in a temporary directory, listening on a free loopback port and
// a Unix socket in that directory, removed again by Stop. Nothing is
// skipped: when the server cannot be started, StartPostgres says why, and
// the caller fails (scripts/install-test-deps.sh installs the Debian
// package that provides it).

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync/atomic"

	"github.com/jackc/pgx/v5"
)

// PostgresBinDir is where Debian installs the PostgreSQL 15 server binaries.
const PostgresBinDir = "/usr/lib/postgresql/15/bin"

// Postgres is a running throw-away PostgreSQL server.
type Postgres struct {
	dir  string
	port int
	// runAs is the unprivileged user that owns the cluster when the
	// tests run as root (initdb refuses root); empty otherwise.
	runAs   string
	schemas atomic.Int64
	opts    string // the server's options, for Up
}

// StartPostgres initialises a cluster in a new temporary directory and
// starts the server on a free port. The superuser is "kassa", trusted on
// loopback; fsync is off, as nothing outlives the test run.
func StartPostgres() (*Postgres, error) {
	for _, bin := range []string{"initdb", "pg_ctl"} {
		if _, err := os.Stat(filepath.Join(PostgresBinDir, bin)); err != nil {
			return nil, fmt.Errorf("harness: postgres: PostgreSQL 15 is not installed (%v); run scripts/install-test-deps.sh (Debian package postgresql)", err)
		}
	}
	dir, err := os.MkdirTemp("", "kassa-pg-")
	if err != nil {
		return nil, fmt.Errorf("harness: postgres: %w", err)
	}
	s := &Postgres{dir: dir}
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: postgres: running as root, and initdb refuses root: no user postgres to run it as: %w", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: postgres: %w", err)
		}
		s.runAs = "postgres"
	}
	data := filepath.Join(dir, "data")
	if out, err := s.run("initdb", "-D", data, "-U", "kassa", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C"); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("harness: postgres: initdb: %w\n%s", err, out)
	}
	for attempt := 0; ; attempt++ {
		s.port, err = freePort()
		if err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: postgres: %w", err)
		}
		s.opts = fmt.Sprintf("-p %d -k %s -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200", s.port, dir)
		out, err := s.run("pg_ctl", "-D", data, "-o", s.opts, "-l", filepath.Join(dir, "log"), "-w", "-t", "60", "start")
		if err == nil {
			break
		}
		if attempt == 2 {
			log, _ := os.ReadFile(filepath.Join(dir, "log"))
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: postgres: pg_ctl start: %w\n%s\n%s", err, out, log)
		}
	}
	return s, nil
}

// run runs a server binary, as the cluster's owner when root.
func (s *Postgres) run(bin string, args ...string) ([]byte, error) {
	name, argv := filepath.Join(PostgresBinDir, bin), args
	if s.runAs != "" {
		name, argv = "runuser", append([]string{"-u", s.runAs, "--", filepath.Join(PostgresBinDir, bin)}, args...)
	}
	cmd := exec.Command(name, argv...)
	cmd.Dir = s.dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.Bytes(), err
}

// DSN is the address of the server's database "postgres" as user kassa.
func (s *Postgres) DSN() string {
	return fmt.Sprintf("postgres://kassa@127.0.0.1:%d/postgres?sslmode=disable", s.port)
}

// NewSchema creates a fresh, empty schema and returns a DSN whose
// search_path is that schema, so that each test gets its own tables on
// the one server.
func (s *Postgres) NewSchema(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d", s.schemas.Add(1))
	conn, err := pgx.Connect(ctx, s.DSN())
	if err != nil {
		return "", fmt.Errorf("harness: postgres: connect: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+name); err != nil {
		return "", fmt.Errorf("harness: postgres: create schema: %w", err)
	}
	return s.DSN() + "&search_path=" + name, nil
}

// Stop stops the server at once and removes its directory.
func (s *Postgres) Stop() error {
	out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "immediate", "-w", "-t", "30", "stop")
	if err != nil {
		err = fmt.Errorf("harness: postgres: pg_ctl stop: %w\n%s", err, out)
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}

// Down stops the server (an outage: every connection is cut) and keeps
// its data, for Up. It is a fast stop, not an immediate one: the server
// runs with synchronous_commit off, so an immediate stop could lose the
// last commits (even a test's CREATE TABLE) to crash recovery, and the
// server that came back would not be the one that went down.
func (s *Postgres) Down() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-m", "fast", "-w", "-t", "30", "stop"); err != nil {
		return fmt.Errorf("harness: postgres: pg_ctl stop: %w\n%s", err, out)
	}
	return nil
}

// Up starts the server again after Down, on the same port and data.
func (s *Postgres) Up() error {
	if out, err := s.run("pg_ctl", "-D", filepath.Join(s.dir, "data"), "-o", s.opts, "-l", filepath.Join(s.dir, "log"), "-w", "-t", "60", "start"); err != nil {
		return fmt.Errorf("harness: postgres: pg_ctl start: %w\n%s", err, out)
	}
	return nil
}
