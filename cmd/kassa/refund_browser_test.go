package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserRefundFromTheDashboard: the whole refund as the two people
// see it. The merchant signs up, makes a store, tops up its prepaid
// balance, has an invoice paid (the simulated node), presses Refund on
// the settled invoice and makes the refund of the bitcoin paid; the
// customer opens the claim link and pastes a Lightning invoice (another
// store's, which the simulated node can pay); the merchant approves the
// payout on the Payouts page; the customer's page shows "Paid" with the
// payment hash as proof. A screenshot at each step (desktop and phone).
func TestBrowserRefundFromTheDashboard(t *testing.T) {
	requireChromium(t)
	s := startServer(t, t.TempDir(), "--dev")
	b := newBrowser(t)
	b.setWidth(desktopWidth, 900)
	open := func(what, path, sel string) {
		b.do(what, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS(sel)))
		b.noProblems()
	}
	submit := func(what, sel string) {
		b.markPage()
		b.do(what, chromedp.Click(chromedp.CSS(sel)))
		waitNewPage(b, what)
	}

	// The merchant and the store.
	open("open sign-up", "/dashboard/signup?lang=en", "#email")
	b.do("sign up", chromedp.SendKeys(chromedp.CSS("#email"), "merchant@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	submit("submit sign-up", `main button[type=submit]`)
	open("open the new store form", "/dashboard/stores/new", "#name")
	b.do("name the store", chromedp.SendKeys(chromedp.CSS("#name"), "Corner Café"))
	submit("create the store", `main button[type=submit]`)
	storeID := b.text("#store-id")
	base := "/dashboard/stores/" + storeID
	s.mustCLI("store", "topup", storeID, "--amount", "50000")

	// A paid invoice of 20,000 sat.
	open("open the new invoice form", base+"/invoices/new", "#amount")
	b.do("the invoice's amount", chromedp.SendKeys(chromedp.CSS("#amount"), "20000"), chromedp.SetValue(chromedp.CSS("#currency"), "SATS"))
	submit("create the invoice", `main form button[type=submit]`)
	m := regexp.MustCompile(`/invoices/([a-z0-9]+)`).FindStringSubmatch(browserRun(b, "invoice URL", chromedp.Evaluate[string](`location.pathname`)))
	if m == nil {
		t.Fatalf("the invoice form led to %q", b.text("main"))
	}
	invID := m[1]
	s.mustCLI("sim", "pay", invID, "--method", "lightning")
	refundButton := `main a[href$="/invoices/` + invID + `/refund"]`
	waitFor(t, 20*time.Second, "the settled invoice's Refund button", func() bool {
		open("open the invoice", base+"/invoices/"+invID, "main")
		return b.eval("Refund button", `document.querySelector('`+refundButton+`') !== null`)
	})
	b.screenshots("refund-1-invoice", desktopWidth)

	// Refund: the form, then the pull payment with its claim link.
	submit("press Refund", refundButton)
	if got := b.text("h1"); !strings.HasPrefix(got, "Refund") {
		t.Fatalf("the Refund button led to %q", got)
	}
	b.checkAccessibility("the refund form")
	b.screenshots("refund-2-form", desktopWidth)
	submit("make the refund", `main form button[type=submit]`)
	link := b.text("#claim-url")
	pp := regexp.MustCompile(`/pull-payments/(pp_[a-z0-9]+)$`).FindStringSubmatch(link)
	if pp == nil {
		t.Fatalf("the refund's page shows no claim link: %q", b.text("main"))
	}
	b.screenshots("refund-3-link", desktopWidth)

	// The customer claims to a Lightning invoice of the amount.
	customer := s.createStore("--name", "Customer", "--currency", "EUR")
	created := s.json("POST", "/api/v1/stores/"+customer.StoreID+"/invoices", customer.APIKey, map[string]any{"amount": 20000, "currency": "SATS"}, 200)
	bolt11, _ := created["lightningInvoice"].(string)
	open("open the claim page", "/pull-payments/"+pp[1]+"?lang=en", "#destination")
	b.do("paste the Lightning invoice", chromedp.SendKeys(chromedp.CSS("#destination"), bolt11))
	b.screenshots("refund-4-claim", desktopWidth)
	b.do("claim", chromedp.Click(chromedp.CSS(`main button[type=submit]`)))
	b.waitAcross("the claim to wait for the merchant", `(() => { const l = document.getElementById("live"); return !!l && l.dataset.state === "waiting"; })()`)
	claimPage := browserRun(b, "claim page URL", chromedp.Evaluate[string](`location.pathname + location.search`))
	payout := regexp.MustCompile(`payout=(po_[a-z0-9]+)`).FindStringSubmatch(claimPage)
	if payout == nil {
		t.Fatalf("the page after the claim names no payout: %s", claimPage)
	}
	b.screenshots("refund-5-waiting", desktopWidth)

	// The merchant approves it on the Payouts page; the sender pays it.
	open("open the payouts", base+"/payouts", "#"+payout[1])
	b.screenshots("refund-6-payouts", desktopWidth)
	submit("approve", `#`+payout[1]+` form[action$="/approve"] button`)
	waitFor(t, 30*time.Second, "the payout to complete", func() bool {
		open("open the payouts", base+"/payouts", "#"+payout[1])
		return strings.Contains(b.text("#"+payout[1]), "Completed")
	})

	// The customer's page: paid, with the payment hash as proof; the
	// invoice it paid is settled.
	open("open the customer's page again", claimPage, "#state")
	b.waitState("paid")
	if !strings.Contains(b.text("#state"), "Paid") || !regexp.MustCompile(`[0-9a-f]{64}`).MatchString(b.text("#details")) {
		t.Errorf("paid page: state %q, details %q; want Paid and the payment hash", b.text("#state"), b.text("#details"))
	}
	if got := apiInvoice(s, customer, created["id"].(string))["status"]; got != "Settled" {
		t.Errorf("the customer's invoice is %v, want Settled by the refund", got)
	}
	b.noProblems()
	b.screenshots("refund-7-paid", desktopWidth)
}
