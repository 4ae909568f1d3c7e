package http

import (
	"html"
	"net/http"
	"strings"
	"testing"
	"time"

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
	if !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "script-src 'nonce-") {
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
			inv := e.seedInvoice("store_a", testNow, `{"amount": "12.50", "redirectUrl": "https://shop.example.com/thanks", "redirectAutomatically": true}`)
			want := []string{"Alice&#39;s Shop", "0.00025000 BTC", "25000 sats", "12.50 EUR", ">New<",
				`src="data:image/png;base64,`, inv.OnchainAddress, inv.LightningInvoice,
				`href="lightning:LNBCRT`, `href="bitcoin:` + inv.OnchainAddress,
				`var redirectURL = "https://shop.example.com/thanks", redirectAutomatically =  true ;`,
				"This invoice expires at 2025-01-02 03:19 UTC"}
			simParts := []string{"SIMULATION", "Pay by Lightning", "Pay on-chain", "Mine a block"}
			if sim {
				want = append(want, simParts...)
				expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, want, nil)
			} else {
				expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200, want, simParts)
			}
		})
	}
}

func TestCheckoutPageStates(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"enabledPaymentMethods": ["Lightning"]}`)
	expectPage(t, e.do("GET", "/checkout/"+inv.ID, "", noKey), 200,
		[]string{"Any amount", `href="lightning:LNBCRT`}, []string{"Bitcoin payment QR code", "sats"})

	paid := e.seedInvoice("store_a", testNow, `{"amount": 1, "redirectUrl": "https://shop.example.com/done"}`)
	settle(e, paid)
	expectPage(t, e.do("GET", "/checkout/"+paid.ID, "", noKey), 200,
		[]string{">Settled<", "Payment received", `href="https://shop.example.com/done"`, `<div id="pay" hidden>`}, nil)

	expectPage(t, e.do("GET", "/checkout/inv_missing", "", noKey), 404, []string{"invoice not found"}, nil)
	expectPage(t, e.do("GET", "/checkout/bad%21id", "", noKey), 404, []string{"invoice not found"}, nil)
}

func TestCheckoutStatus(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	w := e.do("GET", "/checkout/"+inv.ID+"/status", "", noKey)
	expectStatus(t, w, 200)
	if got := decode[checkoutStatusRecord](t, w); got != (checkoutStatusRecord{"New", "None", 0}) {
		t.Errorf("status %+v", got)
	}
	if w.Header().Get("Cache-Control") != "no-store" {
		t.Error("status may be cached")
	}
	settle(e, inv)
	if got := decode[checkoutStatusRecord](t, e.do("GET", "/checkout/"+inv.ID+"/status", "", noKey)); got != (checkoutStatusRecord{"Settled", "None", 2000}) {
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
		[]string{"Consulting &lt;2h&gt;", "Two hours &amp; a coffee", "100.00 USD", "save 5%", "you pay 95.00 USD", ">Pending<",
			`<form method="post" action="` + id + `/pay">`, "Payable until 2025-02-01 03:04 UTC"},
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
	expectPage(t, e.do("GET", "/checkout/"+invID, "", noKey), 200, []string{"95.00 USD"}, nil)
}

func TestPayLinkPageRounding(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// 3% off 9.99 JPY-less EUR is 9.6903: the customer pays 9.70, rounded
	// up to the cent; with no currency the store's (EUR) is used.
	w := e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": "9.99", "title": "T", "discount": "3"}`)
	id := decode[createdPaymentRequest](t, w).ID
	expectPage(t, e.do("GET", "/payment-requests/"+id, "", noKey), 200, []string{"9.99 EUR", "you pay 9.70 EUR"}, nil)
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
