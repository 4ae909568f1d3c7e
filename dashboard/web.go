package dashboard

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"maps"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// view is what every page template gets: the signed-in user, the store
// of the page, the CSRF token of its forms, and the page's own data.
type view struct {
	Page  string
	User  *user
	Store *kassa.Store
	CSRF  string
	// Flash is a one-time notice carried in the URL (?done=key).
	Flash string
	// Sim shows the simulation banner: the chain or Lightning is
	// simulated. SimPay offers the simulator's buttons (--dev only).
	Sim, SimPay bool
	Op          bool // the operator page is mounted
	Refunds     bool // the refund pages are served (Deps.Refunds)
	D           map[string]any
	// Lang is the page's language (one of Languages); Langs the
	// language switch.
	Lang  string
	Langs []langLink

	principal *kassa.Principal
}

// Can reports whether the reader may do perm on the page's store: pages
// show only the actions it may.
func (v view) Can(perm string) bool {
	return v.Store != nil && v.principal.Can(v.Store.ID, kassa.Permission(perm))
}

var funcs = template.FuncMap{
	// pageLanguages are the customer pages' languages, each in its own
	// words, for a store's default language.
	"pageLanguages": func() []langLink {
		out := make([]langLink, 0, len(i18n.Languages))
		for _, l := range i18n.Languages {
			out = append(out, langLink{Code: l, Name: i18n.Name(l)})
		}
		return out
	},
	"t":   msg,
	"dec": func(d decimal.Decimal) string { return d.String() },
	"ms":  func(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) + " ms" },
	"date": func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return t.UTC().Format("2006-01-02")
	},
	"str": func(v any) string {
		if s, ok := v.(interface{ String() string }); ok {
			return s.String()
		}
		return ""
	},
	"lower":    strings.ToLower,
	"contains": func(list []kassa.EventType, e kassa.EventType) bool { return containsEvent(list, e) },
	"events":   func() []kassa.EventType { return kassa.EventTypes },
	"currencies": func() []kassa.Currency {
		return []kassa.Currency{kassa.EUR, kassa.USD, kassa.CAD, kassa.JPY, kassa.GBP, kassa.CHF, kassa.BTC, kassa.SATS}
	},
	"statuses": func() []string { return []string{"New", "Processing", "Settled", "Expired", "Invalid"} },
	"short": func(s string) string {
		if len(s) > 24 {
			return s[:12] + "…" + s[len(s)-8:]
		}
		return s
	},
	"add":     func(a, b int) int { return a + b },
	"order":   (*kassa.Invoice).SearchOrderID,
	"section": section,
	"q":       url.QueryEscape,
}

// section is the store menu entry a page belongs to.
func section(page string) string {
	switch page {
	case "webhook":
		return "webhooks"
	case "invoice", "invoice_new", "refund":
		return "invoices"
	case "paylink":
		return "paylinks"
	}
	return page
}

func containsEvent(list []kassa.EventType, e kassa.EventType) bool {
	for _, x := range list {
		if x == e {
			return true
		}
	}
	return false
}

// formatFuncs are the template functions that write money, times and a
// pay link's status in lang, with the one formatter of every page
// (http/i18n, docs/decisions.md "Languages: catalogues and CLDR"):
// sats ("14,368 sats"), money ("€12.50", "1.234,50 €", "0.00014368
// BTC"), rate (a bitcoin's price: "€50,000.00 / BTC"), time (UTC with
// the zone named: "2026-11-25 21:44 UTC") and linkstatus (the API's
// word in English).
func formatFuncs(lang string) template.FuncMap {
	return template.FuncMap{
		"sats":  func(s kassa.Sats) string { return i18n.Sats(lang, s) },
		"money": func(d decimal.Decimal, c kassa.Currency) string { return i18n.Money(lang, d, c) },
		"rate": func(d decimal.Decimal, c kassa.Currency) string {
			if d.IsZero() {
				return "—"
			}
			return i18n.Money(lang, d, c) + " / BTC"
		},
		"time":       func(t time.Time) string { return i18n.Time(lang, t) },
		"linkstatus": func(status string) string { return i18n.PayLinkStatus(lang, status) },
		"method":     func(m kassa.PaymentMethod) string { return i18n.Method(lang, m) },
	}
}

// langLink is one entry of the dashboard's language switch.
type langLink struct {
	Code, Name, URL string
	Current         bool
}

// withLang is funcs with the strings and formatters of lang.
func withLang(base template.FuncMap, lang string) template.FuncMap {
	fm := template.FuncMap{}
	maps.Copy(fm, base)
	maps.Copy(fm, formatFuncs(lang))
	if lang != "en" {
		fm["t"] = func(key string) string { return msgIn(lang, key) }
	}
	return fm
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// parsePages parses each page template with the layout around it, in
// each of Languages (language, then page); the currency menus offer
// fiat (nil: the six of old) and then BTC and SATS.
//
// The pages are parsed once a process for each fiat list (parsedPages):
// what they are depends on nothing else, and an executed html/template
// is safe for concurrent use, so Dashboards share them.
func parsePages(fiat []kassa.Currency) map[string]map[string]*template.Template {
	key := "default" // nil: not the same menus as an empty list
	if fiat != nil {
		key = fmt.Sprint(fiat)
	}
	parsedPages.Lock()
	defer parsedPages.Unlock()
	if pages, ok := parsedPages.m[key]; ok {
		return pages
	}
	pages := parsePagesNow(fiat)
	parsedPages.m[key] = pages
	return pages
}

// parsedPages holds parsePages's pages by fiat list.
var parsedPages = struct {
	sync.Mutex
	m map[string]map[string]map[string]*template.Template
}{m: map[string]map[string]map[string]*template.Template{}}

// parsePagesNow is parsePages without the cache.
func parsePagesNow(fiat []kassa.Currency) map[string]map[string]*template.Template {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	out := map[string]map[string]*template.Template{}
	for _, lang := range Languages {
		fm := withLang(funcs, lang)
		if fiat != nil {
			offered := append(slices.Clone(fiat), kassa.BTC, kassa.SATS)
			fm["currencies"] = func() []kassa.Currency { return offered }
		}
		pages := map[string]*template.Template{}
		for _, name := range names {
			base := strings.TrimSuffix(path.Base(name), ".html")
			if base == "layout" || base == "partials" {
				continue
			}
			pages[base] = parsePage(name, fm)
		}
		out[lang] = pages
	}
	return out
}

func parsePage(name string, fm template.FuncMap) *template.Template {
	return template.Must(template.New("layout.html").Funcs(fm).ParseFS(templateFS, "templates/layout.html", "templates/partials.html", name))
}

// render writes page with data, in the layout, in the reader's
// language.
func (h *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, page string, data map[string]any) {
	lang := h.lang(w, r)
	h.renderIn(w, r, status, lang, h.pages[lang][page], page, data)
}

// renderIn is render in lang with tmpl.
func (h *Dashboard) renderIn(w http.ResponseWriter, r *http.Request, status int, lang string, tmpl *template.Template, page string, data map[string]any) {
	v := view{Page: page, Store: currentStore(r.Context()), CSRF: h.csrfToken(w, r), Sim: h.Simulated || h.Simulator != nil, SimPay: h.Simulator != nil,
		Op: h.Operator != nil, Refunds: h.Refunds != nil && h.Payouts != nil, D: data, Lang: lang, principal: kassa.PrincipalFrom(r.Context())}
	for _, code := range Languages {
		q := r.URL.Query()
		q.Set("lang", code)
		v.Langs = append(v.Langs, langLink{Code: code, Name: i18n.Name(code), URL: r.URL.Path + "?" + q.Encode(), Current: code == lang})
	}
	if s := current(r.Context()); s != nil {
		v.User = s.user
	}
	if done := r.URL.Query().Get("done"); done != "" {
		if _, ok := strs["done."+done]; ok {
			v.Flash = msgIn(lang, "done."+done)
		}
	}
	var buf bytes.Buffer
	if err := tmpl.ExecuteTemplate(&buf, "layout.html", v); err != nil {
		h.log.Error("dashboard: render", "page", page, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// fail answers an error page with status and the string of key, in the
// reader's language.
func (h *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, key string) {
	h.failMessage(w, r, status, func(lang string) string { return msgIn(lang, key) })
}

// failMessage answers an error page with status and the message text
// gives in the page's language.
func (h *Dashboard) failMessage(w http.ResponseWriter, r *http.Request, status int, text func(lang string) string) {
	lang := h.lang(nil, r)
	h.renderIn(w, r, status, lang, h.pages[lang]["error"], "error", map[string]any{"Status": status, "Message": text(lang)})
}

func (h *Dashboard) notFound(w http.ResponseWriter, r *http.Request) {
	h.fail(w, r, http.StatusNotFound, "err.notfound")
}

// serverError answers err: a not-found error as 404, anything else as
// 500 with its cause logged and not shown.
func (h *Dashboard) serverError(w http.ResponseWriter, r *http.Request, err error) {
	switch kassa.ErrorCode(err) {
	case kassa.NotFound:
		h.notFound(w, r)
		return
	case kassa.Unavailable:
		h.failMessage(w, r, http.StatusServiceUnavailable, func(lang string) string { return errorText(lang, err) })
		return
	}
	h.log.Error("dashboard", "path", r.URL.Path, "err", err)
	h.fail(w, r, http.StatusInternalServerError, "err.internal")
}

// storeURL is the dashboard URL of the current store's page p.
func storeURL(st *kassa.Store, p string) string {
	return Prefix + "/stores/" + st.ID + p
}

// redirect answers 303 to the store's page p with a done notice.
func redirect(w http.ResponseWriter, r *http.Request, st *kassa.Store, p, done string) {
	u := storeURL(st, p)
	if done != "" {
		if strings.Contains(u, "?") {
			u += "&done=" + done
		} else {
			u += "?done=" + done
		}
	}
	http.Redirect(w, r, u, http.StatusSeeOther)
}

// fieldErrors turns a service error into messages for the form in
// r's language, or returns ok false for errors that are not the
// input's fault.
func fieldErrors(r *http.Request, err error) (string, bool) {
	switch kassa.ErrorCode(err) {
	case kassa.Invalid, kassa.Conflict, kassa.PaymentRequired, kassa.Unavailable, kassa.TooLarge:
	default:
		return "", false
	}
	return errorText(requestLang(r), err), true
}
