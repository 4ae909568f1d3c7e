package http

import (
	"testing"

	"github.com/kassapay/kassa"
)

// TestAdminGetStore: GET /admin/v1/stores/{storeId} answers only the
// admin token (a stranger, and a merchant with the store's own API key,
// get 401 and learn nothing of the store); with it, the store and its
// balance, and 404 for a store that does not exist. Off a cluster the
// answer has no cluster object.
func TestAdminGetStore(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	expectError(t, e.do("GET", "/admin/v1/stores/store_a", "", noKey), 401, kassa.Unauthorized, "admin")
	expectError(t, e.do("GET", "/admin/v1/stores/store_a", "", noKey, header{"Authorization", "Bearer wrong"}), 401, kassa.Unauthorized, "admin")
	expectError(t, e.do("GET", "/admin/v1/stores/store_a", "", header{"X-Api-Key", keyA}), 401, kassa.Unauthorized, "admin")

	w := e.do("GET", "/admin/v1/stores/store_a", "", admin)
	expectStatus(t, w, 200)
	got := decode[map[string]any](t, w)
	if got["storeId"] != "store_a" || got["balance"] == nil {
		t.Errorf("store detail %v", got)
	}
	if _, ok := got["cluster"]; ok {
		t.Errorf("a single node's store detail has a cluster object: %v", got)
	}
	expectError(t, e.do("GET", "/admin/v1/stores/store_zz", "", admin), 404, kassa.NotFound)
}
