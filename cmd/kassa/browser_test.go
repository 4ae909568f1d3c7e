package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// The browser tests open the customer pages of a real `kassa serve` in
// headless Debian Chromium, driven by chromedp, and use them as a customer
// does: read the page, click the simulation buttons, follow a pay link.

// chromiumPath is Debian's chromium; `make test-deps` installs it.
const chromiumPath = "/usr/bin/chromium"

// browserWait bounds each step that waits for the page: a load, an element,
// a status the page polls for (the checkout page polls every two seconds).
const browserWait = 20 * time.Second

// pageProbe runs before any script of every page the browser loads. It
// records what a customer would not see but a test must: content that the
// page's CSP blocks, uncaught errors and failed promises (a sim button whose
// request fails).
const pageProbe = `(() => {
  const problems = window.__kassaProblems = [];
  window.addEventListener("securitypolicyviolation", e => problems.push("CSP blocked " + e.violatedDirective + " " + e.blockedURI));
  window.addEventListener("error", e => problems.push("error: " + e.message));
  window.addEventListener("unhandledrejection", e => problems.push("unhandled rejection: " + (e.reason && e.reason.message || e.reason)));
})()`

// browser is one headless Chromium with one tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// requireChromium fails the test, not skips it, when Chromium is missing:
// `make test` installs it first.
func requireChromium(t *testing.T) {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		t.Fatalf("the browser tests need Debian's chromium at %s (%v): run `make test-deps` (scripts/install-test-deps.sh) to install it", chromiumPath, err)
	}
}

// newBrowser starts headless Chromium with a fresh profile in a temporary
// directory. The cleanup closes it and makes sure none of its processes is
// left.
func newBrowser(t *testing.T) *browser {
	t.Helper()
	requireChromium(t)
	profile := t.TempDir()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromiumPath),
		chromedp.UserDataDir(profile),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-quic", true),
		chromedp.WindowSize(900, 1300),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	// Chromium's errors go to the test log while the test runs, and
	// nowhere after it (t.Logf must not be called then).
	var done atomic.Bool
	errorf := func(format string, args ...any) {
		if !done.Load() {
			t.Logf("chromedp: "+format, args...)
		}
	}
	ctx, cancelTab := chromedp.NewContext(allocCtx, chromedp.WithErrorf(errorf))
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc() // kills the browser if it is still up and waits for it
		done.Store(true)
		checkNoLeftovers(t, profile)
	})
	// Start the browser and install the probe for every page it loads.
	// The first action starts the browser and ties it to the context it
	// runs in, so it runs in the tab's own context, not in one with a
	// timeout; the deadline here bounds it instead (the cleanup then kills
	// the browser, which ends the action).
	started := make(chan error, 1)
	go func() {
		started <- chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: pageProbe})
			return chromedp.Void{}, err
		})
	}()
	select {
	case err := <-started:
		if err != nil {
			t.Fatalf("start %s: %v", chromiumPath, err)
		}
	case <-time.After(browserWait):
		t.Fatalf("%s did not start within %v", chromiumPath, browserWait)
	}
	return &browser{t: t, ctx: ctx}
}

// checkNoLeftovers waits until no process runs with the profile directory
// on its command line (the browser, its zygotes and renderers carry it),
// and kills and reports any that stays. The browser's own process is
// already reaped by the allocator's cancel.
func checkNoLeftovers(t *testing.T, profile string) {
	arg := []byte("--user-data-dir=" + profile)
	find := func() []int {
		var pids []int
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
			if err != nil {
				continue
			}
			for a := range bytes.SplitSeq(cmdline, []byte{0}) {
				if bytes.Equal(a, arg) {
					pids = append(pids, pid)
					break
				}
			}
		}
		return pids
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := find()
		if len(pids) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, pid := range pids {
				syscall.Kill(pid, syscall.SIGKILL)
			}
			t.Errorf("chromium processes %v were still running 5s after the browser closed", pids)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// do runs steps, each bounded by browserWait, and fails the test with what
// on error.
func (b *browser) do(what string, steps ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
}

// browserRun runs one step that returns a value, bounded by browserWait.
func browserRun[T any](b *browser, what string, a chromedp.Action[T]) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		b.t.Fatalf("browser: %s: %v", what, err)
	}
	return v
}

// text is the visible text of the element that sel finds.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return strings.TrimSpace(browserRun(b, "text of "+sel, chromedp.Text(chromedp.CSS(sel))))
}

// eval evaluates a JavaScript expression that gives a boolean.
func (b *browser) eval(what, expr string) bool {
	b.t.Helper()
	return browserRun(b, what, chromedp.Evaluate[bool](expr))
}

// waitStatus waits until the checkout page itself shows status, as its
// script polls the status endpoint, with no reload.
func (b *browser) waitStatus(status string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	expr := fmt.Sprintf(`document.getElementById("status").textContent === %q`, status)
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserWait))); err != nil {
		b.t.Fatalf("checkout page did not show status %s (it shows %q, sim result %q): %v", status, b.text("#status"), b.text("#sim-result"), err)
	}
}

// noProblems fails the test if the page blocked content or threw.
func (b *browser) noProblems() {
	b.t.Helper()
	problems := browserRun(b, "read the page probe", chromedp.Evaluate[[]string](`window.__kassaProblems || ["page probe missing"]`))
	if len(problems) > 0 {
		b.t.Fatalf("page problems: %q", problems)
	}
}

// markPage leaves a value in the page's window that a reload would clear;
// stillSamePage says whether it is still there.
func (b *browser) markPage() {
	b.t.Helper()
	b.do("mark the page", chromedp.Evaluate[chromedp.Void](`window.__kassaMark = "kept"`))
}

func (b *browser) stillSamePage() bool {
	b.t.Helper()
	return b.eval("read the page mark", `window.__kassaMark === "kept"`)
}

// openCheckout opens a checkout page and checks what a customer of the
// simulation sees before paying: the SIMULATION banner, status New and
// both QR codes drawn.
func (b *browser) openCheckout(link string) {
	b.t.Helper()
	b.do("open "+link, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#status")))
	b.checkCheckout()
}

func (b *browser) checkCheckout() {
	b.t.Helper()
	b.do("simulation banner", chromedp.WaitVisible(chromedp.CSS(".sim")))
	if banner := b.text(".sim"); !strings.HasPrefix(banner, "SIMULATION") {
		b.t.Fatalf("simulation banner reads %q", banner)
	}
	if status := b.text("#status"); status != "New" {
		b.t.Fatalf("checkout status = %q, want New", status)
	}
	b.do("QR codes drawn", chromedp.Poll[chromedp.Void](
		`(() => { const q = document.querySelectorAll("img.qr"); return q.length === 2 && Array.from(q).every(i => i.complete && i.naturalWidth > 0); })()`,
		chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserWait)))
	widths := browserRun(b, "QR sizes", chromedp.Evaluate[[]int](`Array.from(document.querySelectorAll("img.qr")).map(i => i.naturalWidth)`))
	if len(widths) != 2 || widths[0] <= 0 || widths[1] <= 0 {
		b.t.Fatalf("QR images natural widths = %v", widths)
	}
	b.do("QR codes visible", chromedp.WaitVisible(chromedp.CSS(`img[alt="Lightning invoice QR code"]`)), chromedp.WaitVisible(chromedp.CSS(`img[alt="Bitcoin payment QR code"]`)))
	b.noProblems()
}

// clickSim clicks the simulation button with the id and waits until the
// page shows the server's answer, which starts with wantResult.
func (b *browser) clickSim(id, wantResult string) {
	b.t.Helper()
	b.do("click "+id,
		chromedp.Evaluate[chromedp.Void](`document.getElementById("sim-result").textContent = ""`),
		chromedp.Click(chromedp.ID(id)))
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	expr := fmt.Sprintf(`document.getElementById("sim-result").textContent.startsWith(%q)`, wantResult)
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserWait))); err != nil {
		b.t.Fatalf("after clicking %s the page says %q, want %q...: %v", id, b.text("#sim-result"), wantResult, err)
	}
	if res := b.text("#sim-result"); strings.Contains(res, "undefined") {
		b.t.Fatalf("after clicking %s the page says %q", id, res)
	}
}

// browserStore starts the server in simulation and creates a store.
func browserStore(t *testing.T, args ...string) (*server, storeCreds) {
	t.Helper()
	requireChromium(t)
	s := startServer(t, t.TempDir())
	return s, s.createStore(append([]string{"--name", "Browser shop"}, args...)...)
}

// apiInvoice reads an invoice over the store API.
func apiInvoice(s *server, c storeCreds, id string) map[string]any {
	s.t.Helper()
	return s.json("GET", "/api/v1/stores/"+c.StoreID+"/invoices/"+id, c.APIKey, nil, 200)
}

// TestBrowserCheckoutLightning pays an invoice with the checkout page's
// Lightning simulation button and watches the page settle by itself.
func TestBrowserCheckoutLightning(t *testing.T) {
	s, c := browserStore(t, "--currency", "EUR")
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "12.5", "currency": "EUR", "orderId": "B-1"}, 200)
	id, _ := inv["id"].(string)
	link, _ := inv["checkoutLink"].(string)
	if id == "" || link != s.url+"/checkout/"+id {
		t.Fatalf("created invoice = %v", inv)
	}
	b := newBrowser(t)
	b.openCheckout(link)
	if amount := b.text(".amount"); !strings.HasSuffix(amount, " BTC") {
		t.Fatalf("amount reads %q", amount)
	}
	if fiat := b.text("p.muted"); !strings.Contains(fiat, "12.50 EUR") {
		t.Fatalf("amounts read %q, want 12.50 EUR in them", fiat)
	}

	// One screenshot of the page as the customer sees it.
	shot := browserRun(b, "screenshot", chromedp.CaptureScreenshot())
	file := filepath.Join(t.TempDir(), "checkout.png")
	if err := os.WriteFile(file, shot, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(f)
	f.Close()
	if err != nil {
		t.Fatalf("screenshot is not a PNG: %v", err)
	}
	if r := img.Bounds(); r.Dx() < 100 || r.Dy() < 100 {
		t.Fatalf("screenshot is %v", r)
	}

	b.markPage()
	b.clickSim("sim-ln", "Paid: ")
	b.waitStatus("Settled")
	if !b.stillSamePage() {
		t.Fatal("the checkout page reloaded; it should settle in place")
	}
	b.do("payment received shown", chromedp.WaitVisible(chromedp.ID("done")), chromedp.WaitNotVisible(chromedp.ID("pay")))
	b.noProblems()

	got := apiInvoice(s, c, id)
	if got["status"] != "Settled" || got["paymentMethod"] != "BTC/Lightning" {
		t.Fatalf("invoice over the API = %v / %v, want Settled by Lightning", got["status"], got["paymentMethod"])
	}
}

// TestBrowserCheckoutOnchain pays on-chain from the checkout page, sees
// Processing, mines a block from the page and sees Settled.
func TestBrowserCheckoutOnchain(t *testing.T) {
	s, c := browserStore(t)
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "20000", "currency": "SATS"}, 200)
	id, _ := inv["id"].(string)
	link, _ := inv["checkoutLink"].(string)
	if id == "" || link == "" {
		t.Fatalf("created invoice = %v", inv)
	}
	b := newBrowser(t)
	b.openCheckout(link)
	b.markPage()

	b.clickSim("sim-chain", "Paid: ")
	b.waitStatus("Processing")
	b.do("payment details hidden while processing", chromedp.WaitNotVisible(chromedp.ID("pay")))
	if got := apiInvoice(s, c, id); got["status"] != "Processing" {
		t.Fatalf("invoice over the API = %v, want Processing", got["status"])
	}

	b.clickSim("sim-mine", "Mined, height ")
	b.waitStatus("Settled")
	if !b.stillSamePage() {
		t.Fatal("the checkout page reloaded; it should settle in place")
	}
	b.do("payment received shown", chromedp.WaitVisible(chromedp.ID("done")))
	b.noProblems()

	got := apiInvoice(s, c, id)
	if got["status"] != "Settled" || got["paymentMethod"] != "BTC/BTC" {
		t.Fatalf("invoice over the API = %v / %v, want Settled on-chain", got["status"], got["paymentMethod"])
	}
}

// TestBrowserPayLink opens a pay link, clicks Pay and lands on the checkout
// page of a new invoice of the pay link's store for the pay link's amount.
func TestBrowserPayLink(t *testing.T) {
	s, c := browserStore(t, "--currency", "EUR")
	pr := s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey,
		map[string]any{"amount": 25.5, "title": "Boots", "currency": "EUR", "description": "Brown"}, 200)
	prURL, _ := pr["url"].(string)
	if prURL == "" {
		t.Fatalf("pay link = %v", pr)
	}
	b := newBrowser(t)
	b.do("open "+prURL, chromedp.Navigate(prURL), chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	if h := b.text("h1"); h != "Boots" {
		t.Fatalf("pay link heading = %q", h)
	}
	if a := b.text(".amount"); a != "25.50 EUR" {
		t.Fatalf("pay link amount = %q", a)
	}
	b.noProblems()

	b.do("pay", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#status")))
	loc := browserRun(b, "location", chromedp.Location())
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(loc, s.url+"/checkout/") {
		t.Fatalf("Pay landed on %q, want %s/checkout/...", loc, s.url)
	}
	id := strings.TrimPrefix(u.Path, "/checkout/")
	b.checkCheckout()
	if fiat := b.text("p.muted"); !strings.Contains(fiat, "25.50 EUR") {
		t.Fatalf("checkout amounts read %q, want 25.50 EUR in them", fiat)
	}

	got := apiInvoice(s, c, id)
	if got["storeId"] != c.StoreID || got["currency"] != "EUR" || num(got, "invoiceAmount") != 25.5 || got["status"] != "New" {
		t.Fatalf("pay link invoice = store %v, %v %v, %v; want store %s, 25.5 EUR, New", got["storeId"], got["invoiceAmount"], got["currency"], got["status"], c.StoreID)
	}
	if l := s.list("/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey); len(l) != 1 || l[0]["id"] != id {
		t.Fatalf("store invoices = %v, want only %s", l, id)
	}
}
