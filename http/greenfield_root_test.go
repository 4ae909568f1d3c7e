package http

import (
	"net/http"
	"testing"
)

// TestGreenfieldPathsAtTheRoot answers the Greenfield-only paths a BTCPay
// plugin asks when given the server's root URL with 404 naming the
// Greenfield base URL, and serves the Greenfield handler under
// /greenfield (docs/decisions.md, "BTCPay's Greenfield API under its own
// base URL").
func TestGreenfieldPathsAtTheRoot(t *testing.T) {
	t.Parallel()
	greenfield := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusTeapot)
		_, _ = w.Write([]byte(r.URL.Path))
	})
	e := newEnv(t, withDeps(func(d *Deps) { d.Greenfield = greenfield }))
	for _, tt := range []struct{ method, path string }{
		{"GET", "/api/v1/api-keys/current"},
		{"GET", "/api/v1/server/info"},
		{"GET", "/api/v1/stores/store_a/payment-methods"},
		{"GET", "/api/v1/stores/store_a/invoices/abc/payment-methods"},
		{"POST", "/api/v1/stores/store_a/invoices/abc/status"},
	} {
		w := e.do(tt.method, tt.path, "", header{"X-Api-Key", ""}, header{"Authorization", "token " + keyA})
		expectError(t, w, http.StatusNotFound, "not_found", "https://pay.example.com/greenfield")
	}
	// Coinsnap's own routes are unchanged.
	expectStatus(t, e.do("GET", "/api/v1/stores/store_a", ""), http.StatusOK)
	w := e.do("GET", "/greenfield/api/v1/server/info", "")
	if w.Code != http.StatusTeapot {
		t.Errorf("/greenfield: %d %s", w.Code, w.Body.String())
	}
}
