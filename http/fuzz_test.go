package http

import (
	"encoding/json"
	"net/url"
	"testing"
)

// FuzzRequestBodies sends arbitrary bodies to the two create endpoints:
// every answer is JSON, and nothing is a server error.
func FuzzRequestBodies(f *testing.F) {
	for _, seed := range []string{
		`{"amount": "12.50", "currency": "EUR", "orderId": 7, "metadata": {"a": 1}}`,
		`{"amount": 1e3, "enabledPaymentMethods": "BTC,Lightning"}`,
		`{"amount": "-0", "title": "x", "discount": "99.999", "expiryDate": "2030-01-01"}`,
		`{"amount": [], "title": {}, "expiryDate": 1e99}`,
		`{"amount": "1.000000000000000000000000000001"}`,
		`{"walletMessage": "\u0000\ud800", "metadata": {"__proto__": null}}`,
		`null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, payLink bool) {
		e := newEnv(t)
		path := "/api/v1/stores/store_a/invoices"
		if payLink {
			path = "/api/v1/stores/store_a/payment-requests"
		}
		w := e.do("POST", path, body)
		switch w.Code {
		case 200, 400, 413, 415:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.String())
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %s", w.Body.String())
		}
	})
}

// FuzzListQuery sends arbitrary filters and paging parameters to the
// invoice list: it answers a JSON array or a 400.
func FuzzListQuery(f *testing.F) {
	for _, seed := range [][4]string{
		{"2025-01-01", "1735787045", "10", ""},
		{"2025-01-02T03:04:05+02:00", "", "", "inv_0001"},
		{"999999999999", "0", "1000", "x"},
		{"-1", "2025-13-01", "0", ""},
	} {
		f.Add(seed[0], seed[1], seed[2], seed[3])
	}
	f.Fuzz(func(t *testing.T, start, end, limit, cursor string) {
		e := newEnv(t)
		seedInvoices(e)
		q := url.Values{"startDate": {start}, "endDate": {end}, "limit": {limit}, "cursor": {cursor}}
		w := e.do("GET", "/api/v1/stores/store_a/invoices?"+q.Encode(), "")
		switch w.Code {
		case 200:
			var list []invoiceRecord
			if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil {
				t.Fatalf("not a JSON array: %v", err)
			}
		case 400:
		default:
			t.Fatalf("status %d: %s", w.Code, w.Body.String())
		}
	})
}
