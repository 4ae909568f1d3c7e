package http

import (
	"bytes"
	"crypto/rand"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"html/template"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The customer pages (checkout, pay link, error) are rendered on the
// server from embedded templates, in the language of the request
// (package i18n), with their script and style sheet served from this
// binary too: they load nothing from other origins, and their
// Content-Security-Policy says so (pageCSP).

//go:embed templates/*.html
var templateFiles embed.FS

//go:embed assets
var assetFiles embed.FS

// pageFuncs are the template functions of the pages: t looks a string up
// in the page's language, plural picks its singular or plural form,
// payLinkStatus names a pay link's status in the API's vocabulary, time
// and tTime show a time (alone, or in a string) as a <time> element.
var pageFuncs = template.FuncMap{
	"t":             i18n.T,
	"plural":        i18n.Plural,
	"payLinkStatus": i18n.PayLinkStatus,
	"time":          timeHTML,
	"tTime":         tTime,
	"asset":         assetURL,
}

// timeHTML is at as a <time> element: its text UTC with the zone named
// in lang (i18n.Time), so that the page reads right without script; its
// datetime the instant, which the pages' script rewrites to the reader's
// own zone (data-local).
func timeHTML(lang string, at time.Time) template.HTML {
	return template.HTML(`<time datetime="` + i18n.ISOTime(at) + `" data-local>` + template.HTMLEscapeString(i18n.Time(lang, at)) + `</time>`)
}

// tTime is the string key in lang with its one %s the <time> element of
// at (timeHTML); the rest of the string is escaped.
func tTime(lang, key string, at time.Time) template.HTML {
	before, after, _ := strings.Cut(i18n.T(lang, key), "%s")
	return template.HTML(template.HTMLEscapeString(before)) + timeHTML(lang, at) + template.HTML(template.HTMLEscapeString(after))
}

// pages are the customer pages: checkout, pay link and error.
var pages = template.Must(template.New("").Funcs(pageFuncs).ParseFS(templateFiles, "templates/*.html"))

// assetPrefix is where the pages' script and style sheet are served.
const assetPrefix = "/checkout-assets/"

// assetVersions are a short hash of each asset's content, added to its URL
// so that it can be cached for good and still change with a new binary.
var assetVersions = func() map[string]string {
	v := make(map[string]string)
	_ = fs.WalkDir(assetFiles, "assets", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := assetFiles.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		v[path.Base(p)] = hex.EncodeToString(sum[:6])
		return nil
	})
	return v
}()

// assetURL is the URL of an embedded asset, with its version.
func assetURL(name string) string {
	return assetPrefix + name + "?v=" + assetVersions[name]
}

// asset serves an embedded script or style sheet.
func (s *server) asset(w http.ResponseWriter, r *http.Request) {
	name := chi.URLParam(r, "name")
	b, err := assetFiles.ReadFile("assets/" + name)
	if _, known := assetVersions[name]; err != nil || !known {
		http.NotFound(w, r)
		return
	}
	h := w.Header()
	switch path.Ext(name) {
	case ".js":
		h.Set("Content-Type", "text/javascript; charset=utf-8")
	case ".css":
		h.Set("Content-Type", "text/css; charset=utf-8")
	}
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	_, _ = w.Write(b)
}

// langLink is one entry of a page's language switch.
type langLink struct {
	Code, Name, URL, Dir string
	Current              bool
}

// brand is the store's accent colour and the text colour that reads on it.
type brand struct {
	Color, OnColor string
}

// defaultBrand is the accent of a store that set none.
var defaultBrand = brand{Color: "#1a56db", OnColor: "#ffffff"}

// storeBrand returns the store's accent colour, and black or white text
// on it, whichever contrasts more, so that any colour a merchant picks
// keeps buttons readable.
func storeBrand(st *kassa.Store) brand {
	if st == nil || kassa.ValidateBrandColor(st.BrandColor) != nil || st.BrandColor == "" {
		return defaultBrand
	}
	c := st.BrandColor
	var rgb [3]float64
	for i := range rgb {
		v, _ := strconv.ParseUint(c[1+2*i:3+2*i], 16, 8)
		rgb[i] = linear(float64(v) / 255)
	}
	l := 0.2126*rgb[0] + 0.7152*rgb[1] + 0.0722*rgb[2]
	// Contrast with white is 1.05/(l+0.05), with black (l+0.05)/0.05.
	if 1.05/(l+0.05) >= (l+0.05)/0.05 {
		return brand{Color: c, OnColor: "#ffffff"}
	}
	return brand{Color: c, OnColor: "#000000"}
}

// linear turns an sRGB channel (0 to 1) into linear light (WCAG's
// relative luminance).
func linear(v float64) float64 {
	if v <= 0.04045 {
		return v / 12.92
	}
	return math.Pow((v+0.055)/1.055, 2.4)
}

// pageBase is what every page's layout reads.
type pageBase struct {
	// Lang is the page's language, Dir its writing direction ("rtl" or
	// "ltr"), for <html lang dir>.
	Lang      string
	Dir       string
	PageTitle string
	Nonce     string
	// Simulation shows the SIMULATION banner; SimControls the buttons
	// that pay and mine (only with --dev, Deps.Simulator).
	Simulation  bool
	SimControls bool
	Brand       brand
	Langs       []langLink
	// Refresh reloads the page every so many seconds when scripts are off
	// (0: never); RefreshURL, when set, goes there instead.
	Refresh    int
	RefreshURL string
}

// newPageBase returns the layout data of a page with a fresh CSP nonce,
// in the language the reader chose on the page (?lang=), else the
// first of prefer the pages speak (the invoice's requested language,
// then the store's default), else the browser's (Accept-Language).
func (s *server) newPageBase(r *http.Request, title string, prefer ...string) pageBase {
	var b [16]byte
	_, _ = rand.Read(b[:])
	lang := i18n.Choose(r, prefer...)
	base := pageBase{Lang: lang, Dir: i18n.Dir(lang), PageTitle: title, Nonce: base64.RawURLEncoding.EncodeToString(b[:]), Simulation: s.Simulated || s.Simulator != nil, SimControls: s.Simulator != nil, Brand: defaultBrand}
	for _, code := range i18n.Languages {
		q := url.Values{}
		for k, v := range r.URL.Query() {
			if k == "tab" {
				q[k] = v
			}
		}
		q.Set("lang", code)
		base.Langs = append(base.Langs, langLink{Code: code, Name: i18n.Name(code), Dir: i18n.Dir(code), URL: r.URL.Path + "?" + q.Encode(), Current: code == lang})
	}
	return base
}

// pageCSP is the Content-Security-Policy of the customer pages: scripts
// and style sheets only from this origin (no inline script at all), the
// one inline style block (the store's colour) by its nonce, images from
// this origin or data: URIs (QR codes, logo), requests only to this
// origin, forms only to it, and no framing.
func pageCSP(nonce string) string {
	return "default-src 'none'; script-src 'self'; style-src 'self' 'nonce-" + nonce + "'; img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
}

// renderPage answers an HTML page.
func (s *server) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, nonce string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.ErrorContext(r.Context(), "render page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", pageCSP(nonce))
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	h.Set("Vary", "Accept-Language")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage is the data of the error page.
type errorPage struct {
	pageBase
	Heading, Text string
}

// pageError answers err as an HTML page with the status of its code.
func (s *server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorResponse(r, err)
	heading := http.StatusText(status)
	base := s.newPageBase(r, heading)
	s.renderPage(w, r, status, "error", base.Nonce, errorPage{pageBase: base, Heading: heading, Text: body.Message})
}
