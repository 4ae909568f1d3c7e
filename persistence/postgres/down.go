package postgres

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/kassapay/kassa"
)

// ErrUnavailable is what a query answers while PostgreSQL cannot be
// reached (down, restarting, the network cut): the code Unavailable, so
// that the API answers 503 with Retry-After rather than 500, and the
// caller tries again; the pool reconnects by itself once the server is
// back.
var ErrUnavailable = kassa.Errorf(kassa.Unavailable, "the database is unavailable: try again shortly")

// unavailable wraps ErrUnavailable with the error the driver gave.
type unavailable struct{ err error }

func (e *unavailable) Error() string   { return "postgres unavailable: " + e.err.Error() }
func (e *unavailable) Unwrap() []error { return []error{ErrUnavailable, e.err} }

// down returns err as an ErrUnavailable when it says the server cannot
// be reached or is going away, else err as it is.
func down(err error) error {
	var ke *kassa.Error
	if err == nil || errors.As(err, &ke) {
		return err
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		// Class 08: connection exception; 57P01-03: the server shuts
		// down or starts.
		if strings.HasPrefix(pgErr.Code, "08") || pgErr.Code == "57P01" || pgErr.Code == "57P02" || pgErr.Code == "57P03" {
			return &unavailable{err}
		}
		return err
	}
	var connect *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connect) || errors.As(err, &netErr) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		pgconn.SafeToRetry(err) || pgconn.Timeout(err) || strings.Contains(err.Error(), "conn closed") {
		return &unavailable{err}
	}
	return err
}

// Available says whether PostgreSQL answers now: nil, or ErrUnavailable
// with the driver's reason (for health).
func (db *DB) Available(ctx context.Context) error {
	if err := db.pool.Ping(ctx); err != nil {
		if d := down(err); errors.Is(d, ErrUnavailable) {
			return d
		}
		return &unavailable{err}
	}
	return nil
}
