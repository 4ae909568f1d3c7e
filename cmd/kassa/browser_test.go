package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/color/palette"
	"image/png"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	cdpbrowser "github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// The browser tests open the customer pages of a real `kassa serve` in
// headless Debian Chromium, driven by chromedp, and use them as a customer
// does: read the page, click the simulation buttons, follow a pay link.

// chromiumPath is Debian's chromium; `make test-deps` installs it.
const chromiumPath = "/usr/bin/chromium"

// browserWait bounds each step that waits for the page: a load, an element,
// a status the page polls for (the checkout page polls every two seconds).
const browserWait = 20 * time.Second

// browserStartWait bounds Chromium's start, which on a loaded machine
// takes longer than any one step on a page.
const browserStartWait = 60 * time.Second

// pageProbe runs before any script of every page the browser loads. It
// records what a customer would not see but a test must: content that the
// page's CSP blocks, uncaught errors and failed promises (a sim button whose
// request fails).
const pageProbe = `(() => {
  const problems = window.__kassaProblems = [];
  window.addEventListener("securitypolicyviolation", e => problems.push("CSP blocked " + e.violatedDirective + " " + e.blockedURI + " at " + e.sourceFile + ":" + e.lineNumber + " " + e.sample));
  window.addEventListener("error", e => problems.push("error: " + e.message));
  window.addEventListener("unhandledrejection", e => problems.push("unhandled rejection: " + (e.reason && e.reason.message || e.reason)));
})()`

// browser is one headless Chromium with one tab.
type browser struct {
	t   *testing.T
	ctx context.Context
}

// requireChromium fails the test, not skips it, when Chromium is missing:
// `make test` installs it first. Under -short it skips the test.
func requireChromium(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs Chromium: skipped under -short (make test runs it)")
	}
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
	case <-time.After(browserStartWait):
		t.Fatalf("%s did not start within %v", chromiumPath, browserStartWait)
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

// sub returns the browser for a subtest: the same tab, failing t.
func (b *browser) sub(t *testing.T) *browser { return &browser{t: t, ctx: b.ctx} }

// waitState waits until the checkout page itself shows state (the
// data-state of its live part: waiting, underpaid, seen, paid, paidLate,
// expired, invalid) as its script polls the status, with no reload.
func (b *browser) waitState(state string) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, browserWait)
	defer cancel()
	expr := fmt.Sprintf(`(() => { const l = document.getElementById("live"); return !!l && l.dataset.state === %q; })()`, state)
	if _, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserWait))); err != nil {
		got := browserRun(b, "state", chromedp.Evaluate[string](`(document.getElementById("live") || {dataset: {}}).dataset.state + " / " + ((document.getElementById("state-title") || {}).textContent || "") + " / sim: " + ((document.getElementById("sim-result") || {}).textContent || "")`))
		b.t.Fatalf("checkout page did not show state %s (it shows %s): %v", state, got, err)
	}
}

// waitTrue waits until the JavaScript expression expr holds.
func (b *browser) waitTrue(what, expr string) {
	b.t.Helper()
	b.do(what, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(browserWait)))
}

// waitAcross waits until the JavaScript expression expr holds, evaluating
// it again and again across page loads (a poll inside the page ends with
// an error when the page navigates away).
func (b *browser) waitAcross(what, expr string) {
	b.t.Helper()
	deadline := time.Now().Add(browserWait)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	b.t.Fatalf("browser: %s: not within %v (last error %v)", what, browserWait, last)
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

// axeSource is axe-core's browser build, vendored by scripts/vendor-axe.sh.
var axeSource = sync.OnceValues(func() (string, error) {
	b, err := os.ReadFile(filepath.Join("testdata", "axe", "axe.min.js"))
	return string(b), err
})

// axeViolation is what the test reads of one axe violation.
type axeViolation struct {
	ID     string `json:"id"`
	Impact string `json:"impact"`
	Help   string `json:"help"`
	Nodes  []struct {
		Target []any  `json:"target"`
		HTML   string `json:"html"`
	} `json:"nodes"`
}

// checkAccessibility runs axe-core (WCAG 2.x A and AA rules and best
// practices) on the page as it is and fails on any violation of serious
// or critical impact. The script is injected through DevTools, which the
// page's CSP does not govern; the page itself still loads nothing else.
func (b *browser) checkAccessibility(what string) {
	b.t.Helper()
	src, err := axeSource()
	if err != nil {
		b.t.Fatalf("axe-core is not vendored (run scripts/vendor-axe.sh): %v", err)
	}
	if !b.eval("axe loaded", `typeof window.axe === "object"`) {
		b.do("inject axe-core", chromedp.Evaluate[chromedp.Void](src))
	}
	out := browserRun(b, "run axe on "+what, chromedp.Evaluate[string](
		`axe.run(document, {resultTypes: ["violations"]}).then(r => JSON.stringify(r.violations))`, chromedp.EvalAwaitPromise))
	var violations []axeViolation
	if err := json.Unmarshal([]byte(out), &violations); err != nil {
		b.t.Fatalf("axe on %s answered %q: %v", what, out, err)
	}
	var bad []string
	for _, v := range violations {
		if v.Impact != "serious" && v.Impact != "critical" {
			continue
		}
		var where []string
		for _, n := range v.Nodes {
			where = append(where, fmt.Sprint(n.Target)+" "+n.HTML)
		}
		bad = append(bad, fmt.Sprintf("%s (%s): %s at %s", v.ID, v.Impact, v.Help, strings.Join(where, "; ")))
	}
	if len(bad) > 0 {
		b.t.Fatalf("accessibility of %s:\n%s", what, strings.Join(bad, "\n"))
	}
}

// Viewports of the screenshots and the phone tests.
const (
	desktopWidth = 1280
	phoneWidth   = 360
)

// setWidth makes the viewport width px wide (a phone's: with touch and a
// mobile user agent's layout), height tall.
func (b *browser) setWidth(width, height int64) {
	b.t.Helper()
	opts := []chromedp.EmulateViewportOption{chromedp.EmulateScale(1)}
	if width <= phoneWidth {
		opts = append(opts, chromedp.EmulateMobile)
	}
	b.do(fmt.Sprintf("viewport %dx%d", width, height), chromedp.EmulateViewport(width, height, opts...))
}

// screenshotDir is where screenshots go: docs/screenshots when
// KASSA_SCREENSHOTS is set (make screenshots), else a temporary directory,
// so that a test run does not change the repository.
func screenshotDir(t *testing.T) string {
	if screenshots() {
		return filepath.Join("..", "..", "docs", "screenshots")
	}
	return screenshotTemp(t)
}

var screenshotTemp = func() func(t *testing.T) string {
	var once sync.Once
	var dir string
	return func(t *testing.T) string {
		once.Do(func() { dir, _ = os.MkdirTemp("", "kassa-screenshots-") })
		return dir
	}
}()

// screenshots saves the whole page as name-desktop.png (1280 px wide) and
// name-phone.png (360 px), each checked to be a PNG of that width, and
// leaves the viewport at width.
func (b *browser) screenshots(name string, width int64) {
	b.t.Helper()
	dir := screenshotDir(b.t)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	for _, v := range []struct {
		suffix string
		width  int64
	}{{"desktop", desktopWidth}, {"phone", phoneWidth}} {
		b.setWidth(v.width, 800)
		height := browserRun(b, "page height", chromedp.Evaluate[int64](`Math.ceil(document.documentElement.getBoundingClientRect().height)`))
		b.setWidth(v.width, max(height, 200))
		if v.width == phoneWidth {
			b.noSideScroll(name + " on a phone")
		}
		shot := browserRun(b, "screenshot", chromedp.CaptureScreenshot())
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			b.t.Fatalf("screenshot %s is not a PNG: %v", name, err)
		}
		if got := img.Bounds().Dx(); int64(got) != v.width {
			b.t.Fatalf("screenshot %s-%s is %d px wide, want %d", name, v.suffix, got, v.width)
		}
		if err := os.WriteFile(filepath.Join(dir, name+"-"+v.suffix+".png"), compactPNG(b.t, img), 0o644); err != nil {
			b.t.Fatal(err)
		}
	}
	b.setWidth(width, 800)
}

// compactPNG re-encodes a screenshot with a 256-colour palette, which
// keeps the committed images small.
func compactPNG(t *testing.T, img image.Image) []byte {
	t.Helper()
	r := img.Bounds()
	p := image.NewPaletted(r, palette.WebSafe)
	// Screenshots have few colours: look each up once.
	index := make(map[color.RGBA]uint8)
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			i, ok := index[c]
			if !ok {
				i = uint8(p.Palette.Index(c))
				index[c] = i
			}
			p.SetColorIndex(x, y, i)
		}
	}
	var buf bytes.Buffer
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if screenshots() {
		enc.CompressionLevel = png.BestCompression
	}
	if err := enc.Encode(&buf, p); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// noSideScroll fails the test when the page is wider than the viewport
// (a phone would scroll sideways).
func (b *browser) noSideScroll(what string) {
	b.t.Helper()
	if !b.eval("page width", `document.documentElement.scrollWidth <= window.innerWidth`) {
		w := browserRun(b, "page width", chromedp.Evaluate[[]int64](`[document.documentElement.scrollWidth, window.innerWidth]`))
		b.t.Fatalf("%s is %d px wide in a %d px viewport", what, w[0], w[1])
	}
}

// openCheckout opens a checkout page and checks what a customer of the
// simulation sees before paying: the SIMULATION banner, waiting for
// payment, the selected QR code drawn and the others loaded.
func (b *browser) openCheckout(link string) {
	b.t.Helper()
	b.do("open "+link, chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	b.checkCheckout()
}

func (b *browser) checkCheckout() {
	b.t.Helper()
	b.do("simulation banner", chromedp.WaitVisible(chromedp.CSS(".sim")))
	if banner := b.text(".sim"); !strings.HasPrefix(banner, "SIMULATION") {
		b.t.Fatalf("simulation banner reads %q", banner)
	}
	b.waitState("waiting")
	if title := b.text("#state-title"); title != "Waiting for payment" {
		b.t.Fatalf("checkout state reads %q, want Waiting for payment", title)
	}
	b.waitTrue("QR codes drawn", `(() => { const q = document.querySelectorAll("img.qr"); return q.length > 0 && Array.from(q).every(i => i.complete && i.naturalWidth > 0); })()`)
	visible := browserRun(b, "visible QR codes", chromedp.Evaluate[int](`Array.from(document.querySelectorAll("img.qr")).filter(i => i.offsetParent !== null).length`))
	if visible != 1 {
		b.t.Fatalf("%d QR codes visible, want one", visible)
	}
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
	s := startServer(t, t.TempDir(), "--dev")
	return s, s.createStore(append([]string{"--name", "Browser shop"}, args...)...)
}

// apiInvoice reads an invoice over the store API.
func apiInvoice(s *server, c storeCreds, id string) map[string]any {
	s.t.Helper()
	return s.json("GET", "/api/v1/stores/"+c.StoreID+"/invoices/"+id, c.APIKey, nil, 200)
}

// testLogo is a 32 px PNG logo, an orange disc, as a data URI (as
// stores give it).
func testLogo(t *testing.T) string {
	t.Helper()
	img := image.NewPaletted(image.Rect(0, 0, 32, 32), color.Palette{color.Transparent, color.RGBA{0xf7, 0x93, 0x1a, 0xff}})
	for y := range 32 {
		for x := range 32 {
			if dx, dy := x-16, y-16; dx*dx+dy*dy < 15*15 {
				img.SetColorIndex(x, y, 1)
			}
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes())
}

// shopReceiver is the merchant's shop the checkout returns to.
func shopReceiver(t *testing.T) string {
	t.Helper()
	shop := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><html lang="en"><title>Shop</title><h1 id="shop">Thank you for your order</h1></html>`)
	}))
	t.Cleanup(shop.Close)
	return shop.URL
}

// TestBrowserCheckout takes the checkout and pay-link pages through every
// state a customer meets, in one browser: Lightning, on-chain with a
// confirmation, a partial payment, a pay link on a phone that returns to
// the shop, German. Each state passes axe-core and is photographed at
// desktop and phone widths.
func TestBrowserCheckout(t *testing.T) {
	s, c := browserStore(t, "--currency", "EUR", "--logo-url", testLogo(t), "--brand-color", "#f7931a")
	k := &checkoutScenario{t: t, s: s, c: c, shop: shopReceiver(t)}
	k.b = newBrowser(t)
	k.b.setWidth(desktopWidth, 900)

	step(t, "Lightning: the waiting page, its tabs, wallet links and copy", k.lightningWaiting)
	step(t, "Lightning: paid in place, with a receipt", k.lightningPaid)
	step(t, "on-chain: seen with 0 confirmations, paid once mined", k.onchainConfirmation)
	step(t, "underpaid: the rest due, on-chain only", k.underpaid)
	step(t, "pay link on a phone: the page", k.payLinkPage)
	step(t, "pay link: Pay, twice, opens one checkout", k.payLinkPayTwice)
	step(t, "pay link: paid, returns to the shop", k.payLinkPaid)
	step(t, "German checkout, seen on-chain", k.german)
}

// checkoutScenario is TestBrowserCheckout's server, store, shop and
// browser, and what a step leaves for the next.
type checkoutScenario struct {
	t    *testing.T
	s    *server
	c    storeCreds
	shop string // the shop's URL
	b    *browser

	lnID      string // the invoice paid over Lightning
	prURL     string // the pay link's page
	payLinkID string // the invoice the pay link opened
}

// lightningWaiting opens a new invoice's checkout: heading, amounts, logo,
// countdown; the unified QR code first, the tabs switching in place by
// click and by arrow key with their own wallet links; copying the address.
func (k *checkoutScenario) lightningWaiting() {
	t, b, s, c := k.t, k.b, k.s, k.c
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "12.5", "currency": "EUR", "orderId": "B-1"}, 200)
	id, _ := inv["id"].(string)
	link, _ := inv["checkoutLink"].(string)
	if id == "" || link != s.url+"/checkout/"+id {
		t.Fatalf("created invoice = %v", inv)
	}
	b.openCheckout(link)
	if h := b.text("h1"); h != "Pay Browser shop" {
		t.Fatalf("heading reads %q", h)
	}
	if o, f, btc := b.text("#order"), b.text("#fiat"), b.text("#btc"); o != "Order B-1" || f != "€12.50" || !strings.HasSuffix(btc, " BTC") {
		t.Fatalf("order, amounts read %q, %q, %q", o, f, btc)
	}
	if !b.eval("logo drawn", `(() => { const i = document.querySelector("img.logo"); return !!i && i.complete && i.naturalWidth === 32; })()`) {
		t.Fatal("the store's logo is not shown")
	}
	// The countdown runs: it shows another value a moment later.
	first := b.text("#countdown-value")
	b.waitTrue("countdown ticks", fmt.Sprintf(`document.getElementById("countdown-value").textContent !== %q`, first))
	// The unified QR code first; the tabs switch in place, by click
	// and by arrow key, and carry their own wallet link.
	if sel := b.text(`[role="tab"][aria-selected="true"]`); sel != "Any wallet" {
		t.Fatalf("selected tab %q", sel)
	}
	if href := browserRun(b, "open link", chromedp.Evaluate[string](`document.querySelector("#panel-unified a.open").getAttribute("href")`)); !strings.HasPrefix(href, "bitcoin:") || !strings.Contains(href, "lightning=LNBCRT") {
		t.Fatalf("unified Open in wallet goes to %q", href)
	}
	b.markPage()
	b.do("Lightning tab", chromedp.Click(chromedp.ID("tab-lightning")), chromedp.WaitVisible(chromedp.ID("panel-lightning")), chromedp.WaitNotVisible(chromedp.ID("panel-unified")))
	if href := browserRun(b, "open link", chromedp.Evaluate[string](`document.querySelector("#panel-lightning a.open").getAttribute("href")`)); !strings.HasPrefix(href, "lightning:LNBCRT") {
		t.Fatalf("Lightning Open in wallet goes to %q", href)
	}
	b.do("arrow to on-chain", chromedp.Focus(chromedp.ID("tab-lightning")), chromedp.KeyEvent(kb.ArrowRight), chromedp.WaitVisible(chromedp.ID("panel-onchain")))
	if !b.eval("focus on the tab", `document.activeElement.id === "tab-onchain"`) || !b.stillSamePage() {
		t.Fatal("the arrow key did not move to the on-chain tab in place")
	}
	// Copy: the button says so and the clipboard holds the address.
	b.do("grant the clipboard", grantClipboard(s.url))
	b.do("copy the address", chromedp.Click(chromedp.CSS(`#panel-onchain button[data-copy="o-address"]`)))
	b.waitTrue("copied", `document.querySelector('#panel-onchain button[data-copy="o-address"]').textContent === "Copied"`)
	addr, _ := inv["onchainAddress"].(string)
	if got := browserRun(b, "clipboard", chromedp.Evaluate[string](`navigator.clipboard.readText()`, chromedp.EvalAwaitPromise)); got != addr {
		t.Fatalf("clipboard holds %q, want the address %q", got, addr)
	}
	b.do("back to the unified tab", chromedp.Click(chromedp.ID("tab-unified")), chromedp.WaitVisible(chromedp.ID("panel-unified")))
	b.noProblems()
	b.checkAccessibility("checkout, waiting")
	b.screenshots("checkout-waiting", desktopWidth)
	k.lnID = id
}

// lightningPaid pays the invoice over Lightning from the page: it settles
// in place and shows the receipt, and the API says Settled by Lightning.
func (k *checkoutScenario) lightningPaid() {
	t, b, s, c := k.t, k.b, k.s, k.c
	id := k.lnID
	b.clickSim("sim-ln", "Sent: ")
	b.waitState("paid")
	if !b.stillSamePage() {
		t.Fatal("the checkout page reloaded; it should settle in place")
	}
	b.do("receipt shown", chromedp.WaitVisible(chromedp.ID("receipt")), chromedp.WaitNotVisible(chromedp.ID("countdown")))
	if title, receipt := b.text("#state-title"), b.text("#receipt"); title != "Paid" || !strings.Contains(receipt, id) || !strings.Contains(receipt, "€12.50") || !strings.Contains(receipt, "Lightning") {
		t.Fatalf("paid page: %q, receipt %q", title, receipt)
	}
	if b.eval("panels gone", `document.querySelectorAll(".panel").length > 0`) {
		t.Fatal("the paid page still offers to pay")
	}
	b.noProblems()
	b.checkAccessibility("checkout, paid")
	b.screenshots("checkout-paid", desktopWidth)
	if got := apiInvoice(s, c, id); got["status"] != "Settled" || got["paymentMethod"] != "BTC/Lightning" {
		t.Fatalf("invoice over the API = %v / %v, want Settled by Lightning", got["status"], got["paymentMethod"])
	}
}

// onchainConfirmation pays a new invoice on-chain from its page: seen,
// 0 of 1 confirmations with the txid, Processing over the API; mined, it
// settles in place with an on-chain receipt, Settled over the API.
func (k *checkoutScenario) onchainConfirmation() {
	t, b, s, c := k.t, k.b, k.s, k.c
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "20000", "currency": "SATS"}, 200)
	id, _ := inv["id"].(string)
	b.openCheckout(inv["checkoutLink"].(string))
	b.markPage()
	b.clickSim("sim-chain", "Sent: ")
	b.waitState("seen")
	txid := strings.TrimPrefix(b.text("#sim-result"), "Sent: ")
	if title := b.text("#state-title"); title != "Payment seen, waiting for confirmation" {
		t.Fatalf("state reads %q", title)
	}
	if conf, shown := b.text("#confirmations"), b.text("#txid"); conf != "Confirmations: 0 of 1" || shown != txid {
		t.Fatalf("confirmations %q, txid %q (want %q)", conf, shown, txid)
	}
	if got := apiInvoice(s, c, id); got["status"] != "Processing" {
		t.Fatalf("invoice over the API = %v, want Processing", got["status"])
	}
	b.noProblems()
	b.checkAccessibility("checkout, waiting for confirmation")
	b.screenshots("checkout-confirming", desktopWidth)

	b.clickSim("sim-mine", "Mined, height ")
	b.waitState("paid")
	if !b.stillSamePage() {
		t.Fatal("the checkout page reloaded; it should settle in place")
	}
	if receipt := b.text("#receipt"); !strings.Contains(receipt, "On-chain") || !strings.Contains(receipt, txid) {
		t.Fatalf("receipt %q, want on-chain with %s", receipt, txid)
	}
	b.noProblems()
	if got := apiInvoice(s, c, id); got["status"] != "Settled" || got["paymentMethod"] != "BTC/BTC" {
		t.Fatalf("invoice over the API = %v / %v, want Settled on-chain", got["status"], got["paymentMethod"])
	}
}

// underpaid pays a third of an invoice on-chain: the page shows the rest
// due, offers no Lightning invoice, and the rest as the amount to copy.
func (k *checkoutScenario) underpaid() {
	t, b, s, c := k.t, k.b, k.s, k.c
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "30000", "currency": "SATS"}, 200)
	id, _ := inv["id"].(string)
	b.openCheckout(inv["checkoutLink"].(string))
	s.mustCLI("sim", "pay", id, "--method", "onchain", "--amount", "10000")
	b.waitState("underpaid")
	if text := b.text("#state"); !strings.Contains(text, "Still due: 0.00020000 BTC (20,000 sats)") {
		t.Fatalf("underpaid page says %q", text)
	}
	if b.eval("Lightning offered", `!!document.getElementById("panel-lightning")`) {
		t.Fatal("the Lightning invoice is offered for the rest; it can only pay the whole amount")
	}
	if amount := b.text("#o-amount"); amount != "0.0002" {
		t.Fatalf("amount to copy %q, want the rest, 0.0002", amount)
	}
	b.noProblems()
	b.checkAccessibility("checkout, underpaid")
	b.screenshots("checkout-underpaid", desktopWidth)
}

// payLinkPage opens a pay link on a phone: title, amount, discount, the
// customer's email, no internal note, no side scroll.
func (k *checkoutScenario) payLinkPage() {
	t, b, s, c, shop := k.t, k.b, k.s, k.c, k.shop
	b.setWidth(phoneWidth, 740)
	pr := s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey,
		map[string]any{"amount": 25.5, "title": "Hiking boots", "currency": "EUR", "description": "Brown, size 43", "discount": 5,
			"customerEmail": "buyer@example.com", "internalNote": "VIP customer, secret", "redirectUrl": shop + "/thanks"}, 200)
	prURL, _ := pr["url"].(string)
	if prURL == "" {
		t.Fatalf("pay link = %v", pr)
	}
	b.do("open "+prURL, chromedp.Navigate(prURL), chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	if h, a, from := b.text("h1"), b.text(".amount"), b.text(".store"); h != "Hiking boots" || a != "€25.50" || from != "Payment request from Browser shop" {
		t.Fatalf("pay link reads %q, %q, %q", h, a, from)
	}
	if d := b.text(".discount"); !strings.Contains(d, "save 5%: you pay €24.23 in bitcoin") || !strings.Contains(d, "BTC at the current rate") {
		t.Fatalf("discount reads %q", d)
	}
	if email := browserRun(b, "email", chromedp.Evaluate[string](`document.getElementById("email").value`)); email != "buyer@example.com" {
		t.Fatalf("email field holds %q", email)
	}
	if b.eval("internal note", `document.documentElement.outerHTML.includes("VIP customer")`) {
		t.Fatal("the pay link page shows the internal note")
	}
	b.noSideScroll("the pay link page")
	b.noProblems()
	b.checkAccessibility("pay link")
	b.screenshots("paylink", phoneWidth)
	k.prURL = prURL
}

// payLinkPayTwice clicks Pay twice: both open the same checkout, of the
// discounted amount, and one invoice is created.
func (k *checkoutScenario) payLinkPayTwice() {
	t, b, s, c := k.t, k.b, k.s, k.c
	prURL := k.prURL
	// Pay, twice: the second click opens the same checkout.
	before := s.list("/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey)
	b.do("pay", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	loc := browserRun(b, "location", chromedp.Location())
	u, err := url.Parse(loc)
	if err != nil || !strings.HasPrefix(loc, s.url+"/checkout/") {
		t.Fatalf("Pay landed on %q, want %s/checkout/...", loc, s.url)
	}
	id := strings.TrimPrefix(u.Path, "/checkout/")
	b.do("back to the pay link", chromedp.Navigate(prURL), chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	b.do("pay again", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	if again := browserRun(b, "location", chromedp.Location()); !strings.Contains(again, "/checkout/"+id) {
		t.Fatalf("the second click on Pay went to %q, want the same checkout %s", again, id)
	}
	b.checkCheckout()
	b.noSideScroll("the checkout page")
	if f := b.text("#fiat"); f != "€24.23" {
		t.Fatalf("checkout amount %q, want the discounted €24.23", f)
	}
	if after := s.list("/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey); len(after) != len(before)+1 || after[0]["id"] != id {
		t.Fatalf("%d invoices before paying, %d after two clicks on Pay (newest %v); want one more, %s", len(before), len(after), after[0]["id"], id)
	}
	b.checkAccessibility("checkout on a phone")
	if got := apiInvoice(s, c, id); got["storeId"] != c.StoreID || got["currency"] != "EUR" || num(got, "invoiceAmount") != 24.23 || got["status"] != "New" {
		t.Fatalf("pay link invoice = store %v, %v %v, %v; want store %s, 24.23 EUR, New", got["storeId"], got["invoiceAmount"], got["currency"], got["status"], c.StoreID)
	}
	k.payLinkID = id
}

// payLinkPaid pays the pay link's invoice: the page flips to paid and
// returns to the shop by itself, and the invoice is Settled.
func (k *checkoutScenario) payLinkPaid() {
	t, b, s, c, shop := k.t, k.b, k.s, k.c, k.shop
	id := k.payLinkID
	b.clickSim("sim-ln", "Sent: ")
	// The page flips to paid, with a return button and the notice that
	// it goes back to the shop, and then goes there by itself. On a
	// slow machine it may be at the shop before the test looks, which
	// proves the flip as well: only a paid page redirects.
	b.waitAcross("paid, returning to the shop", fmt.Sprintf(`(() => {
		if (location.href === %q) { return true; }
		const l = document.getElementById("live"), back = document.getElementById("back"), note = document.getElementById("redirecting");
		return !!l && l.dataset.state === "paid" && !!back && back.offsetParent !== null && !!note && note.offsetParent !== null;
	})()`, shop+"/thanks"))
	b.waitAcross("back at the shop", fmt.Sprintf(`location.href === %q && !!document.getElementById("shop")`, shop+"/thanks"))
	if loc := browserRun(b, "location", chromedp.Location()); loc != shop+"/thanks" {
		t.Fatalf("redirected to %q, want %s/thanks", loc, shop)
	}
	if got := apiInvoice(s, c, id); got["status"] != "Settled" {
		t.Fatalf("pay link invoice is %v", got["status"])
	}
	b.setWidth(desktopWidth, 900)
}

// german opens a checkout in German: its texts and page language; paid
// on-chain, it shows the seen state in German, in place.
func (k *checkoutScenario) german() {
	t, b, s, c := k.t, k.b, k.s, k.c
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "9", "currency": "EUR", "orderId": "D-4"}, 200)
	b.do("open in German", chromedp.Navigate(inv["checkoutLink"].(string)+"?lang=de"), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	want := map[string]string{"h1": "Browser shop bezahlen", "#order": "Bestellung D-4", "#state-title": "Warten auf Ihre Zahlung",
		`[role="tab"][aria-selected="true"]`: "Jede Wallet", "#panel-unified a.open": "In der Wallet öffnen", "#sim-ln": "Per Lightning bezahlen"}
	for sel, text := range want {
		if got := b.text(sel); got != text {
			t.Errorf("%s reads %q, want %q", sel, got, text)
		}
	}
	if lang := browserRun(b, "lang", chromedp.Evaluate[string](`document.documentElement.lang`)); lang != "de" {
		t.Errorf("page language %q", lang)
	}
	b.markPage()
	b.clickSim("sim-chain", "Gesendet: ")
	b.waitState("seen")
	if title := b.text("#state-title"); title != "Zahlung erkannt, warten auf Bestätigung" {
		t.Fatalf("state reads %q", title)
	}
	if !b.stillSamePage() {
		t.Fatal("the page reloaded")
	}
	b.noProblems()
	b.checkAccessibility("checkout in German")
	b.screenshots("checkout-confirming-de", desktopWidth)
}

// TestBrowserCheckoutExpired lets invoices expire (a server with a short
// expiry): the checkout says so and what to do, a pay link's offers Pay
// again, which opens a new invoice, and a payment that arrives late
// shows as paid late.
func TestBrowserCheckoutExpired(t *testing.T) {
	requireChromium(t)
	s := startServer(t, t.TempDir(), "--dev", "--invoice-expiry", "2s")
	c := s.createStore("--name", "Browser shop", "--currency", "EUR")
	b := newBrowser(t)
	b.setWidth(desktopWidth, 900)

	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, map[string]any{"amount": "5", "currency": "EUR"}, 200)
	id, _ := inv["id"].(string)
	b.do("open", chromedp.Navigate(inv["checkoutLink"].(string)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	b.waitState("expired")
	if title, text := b.text("#state-title"), b.text("#state"); title != "This invoice has expired" || !strings.Contains(text, "Go back to the shop") {
		t.Fatalf("expired page reads %q: %q", title, text)
	}
	if b.eval("pay panels", `document.querySelectorAll(".panel").length > 0`) {
		t.Fatal("the expired page still offers to pay")
	}
	b.noProblems()
	b.checkAccessibility("checkout, expired")
	b.screenshots("checkout-expired", desktopWidth)

	// Paid after all: on-chain, confirmed.
	s.mustCLI("sim", "pay", id, "--method", "onchain")
	s.mustCLI("sim", "mine")
	waitFor(t, browserWait, "the late payment to settle", func() bool { return apiInvoice(s, c, id)["status"] == "Settled" })
	b.do("reload", chromedp.Navigate(inv["checkoutLink"].(string)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	b.waitState("paidLate")
	if title := b.text("#state-title"); title != "Paid late" {
		t.Fatalf("late payment reads %q", title)
	}
	b.checkAccessibility("checkout, paid late")
	b.screenshots("checkout-paid-late", desktopWidth)

	// A pay link's expired checkout: Pay again opens a new invoice.
	pr := s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey, map[string]any{"amount": 7, "title": "Tea"}, 200)
	b.do("open the pay link", chromedp.Navigate(pr["url"].(string)), chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
	b.do("pay", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	first := browserRun(b, "location", chromedp.Location())
	b.waitState("expired")
	if text := b.text("#state"); !strings.Contains(text, "Choose Pay again") {
		t.Fatalf("expired pay link checkout says %q", text)
	}
	b.checkAccessibility("checkout of a pay link, expired")
	b.screenshots("checkout-expired-paylink", desktopWidth)
	b.do("pay again", chromedp.Click(chromedp.ID("pay-again")))
	b.waitAcross("another checkout", fmt.Sprintf(`location.href !== %q && !!document.getElementById("state-title")`, first))
	if again := browserRun(b, "location", chromedp.Location()); !strings.HasPrefix(again, s.url+"/checkout/") {
		t.Fatalf("Pay again went to %q (the expired one was %q)", again, first)
	}
	b.noProblems()
}

// grantClipboard lets the page at origin read and write the clipboard,
// as a customer's click on Copy does.
func grantClipboard(origin string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		for _, name := range []string{"clipboard-read", "clipboard-write"} {
			_, err := cdp.Call(ctx, tg, cdpbrowser.SetPermission, cdpbrowser.SetPermissionParams{
				Permission: &cdpbrowser.PermissionDescriptor{Name: name}, Setting: cdpbrowser.PermissionSettingGranted, Origin: origin})
			if err != nil {
				return chromedp.Void{}, err
			}
		}
		return chromedp.Void{}, nil
	}
}
