package greenfield_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestBadInput answers bad input in Greenfield's 4xx shapes and stores
// nothing: shapes from BTCPay v2.4.1 (BTCPayServer.Client/Models/
// GreenfieldAPIError.cs, GreenfieldPermissionAPIError.cs,
// GreenfieldValidationError.cs; GreenfieldAuthenticationHandler.cs for
// 401; GreenfieldInvoiceController.cs for invoice-not-found and the
// create's checks).
func TestBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	create := base + "/api/v1/stores/store_a/invoices"
	with := func(old, new string) string { return strings.Replace(createBody, old, new, 1) }

	t.Run("no key", func(t *testing.T) {
		expectAPIError(t, e.do("GET", base+"/api/v1/api-keys/current", "", ""), http.StatusUnauthorized, "unauthenticated")
	})
	t.Run("unknown key", func(t *testing.T) {
		expectAPIError(t, e.do("POST", create, createBody, "not-a-key"), http.StatusUnauthorized, "unauthenticated")
	})
	t.Run("another store's id", func(t *testing.T) {
		expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_b/invoices", createBody), http.StatusForbidden,
			"missing-permission", "btcpay.store.cancreateinvoice")
		expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_b", ""), http.StatusForbidden, "missing-permission")
		expectAPIError(t, e.do("GET", base+"/api/v1/stores/no_such_store/invoices", ""), http.StatusForbidden, "missing-permission")
	})
	t.Run("another store's invoice", func(t *testing.T) {
		w := e.do("POST", base+"/api/v1/stores/store_b/invoices", `{"amount":"1.00"}`, keyB)
		expectStatus(t, w, http.StatusOK)
		other := decode[invoiceData](t, w)
		for _, path := range []string{"", "/payment-methods"} {
			expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_a/invoices/"+other.ID+path, ""), http.StatusNotFound, "invoice-not-found")
		}
		expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+other.ID+"/status", `{"status":"Invalid"}`),
			http.StatusNotFound, "invoice-not-found")
		if s, _ := e.db.Invoice(t.Context(), other.ID); s.Status.String() != "New" {
			t.Errorf("another store's invoice is %s", s.Status)
		}
	})
	for _, tt := range []struct{ name, body, path string }{
		{"malformed amount", with(`"amount":"42.90"`, `"amount":"42,90"`), "amount"},
		{"negative amount", with(`"amount":"42.90"`, `"amount":"-1"`), "amount"},
		{"too many decimals", with(`"amount":"42.90"`, `"amount":"42.901"`), "amount"},
		{"amount of the wrong type", with(`"amount":"42.90"`, `"amount":{"v":1}`), "amount"},
		{"unknown currency", with(`"currency":"EUR"`, `"currency":"XYZ"`), "currency"},
		{"currency of the wrong type", with(`"currency":"EUR"`, `"currency":12`), "currency"},
		{"unknown payment method", with(`"BTC_CHAIN"`, `"XMR_CHAIN"`), "checkout.paymentMethods[0]"},
		{"unknown speed policy", with(`"speedPolicy":null`, `"speedPolicy":"Instant"`), "checkout.speedPolicy"},
		{"bad redirect", with(`"redirectURL":"https:\/\/shop.example\/checkout\/order-received\/123\/?key=wc_order_abc"`, `"redirectURL":"javascript:alert(1)"`), "checkout.redirectURL"},
		{"bad e-mail", with(`"buyerEmail":"buyer@example.com"`, `"buyerEmail":"not an address"`), "metadata.buyerEmail"},
		{"metadata not an object", `{"amount":"1.00","metadata":["orderId","123"]}`, "metadata"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			expectValidation(t, e.do("POST", create, tt.body), tt.path)
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		expectAPIError(t, e.do("POST", create, `{"amount":`), http.StatusBadRequest, "generic-error")
	})
	t.Run("archive of an unknown invoice", func(t *testing.T) {
		w := e.do("POST", create, createBody)
		inv := decode[invoiceData](t, w)
		expectAPIError(t, e.do("DELETE", create+"/"+inv.ID+"x", ""), http.StatusNotFound, "invoice-not-found")
		if s, _ := e.db.Invoice(t.Context(), inv.ID); s.Archived {
			t.Error("archived by another id")
		}
	})
	t.Run("unsupported routes name themselves", func(t *testing.T) {
		expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a/payment-requests", `{"title":"refund"}`),
			http.StatusNotFound, "unsupported-route", "POST /greenfield/api/v1/stores/store_a/payment-requests")
		expectAPIError(t, e.do("PUT", create+"/x", `{}`), http.StatusNotFound, "unsupported-route", "PUT")
	})
	// The one invoice of "archive of an unknown invoice" and store B's.
	if n := e.invoiceCount("store_a"); n != 1 {
		t.Errorf("store A has %d invoices after bad input, want the one good create", n)
	}
}
