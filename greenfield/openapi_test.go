package greenfield_test

import (
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa/greenfield"
	"github.com/kassapay/kassa/kassatest/apitest"
)

// gfDoc is the Greenfield document the tests check every exchange under
// /greenfield against (env's handler); it records what they exercised.
var gfDoc = apitest.NewDocument(greenfield.OpenAPI, base, "ProblemDetails", "/api/v1/", "/i/", "/openapi.json")

// TestMain runs the tests, then fails when an operation of the document
// was exercised by none of them (only when the whole package ran: a -run
// subset exercises a subset).
func TestMain(m *testing.M) {
	code := m.Run()
	if code == 0 && !filtered() {
		if missing := unexercised(); len(missing) > 0 {
			for _, op := range missing {
				fmt.Fprintln(os.Stderr, "greenfield OpenAPI coverage: no test exercises "+op)
			}
			code = 1
		}
	}
	os.Exit(code)
}

// filtered reports whether -run, -skip or -list chose a subset of tests.
func filtered() bool {
	for _, name := range []string{"test.run", "test.skip", "test.list"} {
		if f := flag.Lookup(name); f != nil && f.Value.String() != "" {
			return true
		}
	}
	return false
}

// unexercised lists the document's operations no exchange reached.
func unexercised() []string {
	doc, err := gfDoc.Load()
	if err != nil {
		return []string{err.Error()}
	}
	seen := map[string]bool{}
	for _, k := range gfDoc.Seen() {
		method, rest, _ := strings.Cut(k, " ")
		template, _, _ := strings.Cut(rest, " ")
		seen[method+" "+template] = true
	}
	var missing []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			if !seen[method+" "+path] {
				missing = append(missing, method+" "+path)
			}
		}
	}
	slices.Sort(missing)
	return missing
}

// TestOpenAPIDocument: the document parses, is valid OpenAPI 3, says which
// BTCPay version it follows, and lists exactly the routes the router
// serves.
func TestOpenAPIDocument(t *testing.T) {
	doc, err := gfDoc.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	if !strings.Contains(doc.Info.Description, "BTCPay Server v"+greenfield.BTCPayVersion) || !strings.Contains(doc.Info.Description, "subset") {
		t.Errorf("info.description does not name BTCPay v%s and the subset: %q", greenfield.BTCPayVersion, doc.Info.Description)
	}
	e := newEnv(t)
	routes, ok := greenfield.NewHandler(e.deps()).(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	apitest.CompareRoutes(t, doc, routes)
}

// TestOpenAPIServed: GET /greenfield/openapi.json answers the document,
// without a key.
func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	w := e.do(http.MethodGet, base+"/openapi.json", "", "")
	expectStatus(t, w, http.StatusOK)
	if ct := w.Header().Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var v map[string]any
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || v["openapi"] == nil {
		t.Fatalf("not the document: %v", err)
	}
}
