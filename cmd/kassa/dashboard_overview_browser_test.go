package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserDashboardOverview opens a store's overview with sales in
// Chromium against the real binary (--dev), at 1280 and 360 px: the
// store link lands on it, its four charts are inline SVG images with a
// name, the figures are there in the store's currency, nothing is wider
// than the screen, axe-core finds no serious violation, and the page is
// photographed (dashboard-overview-desktop.png and -phone.png).
func TestBrowserDashboardOverview(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	b := newBrowser(t)
	open := func(path string) {
		b.do("open "+path, chromedp.Navigate(s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
		b.noProblems()
	}
	open("/dashboard/signup")
	b.do("sign up", chromedp.SendKeys(chromedp.CSS("#email"), "owner@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	b.markPage()
	b.do("submit sign-up", chromedp.Click(chromedp.CSS(`main button[type=submit]`)))
	waitNewPage(b, "submit sign-up")
	// The first account of --dev is the operator: it sees every store.
	c := s.createStore("--name", "Café am Markt", "--currency", "EUR")
	for _, p := range []struct{ amount, method string }{{"12.50", "lightning"}, {"40", "onchain"}, {"7.90", "lightning"}, {"3", ""}} {
		id := createInvoice(t, s, c, map[string]any{"amount": p.amount, "currency": "EUR", "orderId": "T-" + p.amount})
		if p.method == "" {
			continue // left open
		}
		s.mustCLI("sim", "pay", id, "--method", p.method)
		if p.method == "onchain" {
			s.mustCLI("sim", "mine", "1")
		}
		waitFor(t, 20*time.Second, "invoice settled", func() bool { return apiInvoice(s, c, id)["status"] == "Settled" })
	}

	open("/dashboard/stores")
	b.markPage()
	b.do("open the store", chromedp.Click(chromedp.CSS(`a[href="/dashboard/stores/`+c.StoreID+`/overview"]`)))
	waitNewPage(b, "open the store")
	if h1 := b.text("h1"); h1 != "Overview" {
		t.Fatalf("the store link lands on %q", h1)
	}
	for _, width := range []int64{desktopWidth, phoneWidth} {
		b.setWidth(width, 900)
		open("/dashboard/stores/" + c.StoreID + "/overview")
		b.noSideScroll("the overview")
		if n := browserRun(b, "charts", chromedp.Evaluate[int](`Array.from(document.querySelectorAll("main svg[role=img]")).filter(s => {
			const r = s.getBoundingClientRect(); return r.width > 0 && r.right <= window.innerWidth + 0.5 && s.querySelector("title") && s.querySelector("desc")
		}).length`)); n != 4 {
			t.Errorf("at %d px: %d charts visible with a title and a description, want 4", width, n)
		}
		txt := b.text("main")
		for _, want := range []string{"€60.40", "€40.00", "Settled", "T-3"} {
			if !strings.Contains(txt, want) {
				t.Errorf("at %d px the overview lacks %q: %s", width, want, txt)
			}
		}
		b.checkAccessibility("the overview")
	}
	b.screenshots("dashboard-overview", desktopWidth)
}
