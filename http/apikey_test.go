package http

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// TestCreateAPIKey: POST /api/v1/stores/{storeId}/api-keys makes a key
// of the store holding exactly the permissions asked, for a key that
// may manage keys and holds each of them; an unknown permission (or
// none) is 400 naming it, one the caller lacks or another store's 403,
// and nothing is stored; past the store's limit it is 409.
func TestCreateAPIKey(t *testing.T) {
	e := newEnv(t)
	admin := header{"X-Api-Key", e.keyWith(kassa.PermManageAPIKeys, kassa.PermModifyInvoices)}
	path := "/api/v1/stores/store_a/api-keys"
	count := func() int {
		st, err := e.db.Store(t.Context(), "store_a")
		if err != nil {
			t.Fatal(err)
		}
		return len(st.APIKeys)
	}
	before := count()

	w := e.do("POST", path, `{"label": "till", "permissions": ["btcpay.store.cancreateinvoice", "btcpay.store.canviewinvoices:store_a"]}`, admin)
	expectStatus(t, w, http.StatusOK)
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Errorf("Cache-Control %q", w.Header().Get("Cache-Control"))
	}
	rec := decode[struct {
		ID, Label, APIKey string
		Permissions       []string
	}](t, w)
	if rec.Label != "till" || rec.APIKey == "" || !slices.Equal(rec.Permissions, []string{"btcpay.store.cancreateinvoice", "btcpay.store.canviewinvoices"}) {
		t.Fatalf("made %+v", rec)
	}
	// The new key creates invoices and may not list pay links.
	expectStatus(t, e.do("GET", "/api/v1/stores/store_a/invoices", "", header{"X-Api-Key", rec.APIKey}), http.StatusOK)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/payment-requests", "", header{"X-Api-Key", rec.APIKey}), http.StatusForbidden, "forbidden", "canviewpaymentrequests")

	body := expectError(t, e.do("POST", path, `{"label": "x", "permissions": ["btcpay.store.canfly"]}`, admin), http.StatusBadRequest, "invalid")
	if len(body.Errors) != 1 || body.Errors[0].Field != "permissions" || !strings.Contains(body.Errors[0].Message, "canfly") {
		t.Errorf("unknown permission: %+v", body)
	}
	expectError(t, e.do("POST", path, `{"label": "x", "permissions": []}`, admin), http.StatusBadRequest, "invalid")
	expectError(t, e.do("POST", path, `{"label": "x", "permissions": ["btcpay.store.webhooks.canmodifywebhooks"]}`, admin), http.StatusForbidden, "forbidden", "canmodifywebhooks")
	expectError(t, e.do("POST", path, `{"label": "x", "permissions": ["btcpay.store.canviewinvoices:store_b"]}`, admin), http.StatusForbidden, "forbidden")
	expectError(t, e.do("POST", path, `{"label": "x", "permissions": ["btcpay.store.canviewinvoices"]}`), http.StatusForbidden, "forbidden", "kassa.store.canmanageapikeys")
	if count() != before+1 {
		t.Fatalf("a refused request stored a key: %d keys", count())
	}
	for count() < kassa.MaxAPIKeys {
		expectStatus(t, e.do("POST", path, `{"label": "more", "permissions": ["btcpay.store.canviewinvoices"]}`, admin), http.StatusOK)
	}
	expectError(t, e.do("POST", path, `{"label": "one too many", "permissions": ["btcpay.store.canviewinvoices"]}`, admin), http.StatusConflict, "conflict")
}
