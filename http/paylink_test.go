package http

import (
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

func TestCreatePaymentRequest(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		body     string
		amount   string
		currency kassa.Currency
		expiry   time.Time
	}{
		{"amount as number", `{"amount": 25.5, "title": "Invoice 7"}`, "25.5", "EUR", testNow.Add(kassa.DefaultPaymentRequestExpiry)},
		{"amount as string", `{"amount": "12.50", "title": "Invoice 7", "currency": "eur"}`, "12.5", "EUR", testNow.Add(kassa.DefaultPaymentRequestExpiry)},
		{"expiry as a date", `{"amount": 1, "title": "T", "expiryDate": "2025-02-01"}`, "1", "EUR", time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC)},
		{"expiry as a date-time", `{"amount": 1, "title": "T", "expiryDate": "2025-02-01T10:00:00+01:00"}`, "1", "EUR", time.Date(2025, 2, 1, 9, 0, 0, 0, time.UTC)},
		{"expiry as Unix seconds", `{"amount": 1, "title": "T", "expiryDate": 1738400000}`, "1", "EUR", time.Unix(1738400000, 0).UTC()},
		{"every field", `{"amount": 100, "title": "Consulting", "currency": "CHF", "orderId": 42, "description": "Two hours",
			"redirectUrl": "https://shop.example.com/done", "customerEmail": "c@example.com", "discount": "5",
			"internalNote": "VIP", "unknown": true}`, "100", "CHF", testNow.Add(kassa.DefaultPaymentRequestExpiry)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.do("POST", "/api/v1/stores/store_a/payment-requests", tt.body)
			expectStatus(t, w, 200)
			got := decode[map[string]string](t, w)
			if len(got) != 2 || got["id"] == "" || got["url"] != "https://pay.example.com/payment-requests/"+got["id"] {
				t.Fatalf("create response %v, want id and url", got)
			}
			p, err := e.reader.PaymentRequest(t.Context(), got["id"])
			if err != nil {
				t.Fatal(err)
			}
			if p.StoreID != "store_a" || p.Amount.String() != tt.amount || p.Currency != tt.currency || !p.ExpiryDate.Equal(tt.expiry) {
				t.Errorf("stored pay link %+v", p)
			}
		})
	}

	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/payment-requests", tests[5].body)
	id := decode[map[string]string](t, w)["id"]
	w = e.do("GET", "/api/v1/stores/store_a/payment-requests/"+id, "")
	expectStatus(t, w, 200)
	expectGolden(t, "payment_request", w.Body.Bytes())
}

func TestCreatePaymentRequestErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   string
		status int
		code   string
		fields []string
	}{
		{"amount and title missing", `{}`, 400, kassa.Invalid, []string{"amount", "title"}},
		{"empty body", ``, 400, kassa.Invalid, []string{"amount", "title"}},
		{"null amount", `{"amount": null, "title": "T"}`, 400, kassa.Invalid, []string{"amount"}},
		{"zero amount", `{"amount": 0, "title": "T"}`, 400, kassa.Invalid, []string{"amount"}},
		{"negative amount", `{"amount": "-1.5", "title": "T"}`, 400, kassa.Invalid, []string{"amount"}},
		{"amount not a number", `{"amount": "lots", "title": ""}`, 400, kassa.Invalid, []string{"amount", "title"}},
		{"unknown currency", `{"amount": 1, "title": "T", "currency": "DOGE"}`, 400, kassa.Invalid, []string{"currency"}},
		{"discount out of range", `{"amount": 1, "title": "T", "discount": 100}`, 400, kassa.Invalid, []string{"discount"}},
		{"discount not a number", `{"amount": 1, "title": "T", "discount": "some"}`, 400, kassa.Invalid, []string{"discount"}},
		{"expiry not a date", `{"amount": 1, "title": "T", "expiryDate": "soon"}`, 400, kassa.Invalid, []string{"expiryDate"}},
		{"expiry in the past", `{"amount": 1, "title": "T", "expiryDate": "2024-12-31"}`, 400, kassa.Invalid, []string{"expiryDate"}},
		{"title too long", `{"amount": 1, "title": "` + strings.Repeat("t", 256) + `"}`, 400, kassa.Invalid, []string{"title"}},
		{"redirect not http", `{"amount": 1, "title": "T", "redirectUrl": "ftp://x"}`, 400, kassa.Invalid, []string{"redirectUrl"}},
		{"malformed JSON", `{"amount": 1, "title": }`, 400, kassa.Invalid, nil},
		{"title of the wrong type", `{"amount": 1, "title": 5}`, 400, kassa.Invalid, []string{"title"}},
		{"no key", `{"amount": 1, "title": "T"}`, 401, kassa.Unauthorized, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			var headers []header
			if tt.status == 401 {
				headers = append(headers, noKey)
			}
			body := expectError(t, e.do("POST", "/api/v1/stores/store_a/payment-requests", tt.body, headers...), tt.status, tt.code)
			var fields []string
			for _, f := range body.Errors {
				fields = append(fields, f.Field)
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields %v, want %v (%+v)", fields, tt.fields, body.Errors)
			}
		})
	}
}

// seedPayLinks gives store A two pay links and store B one.
func seedPayLinks(e *env) (a1, a2, b1 string) {
	mk := func(storeID, body string) string {
		e.t.Helper()
		key := keyA
		if storeID == "store_b" {
			key = keyB
		}
		w := e.do("POST", "/api/v1/stores/"+storeID+"/payment-requests", body, header{"X-Api-Key", key})
		expectStatus(e.t, w, 200)
		return decode[map[string]string](e.t, w)["id"]
	}
	return mk("store_a", `{"amount": 10, "title": "First", "currency": "EUR"}`),
		mk("store_a", `{"amount": "20.00", "title": "Second", "expiryDate": "2025-01-03"}`),
		mk("store_b", `{"amount": 5, "title": "Bob's"}`)
}

func TestPaymentRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	a1, a2, b1 := seedPayLinks(e)

	t.Run("list", func(t *testing.T) {
		w := e.do("GET", "/api/v1/stores/store_a/payment-requests", "")
		expectStatus(t, w, 200)
		list := decode[[]paymentRequestRecord](t, w)
		if len(list) != 2 || !(list[0].ID == a1 && list[1].ID == a2 || list[0].ID == a2 && list[1].ID == a1) ||
			list[0].Status != "Pending" || list[0].Type != "Fixed" {
			t.Errorf("list %+v", list)
		}
		w = e.do("GET", "/api/v1/stores/store_b/payment-requests", "", asB)
		if list := decode[[]paymentRequestRecord](t, w); len(list) != 1 || list[0].ID != b1 {
			t.Errorf("store B's list %+v", list)
		}
	})

	t.Run("expired", func(t *testing.T) {
		clock := kassatest.NewTestClock(testNow.Add(48 * time.Hour))
		e2 := *e
		e2.deps.Clock = clock
		e2.h = NewHandler(e2.deps)
		w := e2.do("GET", "/api/v1/stores/store_a/payment-requests/"+a2, "")
		if got := decode[paymentRequestRecord](t, w).Status; got != "Expired" {
			t.Errorf("status %q after expiry, want Expired", got)
		}
	})

	t.Run("update", func(t *testing.T) {
		w := e.do("PUT", "/api/v1/stores/store_a/payment-requests/"+a1, `{"amount": "11.50", "title": "First, updated", "description": "now with text"}`)
		expectStatus(t, w, 200)
		if got := decode[message](t, w).Message; got != "Payment request updated" {
			t.Errorf("message %q", got)
		}
		p := decode[paymentRequestRecord](t, e.do("GET", "/api/v1/stores/store_a/payment-requests/"+a1, ""))
		if p.Amount != "11.5" || p.Title != "First, updated" || p.Description != "now with text" {
			t.Errorf("after update %+v", p)
		}
		body := expectError(t, e.do("PUT", "/api/v1/stores/store_a/payment-requests/"+a1, `{"description": "no amount"}`), 400, kassa.Invalid)
		if len(body.Errors) != 2 {
			t.Errorf("update without amount and title: errors %+v", body.Errors)
		}
		expectError(t, e.do("PUT", "/api/v1/stores/store_a/payment-requests/"+a1, `{"amount": 1, "title": "x"}`, header{"Content-Type", "text/plain"}), 415, kassa.UnsupportedMedia)
	})

	t.Run("archive", func(t *testing.T) {
		w := e.do("DELETE", "/api/v1/stores/store_a/payment-requests/"+a2, "")
		expectStatus(t, w, 200)
		if got := decode[message](t, w).Message; got != "Payment request archived" {
			t.Errorf("message %q", got)
		}
		if got := decode[paymentRequestRecord](t, e.do("GET", "/api/v1/stores/store_a/payment-requests/"+a2, "")).Status; got != "Archived" {
			t.Errorf("status %q, want Archived", got)
		}
	})

	notFound := []struct{ method, path, body string }{
		{"GET", "/api/v1/stores/store_a/payment-requests/" + b1, ""},
		{"PUT", "/api/v1/stores/store_a/payment-requests/" + b1, `{"amount": 1, "title": "stolen"}`},
		{"DELETE", "/api/v1/stores/store_a/payment-requests/" + b1, ""},
		{"GET", "/api/v1/stores/store_a/payment-requests/pr_missing", ""},
		{"DELETE", "/api/v1/stores/store_a/payment-requests/pr_missing", ""},
		{"GET", "/api/v1/stores/store_a/payment-requests/bad%21id", ""},
	}
	for _, tt := range notFound {
		t.Run("404 "+tt.method+" "+tt.path, func(t *testing.T) {
			expectError(t, e.do(tt.method, tt.path, tt.body), 404, kassa.NotFound)
		})
	}
	if p, _ := e.reader.PaymentRequest(t.Context(), b1); p.Title != "Bob's" || p.Archived {
		t.Errorf("another store's pay link was changed: %+v", p)
	}
}
