package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserDashboardPhone uses the dashboard at 360 px, as a merchant
// on a phone (issue 22): no page scrolls sideways, the store menu shows
// every entry without scrolling, and no table hides a cell to the side:
// every cell (the amount columns included) lies within the screen, and
// no table box scrolls sideways with columns out of sight.
func TestBrowserDashboardPhone(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	b := newBrowser(t)
	submit := func(what, sel string) {
		b.markPage()
		b.do(what, chromedp.Click(chromedp.CSS(sel)))
		waitNewPage(b, what)
	}
	open := func(path string) {
		b.do("open "+path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		b.noProblems()
	}
	b.setWidth(phoneWidth, 780)
	open("/dashboard/signup")
	b.do("sign up", chromedp.SendKeys(chromedp.CSS("#email"), "phone@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	submit("submit sign-up", `main button[type=submit]`) // signs the new account in
	open("/dashboard/stores/new")
	b.do("name the store", chromedp.SendKeys(chromedp.CSS("#name"), "Kiosk am Bahnhof mit einem langen Namen"))
	submit("create the store", `main button[type=submit]`)
	storeID := b.text("#store-id")
	base := "/dashboard/stores/" + storeID
	open(base + "/keys")
	b.do("label the key", chromedp.SendKeys(chromedp.CSS("#label"), "plugin"))
	submit("create the key", `main form button[type=submit]`)
	b.do("open the key's reveal", chromedp.Click(chromedp.CSS(`tr[data-label="plugin"] details.reveal summary`)),
		chromedp.SendKeys(chromedp.CSS(`tr[data-label="plugin"] details.reveal input[name=password]`), "correct horse battery"))
	submit("show the key", `tr[data-label="plugin"] details.reveal button[type=submit]`)
	key := b.text(`#revealed-key`)

	// Settled invoices with big amounts fill the tables.
	var invID string
	for i, amount := range []string{"1234.56", "5432.10"} {
		inv := s.json("POST", "/api/v1/stores/"+storeID+"/invoices", key, map[string]any{"amount": amount, "currency": "EUR",
			"orderId": "WC-" + amount, "buyerEmail": "customer.with.a.long.address@example.org"}, 200)
		invID = inv["id"].(string)
		s.mustCLI("sim", "pay", invID)
		waitFor(t, 20*time.Second, fmt.Sprintf("invoice %d settled", i), func() bool {
			return apiInvoice(s, storeCreds{StoreID: storeID, APIKey: key}, invID)["status"] == "Settled"
		})
	}

	for _, p := range []string{"/dashboard/stores", base + "/", base + "/keys", base + "/webhooks", base + "/invoices",
		base + "/invoices/" + invID, base + "/paylinks", base + "/transactions", base + "/balance"} {
		open(p)
		b.noSideScroll(p + " at 360 px")
		if !b.eval("store menu fits", `(() => { const n = document.querySelector("nav.store"); return !n || n.scrollWidth <= n.clientWidth })()`) {
			t.Errorf("%s: the store menu scrolls sideways at 360 px", p)
		}
		hidden := browserRun(b, "cells within the screen", chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll(".table td")).filter(td => {
			const r = td.getBoundingClientRect(); return r.width > 0 && (r.right > window.innerWidth + 0.5 || r.left < -0.5)
		}).map(td => (td.dataset.label || td.className || "cell") + ": " + td.textContent.trim().slice(0, 30))`))
		if len(hidden) > 0 {
			t.Errorf("%s: %d table cells lie outside the 360 px screen, e.g. %s", p, len(hidden), strings.Join(hidden[:min(3, len(hidden))], " | "))
		}
		if !b.eval("no table scrolls sideways", `Array.from(document.querySelectorAll(".table")).every(t => t.scrollWidth <= t.clientWidth + 1)`) {
			t.Errorf("%s: a table scrolls sideways at 360 px", p)
		}
	}
	// On a desktop screen the ledger's table shows every column without
	// scrolling.
	b.setWidth(desktopWidth, 860)
	open(base + "/transactions")
	if !b.eval("no table scrolls sideways", `Array.from(document.querySelectorAll(".table")).every(t => t.scrollWidth <= t.clientWidth + 1)`) {
		t.Errorf("the transactions table scrolls sideways at %d px", desktopWidth)
	}
	b.setWidth(phoneWidth, 780)

	// The amounts are there, whole and formatted, in the cards.
	open(base + "/invoices")
	if txt := b.text("main"); !strings.Contains(txt, "€5,432.10") {
		t.Errorf("the invoices page lacks €5,432.10: %s", txt)
	}
	open(base + "/transactions")
	if txt := b.text("main"); !strings.Contains(txt, " sats") || !strings.Contains(txt, " UTC") {
		t.Errorf("the transactions page lacks its amounts or times: %s", txt)
	}
}
