// Package apidocs holds the OpenAPI document of Kassa's HTTP API and the
// reference page that renders it, both embedded in the binary: the
// document is served at /api/v1/openapi.json and the page at /docs/api,
// with Redoc's standalone bundle vendored under redoc/ (see
// scripts/vendor-apidocs.sh) so that the page loads nothing from other
// origins. The tests of package http and cmd/kassa validate every request
// and response they make against the document (kassatest/apitest).
package apidocs

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"net/http"
	"time"
)

// OpenAPI is the OpenAPI 3.1 document of the API, as JSON.
//
//go:embed openapi.json
var OpenAPI []byte

//go:embed index.html init.js redoc/redoc.standalone.js redoc/LICENSE redoc/THIRD-PARTY-LICENSES.txt
var files embed.FS

// CSP is the Content-Security-Policy of the reference page: scripts,
// styles, images and fonts from this origin only (Redoc injects its styles,
// hence 'unsafe-inline' for styles; its search runs in a worker made from
// a blob), the document fetched from this origin, nothing else.
const CSP = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; " +
	"font-src 'self' data:; connect-src 'self'; worker-src blob:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// asset is one file served with its type, ETag and cache lifetime.
type asset struct {
	body        []byte
	contentType string
	etag        string
	cache       string
}

func newAsset(body []byte, contentType, cache string) asset {
	sum := sha256.Sum256(body)
	return asset{body: body, contentType: contentType, etag: `"` + hex.EncodeToString(sum[:16]) + `"`, cache: cache}
}

func mustRead(name string) []byte {
	b, err := files.ReadFile(name)
	if err != nil {
		panic("apidocs: " + err.Error()) // embedded: cannot fail
	}
	return b
}

// The document and the page change only with the binary; clients may keep
// them five minutes and revalidate with the ETag.
const cacheControl = "public, max-age=300"

var (
	spec  = newAsset(OpenAPI, "application/json", cacheControl)
	pages = map[string]asset{
		"/docs/api":                     newAsset(mustRead("index.html"), "text/html; charset=utf-8", cacheControl),
		"/docs/api/init.js":             newAsset(mustRead("init.js"), "text/javascript; charset=utf-8", cacheControl),
		"/docs/api/redoc.standalone.js": newAsset(mustRead("redoc/redoc.standalone.js"), "text/javascript; charset=utf-8", cacheControl),
		"/docs/api/LICENSE.txt": newAsset(append(append(mustRead("redoc/LICENSE"), '\n'), mustRead("redoc/THIRD-PARTY-LICENSES.txt")...),
			"text/plain; charset=utf-8", cacheControl),
	}
)

// serve answers a with its ETag (304 to a matching If-None-Match).
func serve(w http.ResponseWriter, r *http.Request, a asset) {
	h := w.Header()
	h.Set("Content-Type", a.contentType)
	h.Set("ETag", a.etag)
	h.Set("Cache-Control", a.cache)
	h.Set("X-Content-Type-Options", "nosniff")
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
}

// ServeOpenAPI answers the OpenAPI document; it needs no key.
func ServeOpenAPI(w http.ResponseWriter, r *http.Request) { serve(w, r, spec) }

// ServeDocs answers the reference page (/docs/api) and its assets under
// /docs/api/, and 404 for anything else.
func ServeDocs(w http.ResponseWriter, r *http.Request) {
	a, ok := pages[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Security-Policy", CSP)
	w.Header().Set("Referrer-Policy", "no-referrer")
	serve(w, r, a)
}
