//go:build !daemon

package lnd_test

import "testing"

// TestDaemonNeedsTag stands in for the tests against a real PostgreSQL
// when they are not built: they carry the build tag daemon (make test
// passes -tags daemon), so the fast tier does not link PostgreSQL's
// client and the harness for tests that would skip.
func TestDaemonNeedsTag(t *testing.T) {
	t.Skip("skipped: the tests against a real PostgreSQL build with -tags daemon (make test)")
}
