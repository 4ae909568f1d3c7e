package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/chromedp"
)

// setTimezone makes the browser's zone the IANA zone id, as a customer's
// computer set to it would be.
func setTimezone(id string) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetTimezoneOverride, emulation.SetTimezoneOverrideParams{TimezoneID: id})
		return chromedp.Void{}, err
	}
}

// setScripts turns the page's scripts on or off, for a customer whose
// browser runs none.
func setScripts(on bool) chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, emulation.SetScriptExecutionDisabled, emulation.SetScriptExecutionDisabledParams{Value: !on})
		return chromedp.Void{}, err
	}
}

// TestBrowserCheckoutFormats (issue 22): in a browser in Tokyo, on a
// desktop and on a 360 px phone, the checkout shows the amount the way
// its language writes money ("€1,234.50", "1.234,50 €"), the item a pay
// link sells, and its deadline in the customer's own time with the zone
// named; without scripts the deadline stays in UTC, named so.
func TestBrowserCheckoutFormats(t *testing.T) {
	s, c := browserStore(t, "--currency", "EUR")
	b := newBrowser(t)
	b.do("live in Tokyo", setTimezone("Asia/Tokyo"))
	tokyo := time.FixedZone("JST", 9*3600) // no daylight saving time

	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey,
		map[string]any{"amount": "1234.5", "currency": "EUR", "metadata": map[string]any{"orderId": "wc-1042", "itemDesc": "Blue mug"}}, 200)
	link := inv["checkoutLink"].(string)
	// The deadline, as the page's <time> element holds it.
	deadline := func() time.Time {
		t.Helper()
		iso := browserRun(b, "deadline", chromedp.Evaluate[string](`document.querySelector("#details time").getAttribute("datetime")`))
		at, err := time.Parse(time.RFC3339, iso)
		if err != nil {
			t.Fatalf("deadline %q: %v", iso, err)
		}
		return at
	}
	for _, width := range []int64{desktopWidth, phoneWidth} {
		b.setWidth(width, 900)
		for _, tc := range []struct {
			lang, fiat, sats, layout string
		}{
			{"en", "€1,234.50", " sats", "2006-01-02 15:04"},
			{"de", "1.234,50\u00a0€", " sats", "02.01.2006, 15:04"},
		} {
			b.do("open the checkout in "+tc.lang, chromedp.Navigate(link+"?lang="+tc.lang), chromedp.WaitVisible(chromedp.CSS("#state-title")))
			b.waitState("waiting")
			if f, item, order := b.text("#fiat"), b.text("#item"), b.text("#order"); f != tc.fiat || item != "Blue mug" || !strings.HasSuffix(order, "wc-1042") {
				t.Errorf("%d px, %s: amount %q, item %q, order %q; want %q, Blue mug, wc-1042", width, tc.lang, f, item, order, tc.fiat)
			}
			if sats := b.text("#sats"); !strings.HasSuffix(sats, tc.sats) || !strings.ContainsAny(sats, ".,") {
				t.Errorf("%d px, %s: sats read %q, want them grouped", width, tc.lang, sats)
			}
			want := deadline().In(tokyo).Format(tc.layout) + " Asia/Tokyo"
			b.waitTrue("the deadline in local time", `!document.querySelector("#details time[data-local]")`)
			if got := b.text("#details time"); got != want {
				t.Errorf("%d px, %s: deadline reads %q, want %q (Tokyo time)", width, tc.lang, got, want)
			}
			b.noSideScroll("the checkout")
			b.noProblems()
		}
	}
	b.setWidth(desktopWidth, 900)

	// Without scripts: the same deadline in UTC, named so.
	b.do("scripts off", setScripts(false))
	b.do("open without scripts", chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#state-title")))
	if got, want := b.text("#details time"), deadline().UTC().Format("2006-01-02 15:04")+" UTC"; got != want {
		t.Errorf("without scripts the deadline reads %q, want %q", got, want)
	}
	b.do("scripts on", setScripts(true))

	// A pay link: its page formats the amount, its checkout names what is
	// sold, on a phone as on a desktop.
	pr := s.json("POST", "/api/v1/stores/"+c.StoreID+"/payment-requests", c.APIKey,
		map[string]any{"amount": "1234.5", "title": "Oak table", "currency": "EUR"}, 200)
	for _, width := range []int64{phoneWidth, desktopWidth} {
		b.setWidth(width, 900)
		b.do("open the pay link", chromedp.Navigate(pr["url"].(string)+"?lang=de"), chromedp.WaitVisible(chromedp.CSS(`form button[type="submit"]`)))
		if a, status := b.text(".amount"), b.text(".badge"); a != "1.234,50\u00a0€" || status != "Ausstehend" {
			t.Errorf("%d px: pay link reads %q, %q; want 1.234,50 €, Ausstehend", width, a, status)
		}
		b.waitTrue("the pay link's expiry in local time", `!document.querySelector("time[data-local]")`)
		if until := b.text("main time, body time"); !strings.HasSuffix(until, " Asia/Tokyo") {
			t.Errorf("%d px: the pay link is payable until %q, want Tokyo time", width, until)
		}
		b.noSideScroll("the pay link page")
		b.do("pay", chromedp.Click(chromedp.CSS(`form button[type="submit"]`)), chromedp.WaitVisible(chromedp.CSS("#state-title")))
		if item, f := b.text("#item"), b.text("#fiat"); item != "Oak table" || f != "1.234,50\u00a0€" {
			t.Errorf("%d px: the pay link's checkout reads item %q, amount %q; want Oak table, 1.234,50 €", width, item, f)
		}
		b.noSideScroll("the pay link's checkout")
		b.noProblems()
	}
	b.screenshots("checkout-item-tokyo-de", desktopWidth)
}
