//go:build !itest

package itest

import "testing"

// TestIntegrationNeedsTag stands in for the integration tests when they
// are not built: they carry the build tag itest (make itest passes
// -tags itest), so go test ./... does not link a binary whose every test
// would skip.
func TestIntegrationNeedsTag(t *testing.T) {
	t.Skip("skipped: the integration tests build with -tags itest (make itest)")
}
