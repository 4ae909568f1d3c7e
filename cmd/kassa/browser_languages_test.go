package main

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// missingGlyphsJS lists the characters of the page's text that the
// browser draws with no font's glyph: each character is drawn on a
// canvas in the font its element uses, and compared with what the same
// font draws for an unassigned code point (U+0378, which no font has:
// the missing-glyph box); a character that draws as that box, or as
// nothing at all though it is neither a space nor a format mark, has no
// glyph on this machine. Each entry reads "<char> U+XXXX in <element's
// language>".
const missingGlyphsJS = `(() => {
  const seen = new Map();
  const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walk.nextNode()) {
    const el = walk.currentNode.parentElement;
    if (!el || el.closest("script,style")) { continue; }
    const cs = getComputedStyle(el);
    const font = cs.fontStyle + " " + cs.fontWeight + " 32px " + cs.fontFamily;
    const lang = (el.closest("[lang]") || document.documentElement).lang;
    for (const ch of walk.currentNode.textContent) {
      if (/[\s\p{Cf}]/u.test(ch)) { continue; }
      seen.set(ch + "\u0000" + font, [ch, font, lang]);
    }
  }
  const c = document.createElement("canvas");
  c.width = 48; c.height = 48;
  const g = c.getContext("2d", {willReadFrequently: true});
  const draw = (ch, font) => {
    g.clearRect(0, 0, 48, 48);
    g.font = font; g.textBaseline = "top"; g.fillStyle = "#000";
    g.fillText(ch, 4, 4);
    const d = g.getImageData(0, 0, 48, 48).data;
    let s = "", ink = false;
    for (let i = 3; i < d.length; i += 4) { s += d[i] > 127 ? "1" : "0"; if (d[i] > 0) { ink = true; } }
    return ink ? s : "";
  };
  const box = new Map();
  const missing = [];
  for (const [ch, font, lang] of seen.values()) {
    if (!box.has(font)) { box.set(font, draw("\u0378", font)); }
    const got = draw(ch, font);
    if (got === "" || got === box.get(font)) {
      missing.push(ch + " U+" + ch.codePointAt(0).toString(16).toUpperCase().padStart(4, "0") + " in " + lang);
    }
  }
  return missing;
})()`

// TestBrowserCheckoutLanguages (issue 41): the checkout in English,
// German, Arabic, Japanese and Portuguese, on a desktop and on a 360 px
// phone, speaks the language, mirrors for Arabic (right to left), draws
// every character of the page with a real glyph (the language switch
// names every language in its own script, so every script the pages
// speak is drawn), and is saved as a screenshot.
func TestBrowserCheckoutLanguages(t *testing.T) {
	s, c := browserStore(t, "--currency", "EUR")
	b := newBrowser(t)
	inv := s.json("POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey,
		map[string]any{"amount": "1234.5", "currency": "EUR", "metadata": map[string]any{"orderId": "wc-1042", "itemDesc": "Blue mug"}}, 200)
	link := inv["checkoutLink"].(string)
	for _, tc := range []struct {
		lang, dir, title, fiat string
	}{
		{"en", "ltr", "Waiting for payment", "€1,234.50"},
		{"de", "ltr", "Warten auf Ihre Zahlung", "1.234,50\u00a0€"},
		{"ar", "rtl", "في انتظار الدفع", "\u200f1,234.50\u00a0€"},
		{"ja", "ltr", "お支払いを待っています", "€1,234.50"},
		{"pt", "ltr", "Aguardando pagamento", "€\u00a01.234,50"},
	} {
		t.Run(tc.lang, func(t *testing.T) {
			b := b.sub(t)
			for _, width := range []int64{desktopWidth, phoneWidth} {
				b.setWidth(width, 900)
				b.do("open the checkout", chromedp.Navigate(link+"?lang="+tc.lang), chromedp.WaitVisible(chromedp.CSS("#state-title")))
				b.waitState("waiting")
				if got := b.text("#state-title"); got != tc.title {
					t.Errorf("%d px: the state reads %q, want %q", width, got, tc.title)
				}
				if got := b.text("#fiat"); got != strings.TrimSpace(tc.fiat) && got != strings.TrimPrefix(tc.fiat, "\u200f") {
					t.Errorf("%d px: the amount reads %q, want %q", width, got, tc.fiat)
				}
				// Laid out in the language's direction: the heading and the
				// state's bar start on the right in Arabic, on the left else.
				mirrored := b.eval("layout direction", `(() => {
					const main = document.querySelector("main").getBoundingClientRect();
					const h1 = document.querySelector("h1").getBoundingClientRect();
					const st = getComputedStyle(document.querySelector(".state"));
					const rtl = document.documentElement.dir === "rtl";
					const bar = rtl ? st.borderRightWidth : st.borderLeftWidth;
					const other = rtl ? st.borderLeftWidth : st.borderRightWidth;
					const startGap = rtl ? main.right - h1.right : h1.left - main.left;
					return bar === "4px" && other === "0px" && startGap < 40;
				})()`)
				if dir := browserRun(b, "dir", chromedp.Evaluate[string](`document.documentElement.dir`)); dir != tc.dir || !mirrored {
					t.Errorf("%d px: dir=%q (want %q), laid out from the start edge: %v", width, dir, tc.dir, mirrored)
				}
				if missing := browserRun(b, "glyphs", chromedp.Evaluate[[]string](missingGlyphsJS)); len(missing) > 0 {
					t.Errorf("%d px: %d characters have no glyph (install the fonts: scripts/install-test-deps.sh): %s", width, len(missing), strings.Join(missing[:min(len(missing), 25)], ", "))
				}
				b.noSideScroll("the checkout in " + tc.lang)
				b.noProblems()
			}
			b.screenshots("checkout-lang-"+tc.lang, desktopWidth)
		})
	}
}
