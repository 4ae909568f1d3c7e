package dashboard

import (
	"errors"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// germanDomainText checks that the English domain message en has a
// German translation and that body shows it, not en.
func germanDomainText(t *testing.T, what, body, en string) {
	t.Helper()
	de := domainText("de", en)
	if de == en {
		t.Errorf("%s: %q has no German translation", what, en)
	}
	if text := html.UnescapeString(body); !strings.Contains(text, de) || strings.Contains(text, en) {
		t.Errorf("%s: the German page lacks %q or shows the English %q:\n%.900s", what, de, en, body)
	}
}

// TestDomainErrorsInGerman: what the domain refuses reads German on a
// German dashboard: a store setting (an unknown currency, a bad
// Lightning address, each field's message after its field; the other
// languages' pages too), an authorize request with an unknown
// permission, a payout approval above the prepaid balance. The service's error for the same
// input, which the APIs answer, stays English.
func TestDomainErrorsInGerman(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	c.get("/dashboard/stores?lang=de")

	c.get(base + "/")
	code, body, _ := c.post(base+"/settings", url.Values{"name": {"Shop"}, "currency": {"XYZ"},
		"confirmations": {"1"}, "lightningAddress": {"al!ce@wallet.example"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, `<html lang="de">`) {
		t.Fatalf("bad settings in German: %d\n%.600s", code, body)
	}
	// The service refuses the same input with English field messages.
	var ke *kassa.Error
	_, err := e.sys.Service.UpdateStore(t.Context(), st.ID, kassa.StoreUpdate{Name: "Shop", Currency: "XYZ",
		ConfirmationsRequired: 1, LightningAddress: "al!ce@wallet.example"})
	if !errors.As(err, &ke) || len(ke.Fields) < 2 {
		t.Fatalf("the domain's refusal of the same settings: %v", err)
	}
	for _, f := range ke.Fields {
		if domainText("en", f.Message) != f.Message {
			t.Errorf("English %s message %q changed", f.Field, f.Message)
		}
		germanDomainText(t, "settings "+f.Field, body, f.Message)
		if !strings.Contains(html.UnescapeString(body), f.Field+": "+domainText("de", f.Message)) {
			t.Errorf("settings: %s's German message does not follow its field", f.Field)
		}
	}

	// The other languages say the same in theirs.
	for _, lang := range Languages[1:] {
		c.get("/dashboard/stores?lang=" + lang)
		c.get(base + "/")
		_, body, _ := c.post(base+"/settings", url.Values{"name": {"Shop"}, "currency": {"XYZ"},
			"confirmations": {"1"}, "lightningAddress": {"al!ce@wallet.example"}})
		for _, f := range ke.Fields {
			if want := f.Field + ": " + domainText(lang, f.Message); want == f.Field+": "+f.Message || !strings.Contains(html.UnescapeString(body), want) {
				t.Errorf("%s: the settings page lacks %q", lang, want)
			}
		}
	}
	c.get("/dashboard/stores?lang=de")

	// An authorize request the domain refuses (kassa.ParsePermissions).
	code, body, _ = c.get("/dashboard/api-keys/authorize?" + authorizeQuery([]string{"btcpay.store.cansteal"}, pluginCallback))
	_, perr := kassa.ParsePermissions([]string{"btcpay.store.cansteal"})
	if code != http.StatusBadRequest || perr == nil {
		t.Fatalf("authorize an unknown permission: %d %v", code, perr)
	}
	germanDomainText(t, "authorize", body, kassa.ErrorMessage(perr))

	// An approval above the prepaid balance (refund's PaymentRequired).
	c.get(base + "/invoices/" + inv.ID + "/refund")
	if code, body, _ := c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"RateThen"}}); code != http.StatusSeeOther {
		t.Fatalf("refund: %d %s", code, body)
	}
	pp := e.pullPayments(st.ID)[0]
	p, err := e.dash.Refunds.Claim(t.Context(), pp.ID, "alice@example.com", decimal.NewFromInt(10000))
	if err != nil {
		t.Fatal(err)
	}
	c.get(base + "/payouts")
	code, body, _ = c.post(base+"/payouts/"+p.ID+"/approve", nil)
	if code != http.StatusPaymentRequired {
		t.Fatalf("approve above the balance: %d\n%.600s", code, body)
	}
	en := regexp.MustCompile(`the store's prepaid balance available for refunds is -?\d+ sat; the payout needs \d+ sat and up to \d+ sat of network fees: top up the balance to approve it`)
	_, err = e.dash.Refunds.Approve(t.Context(), st.ID, p.ID)
	if msg := kassa.ErrorMessage(err); !en.MatchString(msg) {
		t.Fatalf("the service's refusal of the approval: %q, want it in English", msg)
	} else {
		germanDomainText(t, "approval", body, msg)
	}
}

// errSameAsEnglish are domain messages whose translation may equal the
// English format, by language.
var errSameAsEnglish = map[string][]string{}

// TestDomainMessagesTranslated: every message the domain can show on a
// page (domainMessages reads them from the source) has a translation in
// every dashboard language with the English verbs in their order, that
// is not the English (errSameAsEnglish aside); no catalogue keeps a
// message the source no longer makes; and each message, made from its
// format, is read back by that format and no other.
func TestDomainMessagesTranslated(t *testing.T) {
	msgs, odd := domainMessages(t, domainMessageDirs...)
	for _, o := range odd {
		t.Errorf("%s: a message that is no literal format; make it one (fmt.Sprintf) so that the catalogue can hold it", o)
	}
	formats := map[string]string{}
	for _, m := range msgs {
		formats[m.format] = m.pos
	}
	if len(formats) < 100 {
		t.Fatalf("found %d domain messages: the collector misses them", len(formats))
	}
	for _, lang := range Languages[1:] {
		c := errorCatalogues[lang]
		for en, pos := range formats {
			s, ok := c[en]
			if !ok {
				t.Errorf("%s: %s: no translation of %q", lang, pos, en)
				continue
			}
			if a, b := fmtVerb.FindAllString(en, -1), fmtVerb.FindAllString(s, -1); strings.Join(a, " ") != strings.Join(b, " ") {
				t.Errorf("%s %q: verbs %v, English %v", lang, en, b, a)
			}
			if s == en && !slices.Contains(errSameAsEnglish[en], lang) {
				t.Errorf("%s %q: the translation is the English", lang, en)
			}
		}
		for en := range c {
			if _, ok := formats[en]; !ok {
				t.Errorf("%s: %q is made nowhere in the source", lang, en)
			}
		}
	}
	for _, f := range errorFormats() {
		sample := fillFormat(f.format, sampleArgs(f.format))
		for _, g := range errorFormats() {
			if g.re.MatchString(sample) {
				if g.format != f.format {
					t.Errorf("%q, made from %q, is read by %q first", sample, f.format, g.format)
				}
				break
			}
		}
	}
}

// sampleArgs are arguments for format's verbs as fmt prints them.
func sampleArgs(format string) []string {
	var args []string
	for _, v := range fmtVerb.FindAllString(format, -1) {
		switch v[len(v)-1] {
		case '%':
		case 'd':
			args = append(args, "42")
		case 'q':
			args = append(args, `"sample"`)
		default:
			args = append(args, "sample")
		}
	}
	return args
}

// TestDomainTextReadsArguments: a translated message carries the
// English message's arguments, %% and a quoted one included, and an
// unknown message or language stays as it is.
func TestDomainTextReadsArguments(t *testing.T) {
	if got := fillFormat("a %d b %q c %s %%", []string{"7", `"x y"`, "z"}); got != `a 7 b "x y" c z %` {
		t.Errorf("fillFormat: %q", got)
	}
	if got := domainText("de", "no format makes this"); got != "no format makes this" {
		t.Errorf("an unknown message: %q", got)
	}
	if got := domainText("xx", "must be between 0 and 100"); got != "must be between 0 and 100" {
		t.Errorf("an unknown language: %q", got)
	}
	f := compileFormat(`unknown currency %q: %d left (%s)`)
	m := f.re.FindStringSubmatch(`unknown currency "X\"Y": -3 left (a (b))`)
	if len(m) != 4 || m[1] != `"X\"Y"` || m[2] != "-3" || m[3] != "a (b)" {
		t.Errorf("arguments read back: %q", m)
	}
}
