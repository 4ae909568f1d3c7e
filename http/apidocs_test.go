package http

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/apidocs"
	"github.com/kassapay/kassa/rates"
)

// TestOpenAPIDocument serves the embedded document without a key, with an
// ETag that a revalidation answers with 304.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("GET", "/api/v1/openapi.json", "")
	expectStatus(t, w, 200)
	var doc struct {
		OpenAPI string         `json:"openapi"`
		Paths   map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" || len(doc.Paths) == 0 {
		t.Fatalf("document %q, %d paths: %v", doc.OpenAPI, len(doc.Paths), err)
	}
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	if cc := w.Header().Get("Cache-Control"); !strings.HasPrefix(cc, "public") {
		t.Errorf("Cache-Control %q, want public caching", cc)
	}
	etag := w.Header().Get("ETag")
	if etag == "" {
		t.Fatal("no ETag")
	}
	again := e.do("GET", "/api/v1/openapi.json", "", header{"If-None-Match", etag})
	expectStatus(t, again, 304)
	if again.Body.Len() != 0 {
		t.Errorf("304 with a body: %q", again.Body.String())
	}
}

// TestAPIReferencePage serves the rendered reference with a
// Content-Security-Policy that admits this origin only, and HTML and
// scripts that refer to nothing on another origin.
func TestAPIReferencePage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("GET", "/docs/api", "")
	expectStatus(t, w, 200)
	if ct := w.Header().Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	csp := w.Header().Get("Content-Security-Policy")
	directives := map[string]string{}
	for _, d := range strings.Split(csp, ";") {
		name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
		directives[name] = value
	}
	want := map[string]string{
		"default-src": "'none'", "script-src": "'self'", "connect-src": "'self'",
		"img-src": "'self' data:", "font-src": "'self' data:", "frame-ancestors": "'none'", "base-uri": "'none'",
	}
	for name, value := range want {
		if directives[name] != value {
			t.Errorf("CSP %s = %q, want %q (policy %q)", name, directives[name], value, csp)
		}
	}
	for name, value := range directives {
		if strings.Contains(value, "http") || strings.Contains(value, "*") || strings.Contains(value, "unsafe-eval") {
			t.Errorf("CSP %s admits %q", name, value)
		}
	}

	// Every reference of the page is a path on this origin (or data:).
	html := w.Body.String()
	refs := regexp.MustCompile(`(?i)\b(?:src|href)\s*=\s*"([^"]*)"`).FindAllStringSubmatch(html, -1)
	if len(refs) < 3 {
		t.Fatalf("page refers to %d resources: %s", len(refs), html)
	}
	for _, ref := range refs {
		u := ref[1]
		if !(strings.HasPrefix(u, "/") && !strings.HasPrefix(u, "//")) && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page refers to %q, not on this origin", u)
			continue
		}
		if strings.HasPrefix(u, "/") {
			expectStatus(t, e.do("GET", u, ""), 200)
		}
	}
	if !strings.Contains(html, `src="/docs/api/redoc.standalone.js"`) || !strings.Contains(html, `src="/docs/api/init.js"`) {
		t.Errorf("the page does not load the vendored renderer: %s", html)
	}
	init := e.do("GET", "/docs/api/init.js", "")
	if !strings.Contains(init.Body.String(), `"/api/v1/openapi.json"`) {
		t.Errorf("init.js does not render the served document: %s", init.Body.String())
	}
	if got := init.Header().Get("Content-Security-Policy"); got != apidocs.CSP {
		t.Errorf("assets served with CSP %q", got)
	}
	lic := e.do("GET", "/docs/api/LICENSE.txt", "")
	expectStatus(t, lic, 200)
	if !strings.Contains(lic.Body.String(), "MIT") {
		t.Errorf("the renderer's licence is not served: %.200s", lic.Body.String())
	}
	expectStatus(t, e.do("GET", "/docs/api/other.js", ""), 404)
}

// TestOpenAPICurrencies keeps the document's Currency enum equal to what
// the simulation serves, which is every currency that any provider
// quotes, then BTC and SATS.
func TestOpenAPICurrencies(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas struct {
				Currency struct {
					Enum []kassa.Currency `json:"enum"`
				} `json:"Currency"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(apidocs.OpenAPI, &doc); err != nil {
		t.Fatal(err)
	}
	want := append(rates.Fixed{}.Currencies(), kassa.BTC, kassa.SATS)
	if got := doc.Components.Schemas.Currency.Enum; !slices.Equal(got, want) {
		t.Errorf("Currency enum %v, want %v", got, want)
	}
}
