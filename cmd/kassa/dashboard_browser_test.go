package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"flag"
	"fmt"
	"image"
	"image/color/palette"
	"image/draw"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// screenshots says whether the browser tests rewrite
// docs/screenshots/*.png: with KASSA_SCREENSHOTS set, as make screenshots
// does, or with -screenshots.
var screenshotsFlag = flag.Bool("screenshots", false, "write the screenshots to docs/screenshots/ (as KASSA_SCREENSHOTS=1 does)")

func screenshots() bool { return *screenshotsFlag || os.Getenv("KASSA_SCREENSHOTS") != "" }

// dashboardPage is a page of the dashboard the test has reached, by name
// and URL, for the screenshots.
type dashboardPage struct{ name, url string }

// TestBrowserDashboard uses the dashboard as a merchant does, in Chromium
// against the real binary (--dev: open sign-up): sign up, log in, create a store, create an API key
// and use it over HTTP, register a webhook with a local receiver and
// redeliver a delivery from the page, export the transactions as CSV
// and compare every row with the API's. Then every page is opened at
// 1280 and 360 px: nothing is wider than the screen, nothing is blocked
// by the CSP, and (with -screenshots) each is saved.
func TestBrowserDashboard(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	d := &dashboardScenario{t: t, s: s, b: newBrowser(t), rec: &hookReceiver{}}
	hooks := httptest.NewServer(d.rec)
	defer hooks.Close()
	d.hooksURL = hooks.URL

	step(t, "sign up, log out, log in by keyboard", d.signUpAndLogIn)
	step(t, "create a store", d.createStore)
	step(t, "an API key made on the keys page works over HTTP", d.apiKey)
	step(t, "a webhook against a local receiver; two invoices paid", d.webhook)
	step(t, "a delivery sent again from the webhook page", d.redeliver)
	step(t, "the CSV export, fetched by the page, matches the API row by row", d.csvExport)
	step(t, "the other pages, a pay link created, a German error page", d.otherPages)
	step(t, "every page at 1280 and 360 px, signed in and then signed out", d.shootAll)
}

// dashboardScenario is TestBrowserDashboard's server, browser and
// webhook receiver, the pages reached, and what a step leaves for the
// next.
type dashboardScenario struct {
	t        *testing.T
	s        *server
	b        *browser
	rec      *hookReceiver
	hooksURL string // the receiver's URL

	pages    []dashboardPage // the pages reached signed in, to be shot
	storeID  string
	base     string // the store's dashboard path
	key      string // the API key made on the keys page
	hookPath string // the webhook's page
	invID    string // the first invoice, paid over Lightning
}

// visit opens path, checks that nothing was blocked, and keeps it for
// the screenshots.
func (d *dashboardScenario) visit(name, path string) {
	d.b.do("open "+path, chromedp.Navigate(d.s.url+path), chromedp.WaitVisible(chromedp.CSS("main")))
	d.b.noProblems()
	d.pages = append(d.pages, dashboardPage{name, path})
}

// submit clicks a form's button and waits for the page it leads to
// (the mark left in the old page's window is gone with it).
func (d *dashboardScenario) submit(what, sel string) {
	d.b.markPage()
	d.b.do(what, chromedp.Click(chromedp.CSS(sel)))
	waitNewPage(d.b, what)
}

// signUpAndLogIn signs up, which signs the new account in to its stores
// page; logs out; and logs in again by keyboard only.
func (d *dashboardScenario) signUpAndLogIn() {
	t, b := d.t, d.b
	d.visit("login", "/dashboard/login")
	d.visit("signup", "/dashboard/signup")
	d.pages = nil // the signed-out pages are shot last, signed out
	b.do("sign up", chromedp.SendKeys(chromedp.CSS("#email"), "merchant@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	d.submit("submit sign-up", `main button[type=submit]`)
	b.do("stores after sign-up", chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
	d.submit("log out", `form[action="/dashboard/logout"] button`)
	if h1 := b.text("h1"); h1 != "Log in" {
		t.Fatalf("after logging out the page reads %q: %s", h1, b.text("main"))
	}
	// Log in by keyboard only: Tab between fields, Enter submits.
	b.markPage()
	b.do("log in by keyboard", chromedp.WaitVisible(chromedp.CSS("#email")), chromedp.Focus(chromedp.CSS("#email")),
		chromedp.KeyEvent("merchant@example.com"), chromedp.KeyEvent(kb.Tab), chromedp.KeyEvent("correct horse battery"),
		chromedp.KeyEvent(kb.Enter))
	waitNewPage(b, "log in by keyboard")
	b.do("stores after login", chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
	d.pages = append(d.pages, dashboardPage{"stores", "/dashboard/stores"})
}

// createStore creates a store, which opens its settings.
func (d *dashboardScenario) createStore() {
	b := d.b
	d.visit("store-new", "/dashboard/stores/new")
	b.do("name the store", chromedp.SendKeys(chromedp.CSS("#name"), "Corner Café"))
	d.submit("create the store", `main button[type=submit]`)
	d.storeID = b.text("#store-id")
	d.base = "/dashboard/stores/" + d.storeID
	d.pages = append(d.pages, dashboardPage{"settings", d.base + "/"})
	if got := b.text("h1"); got != "Store settings" {
		d.t.Fatalf("after creating the store the page reads %q", got)
	}
}

// apiKey creates a key, which the list shows masked and the password
// shows in full, and uses it over HTTP.
func (d *dashboardScenario) apiKey() {
	b := d.b
	d.visit("keys", d.base+"/keys")
	b.do("label the key", chromedp.SendKeys(chromedp.CSS("#label"), "shop plugin"))
	d.submit("create the key", `main form button[type=submit]`)
	b.do("open the key's reveal", chromedp.Click(chromedp.CSS(`tr[data-label="shop plugin"] details.reveal summary`)),
		chromedp.SendKeys(chromedp.CSS(`tr[data-label="shop plugin"] details.reveal input[name=password]`), "correct horse battery"))
	d.submit("show the key", `tr[data-label="shop plugin"] details.reveal button[type=submit]`)
	d.key = b.text(`#revealed-key`)
	if code, body, _ := d.s.do("GET", "/api/v1/stores/"+d.storeID, d.key, nil); code != 200 {
		d.t.Fatalf("API with the dashboard's key: %d %s", code, body)
	}
}

// webhook adds a webhook against the local receiver (its test request
// succeeds); an invoice paid over Lightning is delivered New and
// Settled; a second, with a formula for an order id, is paid on-chain.
func (d *dashboardScenario) webhook() {
	t, b, s, rec := d.t, d.b, d.s, d.rec
	d.visit("webhooks", d.base+"/webhooks")
	b.do("webhook URL", chromedp.SendKeys(chromedp.CSS("#url"), d.hooksURL+"/kassa"))
	d.submit("add the webhook", `main form button[type=submit]`)
	if got := b.text(".notice.ok"); !strings.Contains(got, "test request succeeded") {
		t.Fatalf("after adding the webhook: %q (%s)", got, b.text("main"))
	}
	hookURL := browserRun(b, "webhook page URL", chromedp.Location())
	d.hookPath = strings.Split(strings.TrimPrefix(hookURL, s.url), "?")[0]
	pings := rec.count()

	inv := s.json("POST", "/api/v1/stores/"+d.storeID+"/invoices", d.key, map[string]any{"amount": "12.50", "currency": "EUR", "orderId": "A-1"}, 200)
	d.invID = inv["id"].(string)
	waitFor(t, 20*time.Second, "the New delivery", func() bool { return rec.count() > pings })
	s.mustCLI("sim", "pay", d.invID)
	waitFor(t, 20*time.Second, "the Settled delivery", func() bool { return rec.count() > pings+1 })
	inv2 := s.json("POST", "/api/v1/stores/"+d.storeID+"/invoices", d.key, map[string]any{"amount": "3", "currency": "EUR", "orderId": "=1+1"}, 200)
	s.mustCLI("sim", "pay", inv2["id"].(string), "--method", "onchain")
	s.mustCLI("sim", "mine", "1")
	waitFor(t, 20*time.Second, "the second invoice settled", func() bool {
		return apiInvoice(s, storeCreds{StoreID: d.storeID, APIKey: d.key}, inv2["id"].(string))["status"] == "Settled"
	})
}

// redeliver sends a delivery again from the webhook page: the notice
// says so, and the receiver gets it.
func (d *dashboardScenario) redeliver() {
	b, rec := d.b, d.rec
	d.visit("webhook", d.hookPath)
	before := rec.count()
	b.do("wait for the delivery rows", chromedp.WaitVisible(chromedp.CSS("tr.delivery button")))
	d.submit("redeliver", "tr.delivery button")
	if got := b.text(".notice.ok"); !strings.HasPrefix(got, "Delivery sent again, with the slim body") {
		d.t.Fatalf("after Redeliver: %q", got)
	}
	waitFor(d.t, 20*time.Second, "the redelivery", func() bool { return rec.count() > before })
}

func (d *dashboardScenario) csvExport() {
	d.visit("transactions", d.base+"/transactions")
	csvText := browserRun(d.b, "fetch the export", chromedp.Evaluate[string](
		`fetch(document.getElementById("export").href).then(r => r.text())`, chromedp.EvalAwaitPromise))
	compareCSV(d.t, d.s, d.storeID, d.key, csvText)
}

// otherPages opens the remaining pages, creating a pay link on the way,
// and an error page, in German for a browser that asks for it.
func (d *dashboardScenario) otherPages() {
	b, base := d.b, d.base
	d.visit("invoices", base+"/invoices")
	d.visit("invoice", base+"/invoices/"+d.invID)
	d.visit("invoice-new", base+"/invoices/new")
	d.visit("paylinks", base+"/paylinks")
	b.do("pay link form", chromedp.SendKeys(chromedp.CSS("#title"), "Coffee beans 1 kg"),
		chromedp.SendKeys(chromedp.CSS("#amount"), "24"), chromedp.SendKeys(chromedp.CSS("#description"), "Single origin, roasted this week."))
	d.submit("create the pay link", `main form button[type=submit]`)
	linkPath := browserRun(b, "pay link path", chromedp.Evaluate[string](`document.querySelector("tr.paylink a").getAttribute("href")`))
	d.visit("paylink", linkPath)
	d.visit("balance", base+"/balance")
	d.visit("invites", "/dashboard/invites")
	d.visit("account", "/dashboard/account")
	d.visit("error-de", "/dashboard/stores/no-such-store/?lang=de")
	if got := b.text("h1"); !strings.HasPrefix(got, "Etwas ist schiefgelaufen (404)") {
		d.t.Fatalf("the German error page reads %q", got)
	}
}

// shootAll opens every page reached at desktop and phone width: nothing
// wider than the screen (tables scroll inside their box), and the
// screenshots; then logs out and does the same for the signed-out pages.
func (d *dashboardScenario) shootAll() {
	t, b, s := d.t, d.b, d.s
	shoot(t, b, s, d.pages)
	b.do("log out", chromedp.Navigate(s.url+"/dashboard/stores"), chromedp.Click(chromedp.CSS("header form button")),
		chromedp.WaitVisible(chromedp.CSS("#email")))
	shoot(t, b, s, []dashboardPage{{"login", "/dashboard/login"}, {"signup", "/dashboard/signup"}})
}

// shoot opens each page at 1280 and 360 px, checks that nothing is wider
// than the screen and that nothing was blocked, and with -screenshots
// saves each.
func shoot(t *testing.T, b *browser, s *server, pages []dashboardPage) {
	t.Helper()
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"desktop", 1280, 860}, {"phone", 360, 780}} {
		b.do("viewport "+size.name, chromedp.EmulateViewport(size.width, size.height))
		for _, p := range pages {
			b.do("open "+p.url, chromedp.Navigate(s.url+p.url), chromedp.WaitVisible(chromedp.CSS("main")))
			b.noProblems()
			if wide := browserRun(b, "page width", chromedp.Evaluate[int64](`document.documentElement.scrollWidth`)); wide > size.width {
				t.Errorf("%s at %d px is %d px wide", p.name, size.width, wide)
			}
			shot := browserRun(b, "screenshot", chromedp.CaptureScreenshot())
			if screenshots() {
				writeScreenshot(t, fmt.Sprintf("dashboard-%s-%s.png", p.name, size.name), shot)
			}
		}
	}
}

// waitNewPage waits until the page marked by markPage was replaced by a
// new one that finished loading. An evaluation that meets the navigation
// fails; it is tried again.
func waitNewPage(b *browser, what string) {
	b.t.Helper()
	deadline := time.Now().Add(browserWait)
	for {
		ctx, cancel := context.WithTimeout(b.ctx, time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.__kassaMark === undefined && document.readyState === "complete"`))
		cancel()
		if err == nil && ok {
			b.noProblems()
			return
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("browser: %s: no new page within %v (%v)", what, browserWait, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// compareCSV compares every row of the export with the API's
// transactions of the store, field by field.
func compareCSV(t *testing.T, s *server, storeID, key, text string) {
	t.Helper()
	rows, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("the export is not CSV: %v\n%s", err, text)
	}
	code, body, _ := s.do("GET", "/api/v1/stores/"+storeID+"/transactions", key, nil)
	if code != 200 {
		t.Fatalf("API transactions: %d", code)
	}
	var api []map[string]any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&api); err != nil {
		t.Fatal(err)
	}
	header := rows[0]
	rows = rows[1:]
	if len(rows) != len(api) || len(api) < 4 {
		t.Fatalf("the export has %d rows, the API %d transactions", len(rows), len(api))
	}
	for i, row := range rows {
		for j, name := range header {
			want, ok := api[i][name]
			switch name {
			case "createdAtUTC", "orderId": // the export's own
				continue
			case "number": // the store's own numbering, newest first
				if want := fmt.Sprint(len(rows) - i); row[j] != want {
					t.Errorf("row %d number: CSV %q, want %q", i, row[j], want)
				}
				continue
			}
			if !ok {
				t.Fatalf("the API's transaction has no %s", name)
			}
			if got, w := strings.TrimPrefix(row[j], "'"), fmt.Sprint(want); got != w {
				t.Errorf("row %d %s: CSV %q, API %q", i, name, row[j], w)
			}
		}
	}
}

// writeScreenshot saves a PNG with at most 256 colours, to keep the
// files small.
func writeScreenshot(t *testing.T, name string, shot []byte) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	pal := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(pal, img.Bounds(), img, image.Point{}, draw.Src)
	var out bytes.Buffer
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(&out, pal); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("..", "..", "docs", "screenshots")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// hookReceiver counts the webhook requests it gets.
type hookReceiver struct {
	mu sync.Mutex
	n  int
}

func (r *hookReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	io.Copy(io.Discard, req.Body)
	r.mu.Lock()
	r.n++
	r.mu.Unlock()
	io.WriteString(w, `{"ok":true}`)
}

func (r *hookReceiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n
}
