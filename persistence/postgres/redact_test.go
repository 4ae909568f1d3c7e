package postgres

import (
	"strings"
	"testing"
)

// TestRedactHidesEverySecret: no password a DSN can carry (in the user
// part or as a query parameter pgx reads) reaches a log line.
func TestRedactHidesEverySecret(t *testing.T) {
	for _, dsn := range []string{
		"postgres://kassa:s3cret@db:5432/kassa",
		"postgres://kassa@db/kassa?password=s3cret",
		"postgres://kassa@db/kassa?sslmode=verify-full&sslpassword=s3cret",
		"postgres://kassa@db/kassa?PASSWORD=s3cret",
		"host=db user=kassa password=s3cret",
	} {
		if got := Redact(dsn); strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q: the secret is shown", dsn, got)
		}
	}
	if got := Redact("postgres://kassa:s3cret@db:5432/kassa"); !strings.Contains(got, "db:5432") {
		t.Errorf("Redact dropped the host: %q", got)
	}
}
