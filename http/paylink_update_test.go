package http

import (
	"fmt"
	"net/http"
	"strings"
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

// TestPaidPayLinkReadOnlyOverActors (issue 22): once paid, a PUT is 409
// and the link keeps what was paid; an expiry in the past is 400 on
// create (nothing stored) and on update (nothing changed).
func TestPaidPayLinkReadOnlyOverActors(t *testing.T) {
	e := newEnv(t)
	auth := header{"X-Api-Key", keyA}
	base := "/api/v1/stores/store_a/payment-requests"
	id := decode[createdPaymentRequest](t, e.do("POST", base, `{"amount": "14.16", "title": "Mug"}`, auth)).ID
	w := e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	settle(e, e.invoice(strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/")))
	paid := decode[paymentRequestRecord](t, e.do("GET", base+"/"+id, "", auth))
	if paid.Status != kassa.PaymentRequestCompleted {
		t.Fatalf("status %s, want Completed", paid.Status)
	}
	expectError(t, e.do("PUT", base+"/"+id, `{"amount": "29.80", "title": "Mug"}`, auth), http.StatusConflict, kassa.Conflict, "is paid and can no longer change")
	if again := decode[paymentRequestRecord](t, e.do("GET", base+"/"+id, "", auth)); again != paid {
		t.Fatalf("a refused PUT changed the paid pay link:\n%+v\n%+v", again, paid)
	}
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200, []string{"14.16"}, []string{"29.80"})

	// An expiry in the past: refused, nothing stored.
	before := len(decode[[]paymentRequestRecord](t, e.do("GET", base, "", auth)))
	body := expectError(t, e.do("POST", base, `{"amount": 1, "title": "Late", "expiryDate": "2025-01-01"}`, auth), http.StatusBadRequest, kassa.Invalid, "expiryDate: must be in the future")
	if len(body.Errors) != 1 || body.Errors[0].Field != "expiryDate" {
		t.Errorf("errors %+v, want expiryDate", body.Errors)
	}
	if after := len(decode[[]paymentRequestRecord](t, e.do("GET", base, "", auth))); after != before {
		t.Errorf("%d pay links after a refused create, want %d", after, before)
	}
	open := decode[createdPaymentRequest](t, e.do("POST", base, `{"amount": 1, "title": "Open"}`, auth)).ID
	was := decode[paymentRequestRecord](t, e.do("GET", base+"/"+open, "", auth))
	expectError(t, e.do("PUT", base+"/"+open, `{"amount": 2, "title": "Open", "expiryDate": 1735700000}`, auth), http.StatusBadRequest, kassa.Invalid, "expiryDate")
	if now := decode[paymentRequestRecord](t, e.do("GET", base+"/"+open, "", auth)); now != was {
		t.Errorf("a refused PUT changed the pay link:\n%+v\n%+v", now, was)
	}
}
