package http

import (
	"net/http"
	"strings"
	"testing"
)

// TestCheckoutFormatsByLanguage (issue 22, item 2): the checkout says
// amounts with the language's separators and the currency's symbol and
// minor units, and times as <time> elements in UTC with the zone named
// (the page's script rewrites them to the browser's zone).
func TestCheckoutFormatsByLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	eur := e.seedInvoice("store_a", testNow, `{"amount": "1234.5"}`) // 2,469,000 sats
	expectPage(t, e.do("GET", "/checkout/"+eur.ID, "", noKey), 200,
		[]string{`<p class="amount" id="fiat">€1,234.50</p>`, `id="btc">0.02469000 BTC</p>`, `id="sats">2,469,000 sats</p>`,
			`Pay by <time datetime="2025-01-02T03:19:05Z" data-local>2025-01-02 03:19 UTC</time>.`},
		[]string{"1234.50 EUR", "2469000 sats"})
	expectPage(t, e.do("GET", "/checkout/"+eur.ID+"?lang=de", "", noKey), 200,
		[]string{"<p class=\"amount\" id=\"fiat\">1.234,50\u00a0€</p>", `id="btc">0,02469000 BTC</p>`, `id="sats">2.469.000 sats</p>`,
			`Zahlbar bis <time datetime="2025-01-02T03:19:05Z" data-local>02.01.2025, 03:19 UTC</time>.`},
		[]string{"1234.50 EUR", "€1,234.50"})

	// Yen has no minor unit.
	jpy := e.seedInvoice("store_a", testNow, `{"amount": "1500", "currency": "JPY"}`)
	expectPage(t, e.do("GET", "/checkout/"+jpy.ID, "", noKey), 200, []string{`id="fiat">¥1,500</p>`}, []string{"1500.00", "¥1,500.00"})

	// The receipt: amounts and the date formatted the same way.
	paid := e.seedInvoice("store_a", testNow, `{"amount": "1234.5"}`)
	settle(e, paid)
	expectPage(t, e.do("GET", "/checkout/"+paid.ID+"?lang=de", "", noKey), 200,
		[]string{"<dd id=\"paid-amount\">0,02469000 BTC (2.469.000 sats) · 1.234,50\u00a0€</dd>",
			`<time datetime="2025-01-02T03:05:05Z" data-local>02.01.2025, 03:05 UTC</time>`}, nil)

	// Part paid: what was received and what is due, formatted.
	part := e.seedInvoice("store_a", testNow, `{"amount": "1234.5"}`)
	e.payOnchain(part, strings.Repeat("cd02", 16), 1_000_000, 0)
	expectPage(t, e.do("GET", "/checkout/"+part.ID, "", noKey), 200,
		[]string{"We received 0.01000000 BTC (1,000,000 sats) of 0.02469000 BTC. Still due: 0.01469000 BTC (1,469,000 sats)."}, nil)
}

// TestCheckoutItemAndOrderID (issue 22, item 3): the checkout names what
// is paid for (metadata.itemDesc, a pay link's title) and the order id
// from orderId or metadata.orderId, where the Coinsnap plugins put it.
func TestCheckoutItemAndOrderID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	plugin := e.seedInvoice("store_a", testNow, `{"amount": 5, "metadata": {"orderId": "wc-1042", "itemDesc": "Blue mug <large>"}}`)
	expectPage(t, e.do("GET", "/checkout/"+plugin.ID, "", noKey), 200,
		[]string{`<p class="item" id="item">Blue mug &lt;large&gt;</p>`, `<p class="muted" id="order">Order wc-1042</p>`}, nil)
	number := e.seedInvoice("store_a", testNow, `{"amount": 5, "metadata": {"orderId": 1042}}`)
	expectPage(t, e.do("GET", "/checkout/"+number.ID, "", noKey), 200, []string{`id="order">Order 1042</p>`}, []string{`id="item"`})
	top := e.seedInvoice("store_a", testNow, `{"amount": 5, "orderId": "A-17", "metadata": {"orderId": "other"}}`)
	expectPage(t, e.do("GET", "/checkout/"+top.ID, "", noKey), 200, []string{`id="order">Order A-17</p>`}, nil)

	pr := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 3, "title": "Workshop ticket", "description": "One seat"}`)).ID
	w := e.do("POST", "/payment-requests/"+pr+"/pay", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	inv := strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/")
	expectPage(t, e.do("GET", "/checkout/"+inv, "", noKey), 200, []string{`<p class="item" id="item">Workshop ticket</p>`}, nil)
}

// TestPayLinkPageFormats (issue 22, items 2 and 3): the pay link page
// formats its amounts and expiry by language, and a paid pay link no
// longer advertises its discount.
func TestPayLinkPageFormats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests",
		`{"amount": "1234.5", "title": "Sofa", "discount": "2.5", "expiryDate": "2025-02-01T10:00:00Z"}`)).ID
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200,
		[]string{`<p class="amount">€1,234.50</p>`, "save 2.5%: you pay €1,203.64 in bitcoin.",
			`Payable until <time datetime="2025-02-01T10:00:00Z" data-local>2025-02-01 10:00 UTC</time>.`}, []string{"1234.50 EUR"})
	expectPage(t, e.do("GET", "/payment-requests/"+id+"?lang=de", "", noKey), 200,
		[]string{"<p class=\"amount\">1.234,50\u00a0€</p>", "2,5\u00a0% sparen: Sie zahlen 1.203,64\u00a0€ in Bitcoin.",
			`Zahlbar bis <time datetime="2025-02-01T10:00:00Z" data-local>01.02.2025, 10:00 UTC</time>.`, ">Ausstehend<"}, nil)

	w := e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	settle(e, e.invoice(strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/")))
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200,
		[]string{">Completed<", "has been paid", "€1,234.50"}, []string{"save 2.5%", "you pay", "in bitcoin", `class="discount"`})
}
