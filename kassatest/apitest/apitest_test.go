package apitest_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa/kassatest/apitest"
)

// TestDocumentIsValid loads the embedded document: it is OpenAPI 3.1 and
// valid, examples included (they are checked against their schemas).
func TestDocumentIsValid(t *testing.T) {
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	if doc.OpenAPI != "3.1.0" {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	for _, name := range []string{"invoiceEvent", "invoiceEventRedelivery", "webhookUrlValidation"} {
		if doc.Webhooks[name] == nil {
			t.Errorf("webhook %s is not described", name)
		}
	}
}

// TestCheck shows what the checker catches.
func TestCheck(t *testing.T) {
	req := func(method, target, body string) *http.Request {
		r := httptest.NewRequest(method, target, strings.NewReader(body))
		if body != "" {
			r.Header.Set("Content-Type", "application/json")
		}
		return r
	}
	json := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	store := `{"id":"s1","storeId":"s1","name":"Shop","walletMinSendable":1000,"walletMaxSendable":2000,` +
		`"apiKey":"k","percentFee":1,"underpaymentTolerance":0,"currency":"EUR","refundAutoApproveMax":0}`
	noStore := http.Header{"Content-Type": {"application/json"}, "Cache-Control": {"no-store"}}
	tests := []struct {
		name string
		x    apitest.Exchange
		want string // a part of the first problem; empty: none
	}{
		{"as documented", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1", ""), Status: 200, Header: noStore, Body: []byte(store)}, ""},
		{"trailing slash", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1/", ""), Status: 200, Header: noStore, Body: []byte(store)}, ""},
		{"undocumented field", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1", ""), Status: 200, Header: noStore,
			Body: []byte(strings.Replace(store, `"name"`, `"extra":1,"name"`, 1))}, "extra"},
		{"missing header", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1", ""), Status: 200, Header: json, Body: []byte(store)}, "Cache-Control"},
		{"undocumented status", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1", ""), Status: 418, Header: json,
			Body: []byte(`{"code":"invalid","message":"x"}`)}, "status is not supported"},
		{"wrong error code", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1", ""), Status: 404, Header: json,
			Body: []byte(`{"code":"invalid","message":"x"}`)}, "not_found"},
		{"invalid request refused", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1/invoices?limit=0", ""), Status: 400, Header: json,
			Body: []byte(`{"code":"invalid","message":"x","errors":[{"field":"limit","message":"x"}]}`)}, ""},
		{"invalid request accepted", apitest.Exchange{Request: req("GET", "/api/v1/stores/s1/invoices?limit=0", ""), Status: 200, Header: json,
			Body: []byte(`[]`)}, "calls invalid"},
		{"unknown route", apitest.Exchange{Request: req("GET", "/api/v1/nothing", ""), Status: 404, Header: json,
			Body: []byte(`{"code":"not_found","message":"no route"}`)}, ""},
		{"unknown route answered", apitest.Exchange{Request: req("GET", "/api/v1/nothing", ""), Status: 200, Header: json,
			Body: []byte(`{}`)}, "no route"},
		{"method not allowed", apitest.Exchange{Request: req("PATCH", "/api/v1/health", ""), Status: 405,
			Header: http.Header{"Content-Type": {"application/json"}, "Allow": {"GET"}}, Body: []byte(`{"code":"method_not_allowed","message":"x"}`)}, ""},
		{"405 without Allow", apitest.Exchange{Request: req("PATCH", "/api/v1/health", ""), Status: 405, Header: json,
			Body: []byte(`{"code":"method_not_allowed","message":"x"}`)}, "Allow"},
		{"outside the document", apitest.Exchange{Request: req("GET", "/checkout/abc", ""), Status: 200,
			Header: http.Header{"Content-Type": {"text/html"}}, Body: []byte(`<html>`)}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := apitest.Check(tt.x)
			switch {
			case tt.want == "" && len(problems) > 0:
				t.Errorf("problems: %v", problems)
			case tt.want != "" && len(problems) == 0:
				t.Errorf("no problem found, want one about %q", tt.want)
			case tt.want != "" && !strings.Contains(strings.Join(problems, "\n"), tt.want):
				t.Errorf("problems %v do not mention %q", problems, tt.want)
			}
		})
	}
}

// TestOpenAPICoverage lists every (route, method, status) of the document
// that no test suite exercised, from what the suites of package http and
// cmd/kassa wrote to $KASSA_OPENAPI_COVERAGE. It fails when an operation
// was not exercised at all; statuses left out are listed. `make test` runs
// it after the suites; on its own it has nothing to read and skips.
func TestOpenAPICoverage(t *testing.T) {
	dir := os.Getenv(apitest.CoverageEnv)
	if dir == "" || os.Getenv("KASSA_OPENAPI_COVERAGE_CHECK") == "" {
		t.Skip("runs after the suites, from `make test`: set " + apitest.CoverageEnv + " to the directory they wrote and KASSA_OPENAPI_COVERAGE_CHECK=1")
	}
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	files, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		s := bufio.NewScanner(f)
		for s.Scan() {
			seen[s.Text()] = true
		}
		f.Close()
	}
	if len(seen) == 0 {
		t.Fatalf("no suite wrote its coverage to %s", dir)
	}
	var missingOps, missingStatuses []string
	total := 0
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			covered := false
			for status := range op.Responses.Map() {
				total++
				if seen[method+" "+path+" "+status] {
					covered = true
				} else {
					missingStatuses = append(missingStatuses, method+" "+path+" "+status)
				}
			}
			if !covered {
				missingOps = append(missingOps, method+" "+path)
			}
		}
	}
	slices.Sort(missingStatuses)
	slices.Sort(missingOps)
	t.Logf("%d of %d documented (route, method, status) exercised", total-len(missingStatuses), total)
	for _, s := range missingStatuses {
		t.Logf("not exercised: %s", s)
	}
	for _, op := range missingOps {
		t.Errorf("no suite exercises %s", op)
	}
}

// TestCheckWebhook checks requests as Kassa sends them to a webhook URL.
func TestCheckWebhook(t *testing.T) {
	signed := func(body string, drop string) *http.Request {
		r := httptest.NewRequest("POST", "https://shop.example/hook", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set("X-Service-Signature", "t=1795459420,v1=0f3a5c7e9b1d2f4a6c8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a")
		r.Header.Set("X-Service-Sig", "sha256=8e0b2d4f6a8c0e2b4d6f8a0c2e4b6d8f0a2c4e6b8d0f2a0f3a5c7e9b1d2f4a6c")
		r.Header.Set("X-Service-Event-Id", "ev1")
		r.Header.Set("X-Service-Delivery-Id", "d1")
		r.Header.Del(drop)
		return r
	}
	event := `{"type":"Settled","invoiceId":"i1","metadata":{"orderId":"7"},"additionalStatus":"None"}`
	flags := `{"type":"Settled","invoiceId":"i1","metadata":{},"additionalStatus":"Overpaid","overPaid":true,"afterExpiration":false}`
	badFlag := `{"type":"Settled","invoiceId":"i1","metadata":{},"additionalStatus":"Overpaid","overPaid":"yes","afterExpiration":false}`
	extra := `{"type":"Settled","invoiceId":"i1","metadata":{},"additionalStatus":"None","surprise":1}`
	check := `{"app":"Kassa","message":"test","purpose":"webhook_url_validation","timestamp":"2026-11-23T18:00:00Z"}`
	tests := []struct {
		name string
		req  *http.Request
		body string
		ok   bool
	}{
		{"event", signed(event, ""), event, true},
		{"redelivery", signed(`{"type":"Settled","invoiceId":"i1"}`, ""), `{"type":"Settled","invoiceId":"i1"}`, true},
		{"unsigned event", signed(event, "X-Service-Sig"), event, false},
		{"unknown type", signed(`{"type":"Paid","invoiceId":"i1"}`, ""), `{"type":"Paid","invoiceId":"i1"}`, false},
		{"URL check", httptest.NewRequest("POST", "https://shop.example/hook", nil), check, true},
		{"plugin flags", signed(flags, ""), flags, true},
		{"plugin flag not a boolean", signed(badFlag, ""), badFlag, false},
		{"undocumented field", signed(extra, ""), extra, false},
	}
	tests[4].req.Header.Set("Content-Type", "application/json")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := apitest.CheckWebhook(tt.req, []byte(tt.body))
			if ok := len(problems) == 0; ok != tt.ok {
				t.Errorf("ok = %v, want %v: %v", ok, tt.ok, problems)
			}
		})
	}
}
