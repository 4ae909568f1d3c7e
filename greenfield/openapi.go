package greenfield

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the OpenAPI 3 document of the Greenfield subset this package
// serves: BTCPay's own operations and schemas (version BTCPayVersion's
// swagger files) for exactly the routes of NewHandler, with the error
// answers Kassa gives. The tests check every exchange against it.
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI answers GET /openapi.json with the document.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(OpenAPI)
}
