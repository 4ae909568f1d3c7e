package http

import (
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
)

// expectPage checks that w is an HTML page with status and a strict
// Content-Security-Policy, and that its text holds every want and none of
// dontWant.
func expectPage(t *testing.T, w interface {
	Result() *http.Response
}, status int, want []string, dontWant []string) string {
	t.Helper()
	resp := w.Result()
	body := string(readAll(t, resp.Body))
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
		t.Errorf("Content-Type %q", ct)
	}
	csp := resp.Header.Get("Content-Security-Policy")
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'self';") || strings.Contains(csp, "unsafe") {
		t.Errorf("Content-Security-Policy %q", csp)
	}
	for _, s := range want {
		if !strings.Contains(body, s) {
			t.Errorf("page lacks %q", s)
		}
	}
	for _, s := range dontWant {
		if strings.Contains(body, s) {
			t.Errorf("page has %q", s)
		}
	}
	if strings.Contains(body, "http://") || strings.Contains(body, "https://cdn") || strings.Contains(body, "ZgotmplZ") {
		t.Error("page loads an outside asset or has an unsafe URL")
	}
	return body
}

func TestCheckoutPage(t *testing.T) {
	t.Parallel()
	for _, sim := range []bool{false, true} {
		name := "real"
		var opts []option
		if sim {
			name, opts = "simulation", []option{withSim}
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, opts...)
			inv := e.seedInvoice("store_a", testNow, `{"amount": "12.50", "orderId": "A-17", "redirectUrl": "https://shop.example.com/thanks", "redirectAutomatically": true}`)
			want := []string{"Pay Alice&#39;s Shop", "Order A-17", "0.00025000 BTC", "25,000 sats", "€12.50", "Waiting for payment",
				`src="data:image/png;base64,`, inv.OnchainAddress, inv.LightningInvoice,
				// One unified QR code selected; Lightning and on-chain alone behind tabs.
				`role="tablist"`, `id="tab-unified" href="?tab=unified" aria-controls="panel-unified" aria-selected="true"`,
				`id="tab-lightning" href="?tab=lightning" aria-controls="panel-lightning" aria-selected="false"`,
				`id="tab-onchain" href="?tab=onchain" aria-controls="panel-onchain" aria-selected="false"`,
				`<div class="panel" id="panel-lightning" role="tabpanel" aria-labelledby="tab-lightning" hidden>`,
				`href="bitcoin:` + inv.OnchainAddress + `?amount=0.00025&amp;label=Alice%27s%20Shop&amp;lightning=LNBCRT`,
				`href="lightning:LNBCRT`, `href="bitcoin:` + inv.OnchainAddress + `?amount=0.00025&amp;label=Alice%27s%20Shop"`,
				"Open in wallet", `data-copy="u-address"`, `data-copy="l-invoice"`, `data-copy="o-amount"`, `<code id="o-amount"`, ">0.00025</code>",
				`aria-label="Copy the Lightning invoice"`,
				`id="countdown" data-remaining="900"`, "Time left to pay", "15:00", `Pay by <time datetime="2025-01-02T03:19:05Z" data-local>2025-01-02 03:19 UTC</time>.`,
				`<noscript><meta http-equiv="refresh" content="10"></noscript>`,
				`<script src="/checkout-assets/pages.js?v=`, `<link rel="stylesheet" href="/checkout-assets/pages.css?v=`,
				`:root{--brand:#1a56db;--on-brand:#ffffff}`}
			simParts := []string{"SIMULATION", "Pay by Lightning", "Pay on-chain", "Mine a block"}
			var body string
			if sim {
				want = append(want, simParts...)
				body = expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, want, nil)
			} else {
				body = expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, want, simParts)
			}
			if strings.Count(body, "<script") != strings.Count(body, "<script src=") {
				t.Error("the page has an inline script")
			}
			if strings.Contains(body, "data-redirect") {
				t.Error("an unpaid invoice redirects")
			}
		})
	}
}

// TestCheckoutPageCSP checks the exact policy of the customer pages: no
// inline script, nothing from another origin.
func TestCheckoutPageCSP(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	pr := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 1, "title": "T"}`)).ID
	for _, path := range []string{"/checkout/" + inv.ID, "/payment-requests/" + pr, "/checkout/inv_missing"} {
		w := e.do("GET", path, "", noKey)
		csp := w.Header().Get("Content-Security-Policy")
		nonce := between(w.Body.String(), `<style nonce="`, `"`)
		want := "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-" + nonce + "'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
		if nonce == "" || csp != want {
			t.Errorf("%s: Content-Security-Policy\n%q, want\n%q", path, csp, want)
		}
		if w.Header().Get("X-Content-Type-Options") != "nosniff" || w.Header().Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", path, w.Header())
		}
	}
	// Two renderings, two nonces.
	a := between(e.do("GET", "/checkout/"+inv.ID, "", noKey).Body.String(), `nonce="`, `"`)
	b := between(e.do("GET", "/checkout/"+inv.ID, "", noKey).Body.String(), `nonce="`, `"`)
	if a == b {
		t.Error("the nonce is reused")
	}
}

// between returns the text of s between the first from and the next to.
func between(s, from, to string) string {
	_, rest, ok := strings.Cut(s, from)
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, to)
	return v
}

func TestCheckoutAssets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for name, ctype := range map[string]string{"pages.js": "text/javascript; charset=utf-8", "pages.css": "text/css; charset=utf-8"} {
		w := e.do("GET", assetURL(name), "", noKey)
		expectStatus(t, w, 200)
		if w.Header().Get("Content-Type") != ctype || !strings.Contains(w.Header().Get("Cache-Control"), "immutable") || w.Body.Len() < 1000 {
			t.Errorf("%s: %v, %d bytes", name, w.Header(), w.Body.Len())
		}
	}
	for _, path := range []string{assetPrefix + "nope.js", assetPrefix + "..%2fpage.go"} {
		if w := e.do("GET", path, "", noKey); w.Code != 404 {
			t.Errorf("%s: %d", path, w.Code)
		}
	}
}

func TestCheckoutPageStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"enabledPaymentMethods": ["Lightning"]}`)
	expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200,
		[]string{"Any amount", `href="lightning:LNBCRT`, `id="panel-lightning">`}, []string{`role="tablist"`, "QR code: Bitcoin address and amount", "sats"})

	paid := e.seedInvoice("store_a", testNow, `{"amount": 1, "orderId": "B-2", "redirectUrl": "https://shop.example.com/done", "redirectAutomatically": true}`)
	settle(e, paid)
	expectPage(t, e.do("GET", "/checkout/"+paid.ID, "", noKey), 200,
		[]string{`data-state="paid"`, "<h2 id=\"state-title\">Paid</h2>", "Thank you! Your payment has been received.", "Receipt",
			"0.00002000 BTC (2,000 sats) · €1.00", "2025-01-02 03:05 UTC", "<code>" + paid.ID + "</code>", "B-2", "On-chain", strings.Repeat("ab01", 16),
			`id="back" class="button primary wide" href="https://shop.example.com/done"`, `data-redirect="https://shop.example.com/done"`,
			`<noscript><meta http-equiv="refresh" content="3;url=https://shop.example.com/done"></noscript>`, "Taking you back to the shop"},
		[]string{`id="panel-`, `id="countdown"`, "Waiting for payment"})

	expectPage(t, e.do("GET", "/checkout/inv_missing", "", noKey), 404, []string{"invoice not found"}, nil)
	expectPage(t, e.do("GET", "/checkout/bad%21id", "", noKey), 404, []string{"invoice not found"}, nil)
}

// TestCheckoutReceiptCurrency: the receipt of an invoice priced in
// another currency than the store's shows what was paid in the invoice's
// currency, the figure the customer was billed.
func TestCheckoutReceiptCurrency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": "1234.56", "currency": "CAD"}`)
	settle(e, inv)
	body := expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, []string{"Receipt", "0.01646080 BTC (1,646,080 sats) · CA$1,234.56"}, []string{"€"})
	if t.Failed() {
		t.Log(body)
	}
}

// TestCheckoutPagePlainStates walks one invoice through each state the
// customer can meet and checks the words the page uses for it.
func TestCheckoutPagePlainStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	page := func(inv *kassa.Invoice, want []string, dontWant []string) {
		t.Helper()
		expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, want, append(dontWant, ">New<", ">Processing<", ">Settled<"))
	}
	// Underpaid: part received on-chain; the rest is due on-chain only.
	part := e.seedInvoice("store_a", testNow, `{"amount": 10}`) // 20000 sats
	e.payOnchain(part, strings.Repeat("cd02", 16), 5000, 0)
	page(part, []string{`data-state="underpaid"`, "Partly paid", "We received 0.00005000 BTC (5,000 sats) of 0.00020000 BTC. Still due: 0.00015000 BTC (15,000 sats).",
		`href="bitcoin:` + part.OnchainAddress + `?amount=0.00015&amp;label=Alice%27s%20Shop"`, "the Lightning invoice can be paid only once"},
		[]string{`id="tab-lightning"`, `id="panel-unified"`})

	// Seen: the whole amount in the mempool, one confirmation needed.
	seen := e.seedInvoice("store_a", testNow, `{"amount": 10}`)
	e.payOnchain(seen, strings.Repeat("ef03", 16), seen.Amount, 0)
	page(seen, []string{`data-state="seen"`, "Payment seen, waiting for confirmation", "(1 confirmation)", "Confirmations: 0 of 1", strings.Repeat("ef03", 16),
		`<noscript><meta http-equiv="refresh" content="30"></noscript>`}, []string{`id="panel-`, `id="countdown"`})

	// Overpaid.
	over := e.seedInvoice("store_a", testNow, `{"amount": 10}`)
	e.payOnchain(over, strings.Repeat("0a04", 16), over.Amount+1000, 2)
	page(over, []string{`data-state="paid"`, "You paid 0.00001000 BTC (1,000 sats) more than asked"}, nil)

	// Expired, with nothing paid; and another after a partial payment.
	gone := e.seedInvoice("store_a", testNow, `{"amount": 10, "redirectUrl": "https://shop.example.com/cart"}`)
	e.advanceTo(gone.ExpiresAt.Add(time.Second))
	page(gone, []string{`data-state="expired"`, "This invoice has expired", "Go back to the shop to start again",
		`id="back" class="button primary wide" href="https://shop.example.com/cart"`}, []string{`id="panel-`, `id="countdown"`, "Pay again", "<noscript>"})
	page(part, []string{`data-state="expired"`, "It expired after receiving 0.00005000 BTC (5,000 sats) of 0.00020000 BTC", part.ID}, nil)

	// Paid late: the payment confirmed after expiry settles it.
	e.payOnchain(gone, strings.Repeat("1b05", 16), gone.Amount, 1)
	e.eventually("the late payment to settle", func() bool { return e.invoice(gone.ID).Status == kassa.InvoiceSettled })
	page(gone, []string{`data-state="paidLate"`, "Paid late", "arrived after the invoice had expired"}, nil)
}

// TestCheckoutPageExpiredPayLink offers "Pay again" on an expired
// invoice of a pay link, which pays the pay link with a new invoice.
func TestCheckoutPageExpiredPayLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	pr := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 3, "title": "Tea", "expiryDate": "2025-03-01"}`)).ID
	w := e.do("POST", "/payment-requests/"+pr+"/pay", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	first := strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/")
	e.advanceTo(e.invoice(first).ExpiresAt.Add(time.Second))
	expectPage(t, e.do("GET", "/checkout/"+first+"?lang=de", "", noKey), 200,
		[]string{"Diese Rechnung ist abgelaufen", "Erneut bezahlen", `<form method="post" action="/payment-requests/` + pr + `/pay?lang=de">`}, nil)
	w = e.do("POST", "/payment-requests/"+pr+"/pay?lang=de", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	if second := w.Header().Get("Location"); !strings.HasSuffix(second, "?lang=de") || strings.Contains(second, first) {
		t.Errorf("Pay again went to %q, want a new invoice's checkout in German", second)
	}
}

// TestCheckoutPageLanguage picks German from Accept-Language or ?lang=,
// and English for anything else.
func TestCheckoutPageLanguage(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSim)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1, "orderId": "C-3"}`)
	german := []string{`<html lang="de" dir="ltr">`, "Alice&#39;s Shop bezahlen", "Bestellung C-3", "Warten auf Ihre Zahlung", "In der Wallet öffnen",
		"Jede Wallet", "Verbleibende Zeit", "Per Lightning bezahlen", `<span aria-current="true">Deutsch</span>`, `href="/checkout/` + inv.ID + `?lang=en"`}
	expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey, header{"Accept-Language", "de-DE,de;q=0.9,en;q=0.5"}), 200, german, []string{"Waiting for payment"})
	expectPage(t, e.do("GET", "/checkout/"+inv.ID+"?lang=de", "", noKey, header{"Accept-Language", "en"}), 200, german, nil)
	expectPage(t, e.do("GET", "/checkout/"+inv.ID+"?lang=xx", "", noKey, header{"Accept-Language", "sw"}), 200,
		[]string{`<html lang="en" dir="ltr">`, "Waiting for payment"}, []string{"Warten"})
}

// TestCheckoutPageRightToLeft: Arabic, Persian and Hebrew pages are laid
// out right to left, in their own words and digits, and the language
// switch offers every language, each in its own words.
func TestCheckoutPageRightToLeft(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1234.5, "orderId": "C-4"}`)
	for lang, want := range map[string][]string{
		"ar": {`<html lang="ar" dir="rtl">`, "في انتظار الدفع", "الطلب C-4", `<span aria-current="true">العربية</span>`},
		"fa": {`<html lang="fa" dir="rtl">`, "در انتظار پرداخت", "۱٬۲۳۴٫۵۰", `hreflang="ar" lang="ar" dir="rtl">العربية</a>`},
		"he": {`<html lang="he" dir="rtl">`, "ממתינים לתשלום", `hreflang="ar" lang="ar" dir="rtl">العربية</a>`},
		"ja": {`<html lang="ja" dir="ltr">`, "お支払いを待っています", `hreflang="ar" lang="ar" dir="rtl">العربية</a>`},
	} {
		expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey, header{"Accept-Language", lang}), 200,
			append(want, `hreflang="pt" lang="pt" dir="ltr">Português</a>`), []string{"Waiting for payment"})
	}
}

// TestCheckoutPageBranding shows the store's logo and colour, with text
// on the colour that stays readable.
func TestCheckoutPageBranding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	logo := "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
	for _, tc := range []struct{ color, on string }{{"#ffd400", "#000000"}, {"#0b3d2e", "#ffffff"}} {
		st := e.putStore("store_"+tc.color[1:], kassa.StoreSettings{Name: "Brand Co", Currency: kassa.EUR, LogoURL: logo, BrandColor: tc.color})
		inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1), HasAmount: true, Currency: kassa.EUR, EnabledMethods: []kassa.PaymentMethod{kassa.MethodLightning}})
		if err != nil {
			t.Fatal(err)
		}
		expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200,
			[]string{`<img class="logo" src="` + strings.ReplaceAll(logo, "+", "&#43;") + `" alt="Brand Co logo">`, ":root{--brand:" + tc.color + ";--on-brand:" + tc.on + "}", "Pay Brand Co"}, nil)
	}
}

func TestCheckoutStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	w := e.do("GET", "/checkout/"+inv.ID+"/status", "", noKey)
	expectStatus(t, w, 200)
	first := decode[checkoutStatusRecord](t, w)
	if first.Status != "New" || first.AdditionalStatus != "None" || first.TotalPaid != 0 || first.State != "waiting" || first.Key == "" {
		t.Errorf("status %+v", first)
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Error("status may be cached")
	}
	settle(e, inv)
	got := decode[checkoutStatusRecord](t, e.do("GET", "/checkout/"+inv.ID+"/status", "", noKey))
	if got.Status != "Settled" || got.AdditionalStatus != "None" || got.TotalPaid != 2000 || got.State != "paid" || got.Key == first.Key {
		t.Errorf("status %+v", got)
	}
	expectError(t, e.do("GET", "/checkout/inv_missing/status", "", noKey), 404, kassa.NotFound)
}

func TestCheckoutSimulation(t *testing.T) {
	t.Parallel()
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
		expectError(t, e.do("POST", "/checkout/"+inv.ID+"/sim/pay?method=lightning", "", noKey), 404, kassa.NotFound)
		expectError(t, e.do("POST", "/checkout/"+inv.ID+"/sim/mine", "", noKey), 404, kassa.NotFound)
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, withSim)
		byLightning := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
		onchain := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
		expectStatus(t, e.do("POST", "/checkout/"+byLightning.ID+"/sim/pay?method=lightning", "", noKey), 200)
		expectStatus(t, e.do("POST", "/checkout/"+onchain.ID+"/sim/pay?method=onchain", "", noKey), 200)
		expectError(t, e.do("POST", "/checkout/"+onchain.ID+"/sim/pay?method=paypal", "", noKey), 400, kassa.Invalid)
		expectError(t, e.do("POST", "/checkout/inv_missing/sim/pay", "", noKey), 404, kassa.NotFound)
		if got := e.invoice(byLightning.ID); got.Status != kassa.InvoiceSettled || got.SettledBy != kassa.MethodLightning {
			t.Errorf("paid by Lightning: %s by %s", got.Status, got.SettledBy)
		}
		if got := e.invoice(onchain.ID); got.Status != kassa.InvoiceProcessing || len(got.Payments) != 1 || got.Payments[0].Amount != onchain.Amount {
			t.Errorf("paid on-chain, unconfirmed: %s, payments %+v", got.Status, got.Payments)
		}
		w := e.do("POST", "/checkout/"+onchain.ID+"/sim/mine", "", noKey)
		if got := decode[simMined](t, w); got.Height != chainsim.StartHeight+1 {
			t.Errorf("height %d", got.Height)
		}
		e.eventually("the mined payment to settle the invoice", func() bool { return e.invoice(onchain.ID).Status == kassa.InvoiceSettled })
	})
}

func TestPayLinkPage(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": "100", "title": "Consulting <2h>", "currency": "USD",
		"description": "Two hours & a coffee", "discount": 5, "orderId": "po-77", "redirectUrl": "https://shop.example.com/paid",
		"customerEmail": "buyer@example.com", "internalNote": "secret VIP note"}`)
	id := decode[createdPaymentRequest](t, w).ID
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200,
		[]string{"Consulting &lt;2h&gt;", "Two hours &amp; a coffee", "$100.00", "save 5%", "you pay $95.00", ">Pending<",
			`<form method="post" action="` + id + `/pay?lang=en">`, `Payable until <time datetime="2025-02-01T03:04:05Z" data-local>2025-02-01 03:04 UTC</time>.`,
			"Payment request from Alice&#39;s Shop", `<input id="email" name="email" type="email" value="buyer@example.com" readonly`, "BTC at the current rate."},
		[]string{"secret VIP note", "SIMULATION"})

	// Pay: an invoice for the discounted amount, then the checkout page.
	w = e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("pay: status %d, want 303: %s", w.Code, w.Body.String())
	}
	loc := w.Header().Get("Location")
	invID := strings.TrimPrefix(loc, "https://pay.example.com/checkout/")
	inv, err := e.reader.Invoice(t.Context(), invID)
	if err != nil || inv.StoreID != "store_a" || inv.PaymentLinkID != id {
		t.Fatalf("Location %q: invoice %+v, %v", loc, inv, err)
	}
	if inv.InvoiceAmount.String() != "95" || inv.Currency != kassa.USD || inv.OrderID != "po-77" ||
		inv.RedirectURL != "https://shop.example.com/paid" || !inv.RedirectAutomatically || inv.BuyerEmail != "buyer@example.com" {
		t.Errorf("invoice %+v", inv)
	}
	expectPage(t, e.do("GET", "/checkout/"+invID, "", noKey), 200, []string{"$95.00"}, nil)
}

func TestPayLinkPageRounding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// 3% off 9.99 JPY-less EUR is 9.6903: the customer pays 9.70, rounded
	// up to the cent; with no currency the store's (EUR) is used.
	w := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": "9.99", "title": "T", "discount": "3"}`)
	id := decode[createdPaymentRequest](t, w).ID
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200, []string{"€9.99", "you pay €9.70"}, nil)
	w = e.do("POST", "/payment-requests/"+id+"/pay", "", noKey)
	if w.Code != http.StatusSeeOther {
		t.Fatalf("pay: %d %s", w.Code, w.Body.String())
	}
	inv := e.invoice(strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/"))
	if inv.InvoiceAmount.String() != "9.7" || inv.Currency != kassa.EUR || inv.RedirectAutomatically {
		t.Errorf("invoice %+v", inv)
	}
}

func TestPayLinkPageClosed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mk := func(body string) string {
		return decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", body)).ID
	}
	expiring := mk(`{"amount": 1, "title": "Soon gone", "expiryDate": "2025-01-03"}`)
	archived := mk(`{"amount": 1, "title": "Withdrawn"}`)
	expectStatus(t, e.do("DELETE", "/api/v1/stores/store_a/payment-requests/"+archived, ""), 200)
	paid := mk(`{"amount": 1, "title": "Done"}`)
	w := e.do("POST", "/payment-requests/"+paid+"/pay", "", noKey)
	expectStatus(t, w, http.StatusSeeOther)
	settle(e, e.invoice(strings.TrimPrefix(w.Header().Get("Location"), "https://pay.example.com/checkout/")))

	e.advanceTo(testNow.Add(48 * time.Hour))
	tests := []struct {
		id, status, text string
	}{
		{expiring, "Expired", "has expired"},
		{archived, "Archived", "archived by the merchant"},
		{paid, "Completed", "has been paid"},
	}
	for _, tt := range tests {
		t.Run(tt.status, func(t *testing.T) {
			expectPage(t, e.do("GET", "/payment-requests/"+tt.id, "", noKey), 200, []string{">" + tt.status + "<", tt.text}, []string{"<form"})
			before := len(e.invoiceIDs("store_a"))
			expectPage(t, e.do("POST", "/payment-requests/"+tt.id+"/pay", "", noKey), 409, []string{html.EscapeString(tt.text)}, nil)
			if len(e.invoiceIDs("store_a")) != before {
				t.Error("a closed pay link created an invoice")
			}
		})
	}
	expectPage(t, e.do("GET", "/payment-requests/pr_missing", "", noKey), 404, []string{"payment request not found"}, nil)
	expectPage(t, e.do("POST", "/payment-requests/pr_missing/pay", "", noKey), 404, nil, nil)
}

func TestPayLinkPayFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 1, "title": "T"}`)).ID
	e.payLinks.payErr = kassa.Errorf(kassa.PaymentRequired, "the store cannot take payments right now")
	expectPage(t, e.do("POST", "/payment-requests/"+id+"/pay", "", noKey), 402, []string{"cannot take payments"}, nil)
}

func TestInvoiceShortLink(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	w := e.do("GET", "/i/"+inv.ID, "", noKey)
	expectStatus(t, w, http.StatusFound)
	if got := w.Header().Get("Location"); got != "https://pay.example.com/checkout/"+inv.ID {
		t.Errorf("Location %q, want the checkout page", got)
	}
	expectPage(t, e.do("GET", "/i/bad%21id", "", noKey), 404, []string{"invoice not found"}, nil)
}

// TestCheckoutFinalStatesSimulation: in simulation, Paid and Expired
// pages offer no pay buttons (a click answered 409), and a paid page's
// sats line does not repeat the fiat amount of the headline above it.
func TestCheckoutFinalStatesSimulation(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSim)
	open := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	expectPage(t, e.do("GET", "/checkout/"+open.ID, "", noKey), 200,
		[]string{`id="sim-ln"`, `id="sim-chain"`, `id="sim-mine"`}, nil)

	paid := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	settle(e, paid)
	expectPage(t, e.do("GET", "/checkout/"+paid.ID, "", noKey), 200,
		[]string{`data-state="paid"`, `<p class="amount" id="fiat">€1.00</p>`, `<p class="muted" id="sats">2,000 sats</p>`},
		[]string{`id="sim-ln"`, `id="sim-chain"`, "2,000 sats · €1.00</p>"})

	gone := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	e.advanceTo(gone.ExpiresAt.Add(time.Second))
	expectPage(t, e.do("GET", "/checkout/"+gone.ID, "", noKey), 200,
		[]string{`data-state="expired"`}, []string{`id="sim-ln"`, `id="sim-chain"`})
}
