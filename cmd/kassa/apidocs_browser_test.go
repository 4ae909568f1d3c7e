package main

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestBrowserAPIReference opens /docs/api in headless Chromium: the
// vendored Redoc renders the served OpenAPI document under the page's
// Content-Security-Policy, which blocks nothing, and every resource the
// page loads is on the server's own origin.
func TestBrowserAPIReference(t *testing.T) {
	requireChromium(t)
	s := startServer(t, t.TempDir())
	b := newBrowser(t)
	rendered := `document.body.innerText.includes("Create an invoice") && document.body.innerText.includes("Register a webhook") && document.body.innerText.includes("An invoice event")`
	b.do("open the API reference", chromedp.Navigate(s.url+"/docs/api"),
		chromedp.Poll[chromedp.Void](rendered, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(browserWait)))

	resources := browserRun(b, "list the loaded resources", chromedp.Evaluate[[]string](
		`[location.href, ...performance.getEntriesByType("resource").map(e => e.name)]`))
	if len(resources) < 4 { // the page, the renderer, its start script, the document
		t.Errorf("the page loaded only %q", resources)
	}
	for _, u := range resources {
		if !strings.HasPrefix(u, s.url+"/") && !strings.HasPrefix(u, "blob:"+s.url+"/") && !strings.HasPrefix(u, "data:") {
			t.Errorf("the page loaded %s, not from %s", u, s.url)
		}
	}
	problems := browserRun(b, "read the page probe", chromedp.Evaluate[[]string](`window.__kassaProblems || ["page probe missing"]`))
	if len(problems) > 0 {
		t.Errorf("page problems: %q", problems)
	}
}
