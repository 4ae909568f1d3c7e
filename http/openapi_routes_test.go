package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa/kassatest/apitest"
)

// TestEveryRouteIsDocumented walks the server's router: every route under
// /api/v1 and /admin/v1 is an operation of the document, and every
// operation of the document is served.
func TestEveryRouteIsDocumented(t *testing.T) {
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	routes, ok := NewHandler(Deps{}).(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	served := map[string]bool{}
	err = chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.HasPrefix(route, "/api/v1/") && !strings.HasPrefix(route, "/admin/v1/") {
			return nil
		}
		// chi spells a sub-router's root "/x/".
		route = strings.TrimSuffix(route, "/")
		served[method+" "+route] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for op := range served {
		if !documented[op] {
			t.Errorf("%s is served but not in the OpenAPI document", op)
		}
	}
	for op := range documented {
		if !served[op] {
			t.Errorf("%s is in the OpenAPI document but not served", op)
		}
	}
}
