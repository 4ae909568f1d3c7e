package http

import (
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
	routes, ok := NewHandler(Deps{}).(chi.Routes)
	if !ok {
		t.Fatal("the handler is not a chi router")
	}
	apitest.CompareRoutes(t, doc, routes, "/api/v1/", "/admin/v1/")
}
