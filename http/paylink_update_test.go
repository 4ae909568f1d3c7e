package http

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/kassapay/kassa"
)

// TestPaymentRequestUpdateOverActors checks that PUT changes every field
// of a pay link, through the real actors and storage: the rules are
// kassa.PaymentRequest.Update's.
func TestPaymentRequestUpdateOverActors(t *testing.T) {
	e := newEnv(t)
	auth := header{"X-Api-Key", keyA}
	base := "/api/v1/stores/store_a/payment-requests"
	w := e.do("POST", base, `{"amount": 10, "title": "Shoes", "orderId": "o-1", "description": "Red shoes",
		"redirectUrl": "https://shop.example/old", "customerEmail": "old@example.com", "discount": 1, "internalNote": "old"}`, auth)
	expectStatus(t, w, http.StatusOK)
	id := decode[createdPaymentRequest](t, w).ID

	w = e.do("PUT", base+"/"+id, `{"amount": "12.50", "title": "Boots", "orderId": "o-2", "redirectUrl": "https://shop.example/thanks",
		"customerEmail": "ann@example.com", "discount": 5, "internalNote": "VIP customer"}`, auth)
	expectStatus(t, w, http.StatusOK)

	got := decode[paymentRequestRecord](t, e.do("GET", base+"/"+id, "", auth))
	if got.Amount != "12.5" || got.Title != "Boots" || got.OrderID != "o-2" || got.RedirectURL != "https://shop.example/thanks" ||
		got.CustomerEmail != "ann@example.com" || got.Discount != "5" || got.InternalNote != "VIP customer" {
		t.Fatalf("after PUT: %+v", got)
	}
	if got.Description != "" {
		t.Fatalf("description not cleared by a PUT without it: %q", got.Description)
	}
	if got.Currency != kassa.EUR {
		t.Fatalf("currency %q, want the stored EUR kept", got.Currency)
	}

	// A pay link that could never be paid is refused, every field at once,
	// and nothing changes.
	w = e.do("PUT", base+"/"+id, `{"amount": "12.345", "title": "Boots", "customerEmail": "not an address", "expiryDate": 253402300800}`, auth)
	body := expectError(t, w, http.StatusBadRequest, kassa.Invalid)
	var fields []string
	for _, f := range body.Errors {
		fields = append(fields, f.Field)
	}
	// 253402300800 is 10000-01-01T00:00:00Z.
	if fmt.Sprint(fields) != "[amount customerEmail expiryDate]" {
		t.Fatalf("errors = %+v, want amount, customerEmail and expiryDate", body.Errors)
	}
	if again := decode[paymentRequestRecord](t, e.do("GET", base+"/"+id, "", auth)); again != got {
		t.Fatalf("a refused PUT changed the pay link:\n%+v\n%+v", again, got)
	}
}

// TestPayLinkPaySessionOverActors checks that the pay-link page's Pay
// button gives one customer session one invoice while it can be paid,
// through the real actors: the first POST sets an HttpOnly, SameSite=Lax
// session cookie, and a POST with it is sent to the same checkout.
func TestPayLinkPaySessionOverActors(t *testing.T) {
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 10, "title": "Shoes"}`)
	expectStatus(t, w, http.StatusOK)
	id := decode[createdPaymentRequest](t, w).ID

	first := e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	expectStatus(t, first, http.StatusSeeOther)
	var cookie *http.Cookie
	for _, c := range first.Result().Cookies() {
		if c.Name == payLinkSessionCookie {
			cookie = c
		}
	}
	if cookie == nil || !cookie.HttpOnly || cookie.SameSite != http.SameSiteLaxMode || !cookie.Secure {
		t.Fatalf("session cookie %+v, want HttpOnly, SameSite=Lax and Secure", cookie)
	}
	again := e.do("POST", "/payment-requests/"+id+"/pay", "", noKey, header{"Cookie", cookie.Name + "=" + cookie.Value})
	expectStatus(t, again, http.StatusSeeOther)
	if a, b := first.Header().Get("Location"), again.Header().Get("Location"); a != b {
		t.Fatalf("the same session was sent to %s, then %s", a, b)
	}
	if len(again.Result().Cookies()) != 0 {
		t.Fatal("a valid session cookie was replaced")
	}
	other := e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	if other.Header().Get("Location") == first.Header().Get("Location") {
		t.Fatal("a customer without the cookie got the first customer's invoice")
	}
}
