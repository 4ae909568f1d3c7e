package main

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAuthorizeApplication connects an application as BTCPay's
// plugins do, in Chromium against the real binary (--dev, so that the
// application may listen on loopback over http): its "connect" link
// opens /api-keys/authorize, the signed-in merchant approves, and the
// page posts the key back to the application by itself (the page's CSP
// lets that one form go there). The key holds exactly the permissions
// asked: it reads invoices and may not make pay links.
func TestBrowserAuthorizeApplication(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	b := newBrowser(t)

	var mu sync.Mutex
	var got url.Values
	app := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.ParseForm() != nil {
			return
		}
		mu.Lock()
		got = r.PostForm
		mu.Unlock()
		w.Write([]byte("<!doctype html><title>connected</title><main>connected</main>"))
	}))
	defer app.Close()

	b.do("open sign-up", chromedp.Navigate(s.url+"/dashboard/signup"), chromedp.WaitVisible(chromedp.CSS("#email")))
	b.do("sign up", chromedp.SendKeys(chromedp.CSS("#email"), "merchant@example.com"),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	b.markPage()
	b.do("submit sign-up", chromedp.Click(chromedp.CSS(`main button[type=submit]`)))
	waitNewPage(b, "sign-up")
	b.do("open new store", chromedp.Navigate(s.url+"/dashboard/stores/new"), chromedp.WaitVisible(chromedp.CSS("#name")))
	b.do("name the store", chromedp.SendKeys(chromedp.CSS("#name"), "Corner Café"))
	b.markPage()
	b.do("create the store", chromedp.Click(chromedp.CSS(`main button[type=submit]`)))
	waitNewPage(b, "create the store")
	storeID := b.text("#store-id")

	asked := []string{"btcpay.store.canviewinvoices", "btcpay.store.cancreateinvoice"}
	q := url.Values{"applicationName": {"Corner Shop"}, "redirect": {app.URL + "/callback"}, "strict": {"true"}, "selectiveStores": {"true"}}
	q["permissions"] = asked
	b.do("open the authorize link", chromedp.Navigate(s.url+"/api-keys/authorize?"+q.Encode()), chromedp.WaitVisible(chromedp.CSS(`button[value=approve]`)))
	b.noProblems()
	b.checkAccessibility("authorize page")
	if text := b.text("main"); !strings.Contains(text, "Corner Shop") || !strings.Contains(text, "see invoices") || !strings.Contains(text, "127.0.0.1") {
		t.Fatalf("the page does not name the application, its permissions and its host: %s", text)
	}
	b.do("approve", chromedp.Click(chromedp.CSS(`button[value=approve]`)))
	waitFor(t, 20*time.Second, "the key posted to the application", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return got != nil
	})
	mu.Lock()
	key, perms := got.Get("apiKey"), got["permissions[]"]
	mu.Unlock()
	want := []string{asked[0] + ":" + storeID, asked[1] + ":" + storeID}
	if key == "" || !slices.Equal(perms, want) {
		t.Fatalf("posted apiKey %v, permissions[] %v, want %v", key != "", perms, want)
	}
	if code, body, _ := s.do("GET", "/api/v1/stores/"+storeID+"/invoices", key, nil); code != http.StatusOK {
		t.Errorf("the key lists invoices: %d %s", code, body)
	}
	if code, body, _ := s.do("POST", "/api/v1/stores/"+storeID+"/payment-requests", key, map[string]any{"amount": 5, "title": "x"}); code != http.StatusForbidden {
		t.Errorf("the key made a pay link it was not granted: %d %s", code, body)
	}
}
