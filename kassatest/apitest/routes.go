package apitest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/go-chi/chi/v5"
)

// CompareRoutes walks a chi router and fails t for every route that is
// not an operation of doc and every operation of doc that is not
// routed. With prefixes, only routes under one of them count (the
// others are pages, not the API the document describes).
func CompareRoutes(t testing.TB, doc *openapi3.T, routes chi.Routes, prefixes ...string) {
	t.Helper()
	documented := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented[method+" "+path] = true
		}
	}
	served := map[string]bool{}
	err := chi.Walk(routes, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if len(prefixes) > 0 && !hasAnyPrefix(route, prefixes) {
			return nil
		}
		// chi spells a sub-router's root "/x/".
		served[method+" "+strings.TrimSuffix(route, "/")] = true
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

func hasAnyPrefix(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
