//go:build !daemon

package harness

import "testing"

// TestDaemonNeedsTag stands in for the tests against a real etcd when
// they are not built: they carry the build tag daemon (make test passes
// -tags daemon), so the fast tier does not link etcd's client for tests
// that would skip.
func TestDaemonNeedsTag(t *testing.T) {
	t.Skip("skipped: the tests against a real etcd build with -tags daemon (make test)")
}
