package http

import "testing"

// TestAdminCreateStoreLimits checks that a store is created with its own
// invoice maximum and on-chain minimum, and that out-of-range ones are
// refused together.
func TestAdminCreateStoreLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/admin/v1/stores", `{"name": "Limits", "maxInvoiceAmount": 5000000, "onchainMinAmount": 20000}`, admin)
	expectStatus(t, w, 200)
	st, err := e.reader.Store(t.Context(), decode[createdStore](t, w).StoreID)
	if err != nil {
		t.Fatal(err)
	}
	if st.MaxInvoice() != 5_000_000 || st.OnchainMin() != 20_000 {
		t.Fatalf("limits %d, %d", st.MaxInvoice(), st.OnchainMin())
	}
	body := expectError(t, e.do("POST", "/admin/v1/stores", `{"name": "Bad", "maxInvoiceAmount": -1, "onchainMinAmount": -5}`, admin), 400, "invalid")
	if len(body.Errors) != 2 || body.Errors[0].Field != "maxInvoiceAmount" || body.Errors[1].Field != "onchainMinAmount" {
		t.Fatalf("errors = %+v", body.Errors)
	}
}

// TestCheckoutSaysWhyNoAddress checks that the checkout page of an
// invoice below the store's on-chain minimum offers Lightning only and
// says why.
func TestCheckoutSaysWhyNoAddress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 500, "currency": "SATS"}`)
	expectStatus(t, w, 200)
	created := decode[createdInvoice](t, w)
	if created.OnchainAddress != "" || created.OnchainUnavailableReason == "" {
		t.Fatalf("a 500-sat invoice: address %q, reason %q", created.OnchainAddress, created.OnchainUnavailableReason)
	}
	expectPage(t, e.do("GET", "/checkout/"+created.ID, "", noKey), 200,
		[]string{`id="onchain-unavailable"`, "paid by Lightning only"}, []string{"Pay on-chain"})
}
