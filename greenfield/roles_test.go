package greenfield_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/greenfield"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/rates"
)

// TestRoleTable checks both APIs against docs/roles.md, the table of
// each role on each route: for each role, a key holding exactly that
// role's permissions, made by the operator (POST
// /admin/v1/stores/{storeId}/api-keys), is let through (any answer but
// 403 or 401) or refused with 403 on every route of Kassa's API and of
// Greenfield as the table says. A route served but missing from the
// table, or in the table but not served, fails the test; the message
// of a missing one is its row as observed. The dashboard's routes are
// checked against the same table by TestDashboardRoutePermissions.
func TestRoleTable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table := kassatest.ReadRoleTable(t)
	const admin = "admin-token-0123456789abcdef0123456789"
	d := e.deps()
	d.Clock, d.PublicURL = e.clock, "https://pay.example.com/"
	gf := greenfield.NewHandler(d)
	h := kassahttp.NewHandler(kassahttp.Deps{
		Reader: e.db, Stores: e.sys.Service, Invoices: e.sys.Service, PaymentRequests: e.sys.Service,
		Rates:    rates.Fixed{Rates: map[kassa.Currency]decimal.Decimal{kassa.EUR: decimal.RequireFromString("50000")}},
		Webhooks: e.sys.Service, Refunds: e.refunds, Payouts: e.db, Keys: e.sys.Service,
		KV: e.db, Clock: e.clock, PublicURL: "https://pay.example.com/", AdminToken: admin, Greenfield: gf,
	})
	do := func(method, path, body string, header ...string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("Accept", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			r.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w
	}

	keys := map[kassa.Role]string{}
	for _, role := range kassa.Roles {
		var names []string
		for _, p := range role.Permissions() {
			names = append(names, string(p))
		}
		body, _ := json.Marshal(map[string]any{"label": string(role), "permissions": names})
		w := do("POST", "/admin/v1/stores/store_a/api-keys", string(body), "Authorization", "Bearer "+admin)
		var key struct {
			APIKey      string   `json:"apiKey"`
			Permissions []string `json:"permissions"`
		}
		if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &key) != nil || key.APIKey == "" || len(key.Permissions) != len(names) {
			t.Fatalf("the operator making a key of %s's permissions: %d %s", role, w.Code, w.Body.String())
		}
		keys[role] = key.APIKey
	}

	walk := func(routes http.Handler, prefix string) map[string]bool {
		served := map[string]bool{}
		if err := chi.Walk(routes.(chi.Routes), func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
			if strings.HasPrefix(route, prefix) {
				served[method+" "+strings.TrimSuffix(route, "/")] = true
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return served
	}
	params := strings.NewReplacer("{storeId}", "store_a", "{invoiceId}", "inv_x", "{id}", "pr_x", "{webhookId}", "wh_x",
		"{deliveryId}", "dl_x", "{payloadId}", "pl_x", "{pullPaymentId}", "pp_x", "{payoutId}", "po_x")
	// Kassa's API also answers a few Greenfield paths without a key,
	// to point to /greenfield: no role asks them anything.
	apiRoutes := walk(h, "/api/v1/stores")
	for route := range apiRoutes {
		method, pattern, _ := strings.Cut(route, " ")
		if do(method, params.Replace(pattern), "{}").Code != http.StatusUnauthorized {
			delete(apiRoutes, route)
		}
	}
	for _, s := range []struct {
		surface string
		served  map[string]bool
		send    func(method, path, key string) *httptest.ResponseRecorder
	}{
		{"api", apiRoutes, func(method, path, key string) *httptest.ResponseRecorder {
			return do(method, path, "{}", "X-Api-Key", key)
		}},
		{"greenfield", walk(gf, "/api/v1/"), func(method, path, key string) *httptest.ResponseRecorder {
			return do(method, base+path, "{}", "Authorization", "token "+key)
		}},
	} {
		if len(s.served) < 20 {
			t.Fatalf("%s: only %d routes walked", s.surface, len(s.served))
		}
		var routes []string
		for route := range s.served {
			routes = append(routes, route)
		}
		sort.Strings(routes)
		for _, route := range routes {
			method, pattern, _ := strings.Cut(route, " ")
			got := map[kassa.Role]bool{}
			for _, role := range kassa.Roles {
				w := s.send(method, params.Replace(pattern), keys[role])
				if w.Code == http.StatusUnauthorized {
					t.Errorf("%s %s with %s's key: 401 %s", s.surface, route, role, w.Body.String())
				}
				got[role] = w.Code != http.StatusForbidden
			}
			want, ok := table[s.surface][route]
			if !ok {
				t.Errorf("%s %s is served but not in docs/roles.md; as served its row is\n%s", s.surface, route, table.Row(s.surface, route, got))
				continue
			}
			for _, role := range kassa.Roles {
				if got[role] != want[role] {
					t.Errorf("%s %s for %s: let through %v, docs/roles.md says %v", s.surface, route, role, got[role], want[role])
				}
			}
		}
		for route := range table[s.surface] {
			if !s.served[route] {
				t.Errorf("%s %s is in docs/roles.md but not served", s.surface, route)
			}
		}
	}
	for surface := range table {
		if surface != "api" && surface != "greenfield" && surface != "dashboard" {
			t.Errorf("docs/roles.md names the surface %q: api, greenfield or dashboard", surface)
		}
	}
}
