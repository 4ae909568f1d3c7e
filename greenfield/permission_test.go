package greenfield_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/greenfield"
)

// keyWith makes a key of store_a holding perms.
func (e *env) keyWith(perms ...kassa.Permission) string {
	e.t.Helper()
	k, err := e.sys.Service.CreateAPIKey(e.t.Context(), "store_a", "test key", perms...)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Key
}

// lacking is every permission that does not grant perm.
func lacking(perm kassa.Permission) []kassa.Permission {
	var out []kassa.Permission
	for _, p := range kassa.AllPermissions {
		if !p.Implies(perm) {
			out = append(out, p)
		}
	}
	return out
}

// TestCurrentKeyReportsItsPermissions: a key made with permissions
// reports exactly those, in BTCPay's "<perm>:<storeId>" form.
func TestCurrentKeyReportsItsPermissions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.keyWith(kassa.PermViewInvoices, kassa.PermCreateInvoice)
	w := e.do("GET", base+"/api/v1/api-keys/current", "", key)
	expectStatus(t, w, http.StatusOK)
	got := decode[apiKeyData](t, w)
	want := []string{"btcpay.store.canviewinvoices:store_a", "btcpay.store.cancreateinvoice:store_a"}
	if !slices.Equal(got.Permissions, want) || got.APIKey != key {
		t.Errorf("current = %+v, want permissions %v", got, want)
	}
}

// TestEveryRouteChecksItsPermission: each route of the Greenfield API is
// in the route table, and a key lacking the route's permission is
// answered BTCPay's 403 missing-permission naming it, while a key
// holding only it gets past the check; a key of another store is 403.
func TestEveryRouteChecksItsPermission(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table := greenfield.RoutePermissions()
	routes, ok := greenfield.NewHandler(e.deps()).(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	served := map[string]bool{}
	if err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if strings.HasPrefix(route, "/api/v1/") {
			served[method+" "+strings.TrimSuffix(route, "/")] = true
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for route := range served {
		if _, ok := table[route]; !ok {
			t.Errorf("%s is served but not in the route table", route)
		}
	}
	for route := range table {
		if !served[route] {
			t.Errorf("%s is in the route table but not served", route)
		}
	}

	// Each permission's two keys are made for its routes and deleted
	// after them: a store holds at most kassa.MaxAPIKeys keys.
	byPerm := map[kassa.Permission][]string{}
	for route, perm := range table {
		if perm != "" {
			byPerm[perm] = append(byPerm[perm], route)
		}
	}
	for perm, routes := range byPerm {
		lacks, dropLacks := e.tempKey(lacking(perm)...)
		only, dropOnly := e.tempKey(perm)
		for _, route := range routes {
			method, pattern, _ := strings.Cut(route, " ")
			path := strings.NewReplacer("{storeId}", "store_a", "{invoiceId}", "inv_x", "{webhookId}", "wh_x", "{deliveryId}", "dl_x",
				"{pullPaymentId}", "pp_x", "{payoutId}", "po_x").Replace(pattern)
			t.Run(route, func(t *testing.T) {
				w := e.do(method, base+path, "{}", lacks)
				expectAPIError(t, w, http.StatusForbidden, "missing-permission", string(perm))
				if body := decode[struct{ MissingPermission string }](t, w); body.MissingPermission != string(perm) {
					t.Errorf("missingPermission %q, want %q", body.MissingPermission, perm)
				}
				if w := e.do(method, base+path, "{}", only); w.Code == http.StatusForbidden || w.Code == http.StatusUnauthorized {
					t.Errorf("a key holding %s: %d %s", perm, w.Code, w.Body.String())
				}
				if strings.Contains(pattern, "{storeId}") {
					other := strings.Replace(path, "store_a", "store_b", 1)
					expectAPIError(t, e.do(method, base+other, "{}"), http.StatusForbidden, "missing-permission")
				}
			})
		}
		dropLacks()
		dropOnly()
	}
}

// tempKey makes a key of store_a holding perms and returns it with a
// function that deletes it.
func (e *env) tempKey(perms ...kassa.Permission) (string, func()) {
	e.t.Helper()
	k, err := e.sys.Service.CreateAPIKey(e.t.Context(), "store_a", "test key", perms...)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Key, func() {
		if err := e.sys.Service.DeleteAPIKey(e.t.Context(), "store_a", k.ID); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestCreateKey: POST /api/v1/api-keys (BTCPay's ApiKeys_CreateApiKey)
// makes a key of the caller's store holding exactly the permissions
// asked, for a key that may manage keys and holds each of them; an
// unknown permission is 422, one the caller lacks or another store's
// 403, and nothing is stored.
func TestCreateKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.keyWith(kassa.PermManageAPIKeys, kassa.PermModifyInvoices)
	keys := func() int {
		st, err := e.db.Store(t.Context(), "store_a")
		if err != nil {
			t.Fatal(err)
		}
		return len(st.APIKeys)
	}
	before := keys()

	w := e.do("POST", base+"/api/v1/api-keys", `{"label": "till", "permissions": ["btcpay.store.cancreateinvoice:store_a", "btcpay.store.canviewinvoices"]}`, admin)
	expectStatus(t, w, http.StatusOK)
	if cc := w.Header().Get("Cache-Control"); cc != "no-store" {
		t.Errorf("Cache-Control %q", cc)
	}
	made := decode[apiKeyData](t, w)
	want := []string{"btcpay.store.cancreateinvoice:store_a", "btcpay.store.canviewinvoices:store_a"}
	if made.Label != "till" || !slices.Equal(made.Permissions, want) || made.APIKey == "" {
		t.Fatalf("made %+v", made)
	}
	cur := decode[apiKeyData](t, e.do("GET", base+"/api/v1/api-keys/current", "", made.APIKey))
	if !slices.Equal(cur.Permissions, want) {
		t.Errorf("the new key reports %v", cur.Permissions)
	}
	if keys() != before+1 {
		t.Fatalf("keys: %d, want %d", keys(), before+1)
	}

	expectValidation(t, e.do("POST", base+"/api/v1/api-keys", `{"permissions": ["btcpay.store.canfly"]}`, admin), "permissions")
	expectValidation(t, e.do("POST", base+"/api/v1/api-keys", `{"label": "none", "permissions": []}`, admin), "permissions")
	expectAPIError(t, e.do("POST", base+"/api/v1/api-keys", `{"permissions": ["btcpay.store.webhooks.canmodifywebhooks"]}`, admin),
		http.StatusForbidden, "missing-permission", "btcpay.store.webhooks.canmodifywebhooks")
	expectAPIError(t, e.do("POST", base+"/api/v1/api-keys", `{"permissions": ["btcpay.store.canviewinvoices:store_b"]}`, admin),
		http.StatusForbidden, "missing-permission")
	// A key made without a choice holds no key management.
	expectAPIError(t, e.do("POST", base+"/api/v1/api-keys", `{"permissions": ["btcpay.store.canviewinvoices"]}`),
		http.StatusForbidden, "missing-permission", "kassa.store.canmanageapikeys")
	if keys() != before+1 {
		t.Errorf("a refused request stored a key: %d keys", keys())
	}
}
