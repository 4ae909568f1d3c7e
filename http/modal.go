package http

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"net/http"
	"time"
)

// modalScript is /modal/btcpay.js, the window.btcpay BTCPay's shop
// plugins load for their modal checkout: it opens Kassa's checkout in
// the shop's window, since the checkout may not be framed
// (docs/decisions.md, "Checkout page and the other customer pages").
//
//go:embed modal/btcpay.js
var modalScript []byte

// modalScriptETag names modalScript's content: the plugins load it at a
// URL of their own version, so it is cached for a day and revalidated.
var modalScriptETag = func() string {
	sum := sha256.Sum256(modalScript)
	return `"` + hex.EncodeToString(sum[:8]) + `"`
}()

// serveModalScript answers /modal/btcpay.js, for any origin's pages.
func (s *server) serveModalScript(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/javascript; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cross-Origin-Resource-Policy", "cross-origin")
	h.Set("Cache-Control", "public, max-age=86400")
	h.Set("ETag", modalScriptETag)
	http.ServeContent(w, r, "btcpay.js", time.Time{}, bytes.NewReader(modalScript))
}
