package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserClaimPage: the customer opens a refund's claim page, pastes
// a Lightning invoice and claims; the page follows the payout with no
// reload, and once the merchant approves it shows "Paid" with the
// payment hash. Screenshots of the form and of the paid page.
func TestBrowserClaimPage(t *testing.T) {
	requireChromium(t)
	s := startServer(t, t.TempDir(), "--dev")
	r := newDevRefund(t, s)
	b := newBrowser(t)
	b.setWidth(desktopWidth, 900)
	b.do("open the claim page", chromedp.Navigate(s.url+"/pull-payments/"+r.pullPayment+"?lang=en"), chromedp.WaitVisible(chromedp.CSS("#destination")))
	if got := b.text("h1"); got != "Claim your refund" {
		t.Errorf("heading %q", got)
	}
	b.noProblems()
	b.checkAccessibility("the claim page")
	b.screenshots("claim-form", desktopWidth)
	b.do("claim", chromedp.SendKeys(chromedp.CSS("#destination"), r.bolt11), chromedp.Click(chromedp.CSS(`main button[type=submit]`)))
	b.waitAcross("the page follows the payout", `(() => { const l = document.getElementById("live"); return !!l && l.dataset.state === "waiting"; })()`)
	b.markPage()
	payout := regexp.MustCompile(`payout=(po_[a-z0-9]+)`).FindStringSubmatch(browserRun(b, "url", chromedp.Evaluate[string](`location.href`)))
	if payout == nil {
		t.Fatal("the page after the claim names no payout")
	}
	s.json("POST", "/api/v1/stores/"+r.a.StoreID+"/payouts/"+payout[1]+"/approve", r.a.APIKey, nil, 200)
	b.waitState("paid")
	if !b.stillSamePage() {
		t.Error("the page reloaded instead of following the payout")
	}
	hash := s.json("GET", "/api/v1/stores/"+r.a.StoreID+"/payouts/"+payout[1], r.a.APIKey, nil, 200)["paymentHash"].(string)
	if got := b.text("#details"); !strings.Contains(got, hash) || !strings.Contains(b.text("#state"), "Paid") {
		t.Errorf("paid page: state %q, details %q; want the hash %s", b.text("#state"), got, hash)
	}
	b.noProblems()
	b.screenshots("claim-paid", desktopWidth)
}
