package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// keyWith makes a key of store A holding perms.
func (e *env) keyWith(perms ...kassa.Permission) string { return e.keyRecord(perms...).Key }

// keyRecord makes a key of store A holding perms and returns it.
func (e *env) keyRecord(perms ...kassa.Permission) *kassa.APIKey {
	e.t.Helper()
	k, err := e.sys.Service.CreateAPIKey(e.t.Context(), "store_a", "test key", perms...)
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// TestEveryRouteChecksItsPermission: each authenticated route of the
// API is in the route table; a key lacking the route's permission is
// answered 403 forbidden naming it, a key holding only it gets past the
// check, and a key of another store is 403 as before.
func TestEveryRouteChecksItsPermission(t *testing.T) {
	e := newEnv(t)
	served := map[string]bool{}
	if err := chi.Walk(NewHandler(e.deps).(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/v1/stores") {
			served[method+" "+route] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(served) < 20 {
		t.Fatalf("only %d routes walked: %v", len(served), served)
	}
	for route := range served {
		if _, ok := routePermissions[route]; !ok {
			t.Errorf("%s is served but not in the route table", route)
		}
	}
	for route := range routePermissions {
		if !served[route] {
			t.Errorf("%s is in the route table but not served", route)
		}
	}

	// The keys of one permission at a time: a store holds at most
	// kassa.MaxAPIKeys, fewer than two a permission.
	byPerm := map[kassa.Permission][]string{}
	for route, perm := range routePermissions {
		byPerm[perm] = append(byPerm[perm], route)
	}
	for perm, routes := range byPerm {
		var lacking []kassa.Permission
		for _, p := range kassa.AllPermissions {
			if !p.Implies(perm) {
				lacking = append(lacking, p)
			}
		}
		lacks, only := e.keyRecord(lacking...), e.keyRecord(perm)
		for _, route := range routes {
			method, pattern, _ := strings.Cut(route, " ")
			path := strings.NewReplacer("{storeId}", "store_a", "{invoiceId}", "inv_x", "{id}", "pr_x",
				"{webhookId}", "wh_x", "{deliveryId}", "dl_x", "{payloadId}", "pl_x",
				"{pullPaymentId}", "pp_x", "{payoutId}", "po_x").Replace(pattern)
			t.Run(route, func(t *testing.T) {
				w := e.do(method, path, "{}", header{"X-Api-Key", lacks.Key})
				expectError(t, w, http.StatusForbidden, "forbidden", string(perm))
				if w := e.do(method, path, "{}", header{"X-Api-Key", only.Key}); w.Code == http.StatusForbidden || w.Code == http.StatusUnauthorized {
					t.Errorf("a key holding %s: %d %s", perm, w.Code, w.Body.String())
				}
				if strings.Contains(pattern, "{storeId}") {
					expectError(t, e.do(method, strings.Replace(path, "store_a", "store_b", 1), "{}"), http.StatusForbidden, "forbidden")
				}
			})
		}
		for _, k := range []*kassa.APIKey{lacks, only} {
			if err := e.sys.Service.DeleteAPIKey(t.Context(), "store_a", k.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
}
