package http

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// TestCheckoutRedirectPlaceholders: the checkout of a paid invoice links
// back to the shop and, with redirectAutomatically, goes there by itself
// (script and noscript meta refresh), with BTCPay's placeholders {OrderId},
// {InvoiceId} and {Status} filled in, query-escaped, in any case
// (InvoiceEntity.RedirectURL in btcpayserver/btcpayserver,
// BTCPayServer/Services/Invoices/InvoiceEntity.cs).
func TestCheckoutRedirectPlaceholders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1, "orderId": "B 2/x", "redirectUrl": "https://shop.example.com/o/{OrderId}?i={invoiceid}&s={STATUS}", "redirectAutomatically": true}`)
	settle(e, inv)
	// As html/template writes it in an attribute: + as &#43;, & as &amp;.
	want := "https://shop.example.com/o/B&#43;2%2Fx?i=" + inv.ID + "&amp;s=Settled"
	body := expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200,
		[]string{`id="back" class="button primary wide" href="` + want + `"`, `data-redirect="` + want + `"`,
			`<meta http-equiv="refresh" content="3;url=` + want + `">`},
		[]string{"{OrderId}", "{invoiceid}", "{STATUS}"})
	if t.Failed() {
		t.Log(body)
	}
	// The live part the script redraws carries the same target.
	expectPage(t, e.do("GET", "/checkout/"+inv.ID+"?part=live", "", noKey), 200, []string{`data-redirect="` + want + `"`}, nil)
}

// TestCheckoutRedirectOnlyOnceSettled: before payment no link and no
// redirect; a link without an automatic redirect when
// redirectAutomatically is off. BTCPay's checkout redirects by itself only
// once the invoice is settled (isSettled in
// BTCPayServer/wwwroot/checkout/checkout.js).
func TestCheckoutRedirectOnlyOnceSettled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	open := e.seedInvoice("store_a", testNow, `{"amount": 1, "redirectUrl": "https://shop.example.com/done", "redirectAutomatically": true}`)
	expectPage(t, e.do("GET", "/checkout/"+open.ID, "", noKey), 200, nil,
		[]string{`id="back"`, "data-redirect", "url=https://shop.example.com"})
	manual := e.seedInvoice("store_a", testNow, `{"amount": 1, "redirectUrl": "https://shop.example.com/done/{InvoiceId}"}`)
	settle(e, manual)
	expectPage(t, e.do("GET", "/checkout/"+manual.ID, "", noKey), 200,
		[]string{`id="back" class="button primary wide" href="https://shop.example.com/done/` + manual.ID + `"`},
		[]string{"data-redirect", "http-equiv=\"refresh\"", "Taking you back"})
}

// TestRedirectTarget: only an absolute http or https URL with a host,
// after the placeholders are filled in, is ever a link or a redirect,
// whatever was stored.
func TestRedirectTarget(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ stored, want string }{
		{"", ""},
		{"https://shop.example/thanks", "https://shop.example/thanks"},
		{"HTTP://shop.example/{orderId}", "HTTP://shop.example/o%261"},
		{"javascript:alert(1)", ""},
		{"JavaScript:alert(document.cookie)//https://x", ""},
		{"data:text/html,<script>alert(1)</script>", ""},
		{"/relative", ""},
		{"//shop.example/x", ""},
		{"https:///nohost", ""},
		{"{OrderId}:alert(1)", ""},
		{"{InvoiceId}://shop.example", ""},
	} {
		inv := &kassa.Invoice{ID: "inv_1", Status: kassa.InvoiceSettled, RedirectURL: tt.stored}
		if got := redirectTarget(inv, "o&1"); got != tt.want {
			t.Errorf("redirectTarget(%q) = %q, want %q", tt.stored, got, tt.want)
		}
	}
}

// TestModalScript serves /modal/btcpay.js, at the root and under the
// Greenfield base URL where BTCPay's WooCommerce Greenfield plugin loads
// it (v2.8.0, src/Gateway/AbstractGateway.php addPublicScripts:
// $this->apiHelper->url . '/modal/btcpay.js'), as JavaScript with every
// function the plugin calls on window.btcpay
// (resources/js/frontend/modalCheckout.js and blocksModalCheckout.js:
// setApiUrlPrefix, showInvoice, onModalWillEnter, onModalReceiveMessage,
// hideFrame) and the rest of BTCPay's window.btcpay.
func TestModalScript(t *testing.T) {
	t.Parallel()
	gf := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusTeapot) })
	e := newEnv(t, withDeps(func(d *Deps) { d.Greenfield = gf }))
	for _, path := range []string{"/modal/btcpay.js", "/greenfield/modal/btcpay.js"} {
		w := e.do("GET", path, "", noKey)
		if w.Code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, w.Code, w.Body.String())
		}
		h := w.Result().Header
		if ct := h.Get("Content-Type"); ct != "text/javascript; charset=utf-8" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || !strings.HasPrefix(h.Get("Cache-Control"), "public, max-age=") || h.Get("ETag") == "" {
			t.Errorf("%s: headers %v", path, h)
		}
		body := w.Body.String()
		for _, fn := range []string{"setApiUrlPrefix", "showInvoice", "onModalWillEnter", "onModalWillLeave", "onModalReceiveMessage",
			"hideFrame", "showFrame", "appendInvoiceFrame", "appendAndShowInvoiceFrame"} {
			if !strings.Contains(body, fn+":") {
				t.Errorf("%s: window.btcpay lacks %s", path, fn)
			}
		}
		// A second fetch with the ETag is answered 304.
		w = e.do("GET", path, "", noKey, header{"If-None-Match", h.Get("ETag")})
		if w.Code != http.StatusNotModified {
			t.Errorf("%s with If-None-Match: %d", path, w.Code)
		}
	}
	// Without the Greenfield API there is nothing to serve under its path.
	plain := newEnv(t)
	if w := plain.do("GET", "/greenfield/modal/btcpay.js", "", noKey); w.Code != http.StatusNotFound {
		t.Errorf("/greenfield/modal/btcpay.js without Greenfield: %d", w.Code)
	}
}
