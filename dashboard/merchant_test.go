package dashboard

import (
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The tests of issue 22's dashboard items: each failed on the code
// before its fix.

// TestInvoiceShowsBuyerEmailAndRedirect: the invoice page shows the
// buyer's email and the redirect URL the invoice was made with.
func TestInvoiceShowsBuyerEmailAndRedirect(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5), HasAmount: true,
		Currency: kassa.EUR, BuyerEmail: "buyer@example.org", RedirectURL: "https://shop.example/thanks?o=9"})
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/invoices/" + inv.ID)
	for _, want := range []string{"buyer@example.org", "https://shop.example/thanks?o=9", msg("inv.buyer"), msg("inv.redirect")} {
		if !strings.Contains(body, htmlText(want)) {
			t.Errorf("the invoice page lacks %q", want)
		}
	}
}

// htmlText is s as html/template writes it in text.
func htmlText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&#34;", "'", "&#39;", "+", "&#43;").Replace(s)
}

// settle pays inv by Lightning and waits until it is Settled.
func (e *env) settle(inv *kassa.Invoice) {
	e.t.Helper()
	if _, err := e.sim.Pay(e.t.Context(), inv, kassa.MethodLightning, 0); err != nil {
		e.t.Fatal(err)
	}
	waitFor(e.t, "settled "+inv.ID, func() bool {
		got, err := e.db.Invoice(e.t.Context(), inv.ID)
		return err == nil && got.Status == kassa.InvoiceSettled
	})
}

var txNumber = regexp.MustCompile(`<tr class="tx"><td[^>]*>#?([0-9]+)</td>`)

// TestTransactionNumbersPerStore: a store's ledger lines are numbered
// from 1 in that store, in the list and the export, whatever other
// stores did before: the numbers reveal nothing of other stores' volume.
func TestTransactionNumbersPerStore(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	busy := c.createStore("Busy")
	for i := range 3 {
		inv, err := e.sys.Service.CreateInvoice(t.Context(), busy.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(int64(10 + i)), HasAmount: true, Currency: kassa.EUR})
		if err != nil {
			t.Fatal(err)
		}
		e.settle(inv)
		e.clock.Advance(time.Minute)
	}
	fresh := c.createStore("Fresh")
	for i := range 2 {
		inv, err := e.sys.Service.CreateInvoice(t.Context(), fresh.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(int64(20 + i)), HasAmount: true,
			Currency: kassa.EUR, OrderID: "order-" + string(rune('a'+i))})
		if err != nil {
			t.Fatal(err)
		}
		e.settle(inv)
		e.clock.Advance(time.Minute)
	}
	var lines int
	e.db.Transactions(t.Context(), fresh.ID, kassa.ListQuery{}, func(*kassa.Transaction) error { lines++; return nil })
	if lines < 2 {
		t.Fatalf("the fresh store has %d lines", lines)
	}
	_, body, _ := c.get("/dashboard/stores/" + fresh.ID + "/transactions")
	var got []string
	for _, m := range txNumber.FindAllStringSubmatch(body, -1) {
		got = append(got, m[1])
	}
	var want []string
	for n := lines; n >= 1; n-- {
		want = append(want, itoa(int64(n)))
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the list numbers the fresh store's lines %v, want %v", got, want)
	}
	// A page further on goes on counting down.
	_, body, _ = c.get("/dashboard/stores/" + fresh.ID + "/transactions?to=" + testNow.Format("2006-01-02"))
	if m := txNumber.FindStringSubmatch(body); m == nil || m[1] != itoa(int64(lines)) {
		t.Errorf("the date range's newest line is numbered %v, want %d", m, lines)
	}

	_, body, _ = c.get("/dashboard/stores/" + fresh.ID + "/transactions.csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, name := range rows[0] {
		if name == "number" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("the export has no number column: %v", rows[0])
	}
	got = got[:0]
	for _, row := range rows[1:] {
		got = append(got, row[col])
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("the export numbers the fresh store's lines %v, want %v", got, want)
	}
	for _, name := range rows[0] {
		if name == "id" {
			t.Error("the export still has the global id column")
		}
	}
}

// TestCSVOrderID: the export carries each line's order id, from the
// invoice's orderId or else its metadata.orderId (where the Coinsnap
// plugins put it).
func TestCSVOrderID(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	for _, req := range []*kassa.InvoiceRequest{
		{OrderID: "top-1"},
		{Metadata: json.RawMessage(`{"orderId":"meta-2","itemDesc":"Mug"}`)},
	} {
		req.Amount, req.HasAmount, req.Currency = decimal.NewFromInt(7), true, kassa.EUR
		inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		e.settle(inv)
	}
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/transactions.csv")
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := -1
	for i, name := range rows[0] {
		if name == "orderId" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("the export has no orderId column: %v", rows[0])
	}
	seen := map[string]int{}
	for _, row := range rows[1:] {
		seen[row[col]]++
	}
	if seen["top-1"] == 0 || seen["meta-2"] == 0 {
		t.Errorf("order ids in the export: %v", seen)
	}
}

// TestOperatorStoreHidden: the operator's own store, which top-ups are
// paid to, is not in the operator's store list.
func TestOperatorStoreHidden(t *testing.T) {
	e := newEnv(t)
	c, st, _, ids := newTopUp(t, e) // the first account is the operator
	inv, err := e.db.Invoice(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	opID := inv.StoreID // the top-up's invoice is the operator store's
	if _, err := e.db.Store(t.Context(), opID); err != nil {
		t.Fatalf("the operator store: %v", err)
	}
	_, body, _ := c.get("/dashboard/stores")
	if !strings.Contains(body, st.ID) {
		t.Fatalf("the list lacks the merchant's store: %s", body)
	}
	if strings.Contains(body, opID) || strings.Contains(body, "Kassa operator") {
		t.Errorf("the store list shows the operator's internal store %s", opID)
	}
}

// TestAmountTooLarge: a 20-digit amount is refused as too large, not as
// "must be a number", for invoices and pay links.
func TestAmountTooLarge(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/invoices/new")
	code, body, _ := c.post(base+"/invoices", url.Values{"amount": {"12345678901234567890"}, "currency": {"EUR"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, msg("err.toolarge")) || strings.Contains(body, "must be a") {
		t.Errorf("20-digit invoice amount: %d %s", code, errorOf(body))
	}
	c.get(base + "/paylinks")
	code, body, _ = c.post(base+"/paylinks", url.Values{"title": {"T"}, "amount": {"12345678901234567890"}, "currency": {"EUR"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, msg("err.toolarge")) || strings.Contains(body, "must be a") {
		t.Errorf("20-digit pay link amount: %d %s", code, errorOf(body))
	}
	// Positive control: a word is still not a number.
	code, body, _ = c.post(base+"/invoices", url.Values{"amount": {"twelve"}, "currency": {"EUR"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, msg("err.number")) {
		t.Errorf("a word as amount: %d %s", code, errorOf(body))
	}
}

var errorBox = regexp.MustCompile(`(?s)<p class="notice bad" role="alert" id="error">(.*?)</p>`)

// errorOf is the error message of a page, for test logs.
func errorOf(body string) string {
	if m := errorBox.FindStringSubmatch(body); m != nil {
		return m[1]
	}
	if len(body) > 300 {
		return body[:300]
	}
	return body
}

// TestWebhookURLErrorSaysWhatIsAccepted: where http URLs are accepted
// (kassa serve --dev, as the test env), a URL without a scheme or with
// another one is refused naming https and http, not asking for https.
func TestWebhookURLErrorSaysWhatIsAccepted(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/webhooks")
	for _, u := range []string{"ftp://127.0.0.1/hook", "/hook"} {
		code, body, _ := c.post(base+"/webhooks", url.Values{"url": {u}, "events": {"Settled"}, "enabled": {"on"}})
		m := errorOf(body)
		if code != http.StatusUnprocessableEntity || !strings.Contains(m, "http://") || !strings.Contains(m, "https://") {
			t.Errorf("webhook URL %q: %d %s", u, code, m)
		}
	}
}

// TestRedeliverWarnsOfSlimBody: where Redeliver is offered, the page says
// that it sends the slim body, without the invoice's metadata.
func TestRedeliverWarnsOfSlimBody(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	rec := &receiver{}
	srv := newReceiverServer(t, rec)
	c.get(base + "/webhooks")
	code, body, hdr := c.post(base+"/webhooks", url.Values{"url": {srv}, "events": {"New"}, "enabled": {"on"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create webhook: %d %s", code, body)
	}
	hookPath := strings.Split(hdr.Get("Location"), "?")[0]
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5), HasAmount: true, Currency: kassa.EUR,
		Metadata: json.RawMessage(`{"orderId":"o-1"}`)})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delivery", func() bool { return rec.count() >= 1 })
	for _, p := range []string{hookPath, base + "/invoices/" + inv.ID} {
		waitFor(t, "the delivery on "+p, func() bool {
			_, body, _ := c.get(p)
			return strings.Contains(body, msg("hook.redeliver"))
		})
		if _, body, _ := c.get(p); !strings.Contains(body, msg("hook.slim")) {
			t.Errorf("%s offers Redeliver without the note on the slim body", p)
		}
	}
}

// TestInvoiceSearch: the invoice list finds an invoice by its id, its
// order id (top-level or metadata.orderId) and the buyer's email, and
// shows only the matches.
func TestInvoiceSearch(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	mk := func(req *kassa.InvoiceRequest) *kassa.Invoice {
		req.Amount, req.HasAmount, req.Currency = decimal.NewFromInt(3), true, kassa.EUR
		inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, req)
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	top := mk(&kassa.InvoiceRequest{OrderID: "WC-1001"})
	meta := mk(&kassa.InvoiceRequest{Metadata: json.RawMessage(`{"orderId":"WC-2002"}`)})
	mail := mk(&kassa.InvoiceRequest{BuyerEmail: "Jane@Example.org"})
	other := mk(&kassa.InvoiceRequest{OrderID: "WC-3003", BuyerEmail: "bob@example.org"})
	all := []*kassa.Invoice{top, meta, mail, other}
	for q, want := range map[string]*kassa.Invoice{
		"WC-1001":          top,
		"WC-2002":          meta,
		"jane@example.org": mail,
		" " + other.ID:     other,
	} {
		_, body, _ := c.get("/dashboard/stores/" + st.ID + "/invoices?q=" + url.QueryEscape(q))
		for _, inv := range all {
			shown := strings.Contains(body, "/invoices/"+inv.ID+`"`)
			if shown != (inv == want) {
				t.Errorf("search %q: invoice %s shown %v", q, inv.ID, shown)
			}
		}
	}
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/invoices?q=nothing-like-it")
	if !strings.Contains(body, msg("inv.nomatch")) {
		t.Errorf("a search without matches: %s", errorOf(body))
	}
}

// TestPayLinkListsInvoices: the pay link's page lists the invoices made
// from it (and no other), and its status uses the API's words.
func TestPayLinkListsInvoices(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	link, err := e.sys.Service.CreatePaymentRequest(t.Context(), st.ID, &kassa.PaymentRequestInput{Title: "Mug", Amount: decimal.NewFromInt(9), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(3), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	first, err := e.sys.Service.PayPaymentRequest(t.Context(), st.ID, link.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.sys.Service.PayPaymentRequest(t.Context(), st.ID, link.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	e.settle(second)
	waitFor(t, "the link paid", func() bool {
		p, err := e.db.PaymentRequest(t.Context(), link.ID)
		return err == nil && p.PaidInvoiceID == second.ID
	})
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/paylinks/" + link.ID)
	for _, inv := range []*kassa.Invoice{first, second} {
		if !strings.Contains(body, "/invoices/"+inv.ID+`"`) {
			t.Errorf("the pay link's page does not list its invoice %s", inv.ID)
		}
	}
	if strings.Contains(body, "/invoices/"+stranger.ID+`"`) {
		t.Error("the pay link's page lists an invoice not made from it")
	}
	if !strings.Contains(body, ">"+kassa.PaymentRequestCompleted+"<") {
		t.Errorf("the paid link's status is not the API's %q", kassa.PaymentRequestCompleted)
	}
}

// TestRootLeadsBrowserToDashboard: a browser that opens the service's
// root is sent to the dashboard; an API client keeps its JSON 404.
func TestRootLeadsBrowserToDashboard(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	req, _ := http.NewRequest("GET", e.srv.URL+"/", nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	code, _, hdr := c.read(c.http.Do(req))
	if code != http.StatusSeeOther || hdr.Get("Location") != Prefix+"/" {
		t.Errorf("a browser at /: %d to %q", code, hdr.Get("Location"))
	}
	for _, accept := range []string{"", "application/json", "*/*"} {
		req, _ := http.NewRequest("GET", e.srv.URL+"/", nil)
		if accept != "" {
			req.Header.Set("Accept", accept)
		}
		code, body, hdr := c.read(c.http.Do(req))
		if code != http.StatusNotFound || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
			t.Errorf("an API client (Accept %q) at /: %d %s %s", accept, code, hdr.Get("Content-Type"), body)
		}
	}
}

// newStrings are the keys added for issue 22; each has German.
var newStrings = []string{"err.toolarge", "hook.slim", "inv.search", "inv.searchhint", "inv.nomatch", "link.invoices", "link.noinvoices",
	"tx.number", "done.redelivered", "inv.searchmore", "inv.buyer", "inv.redirect"}

func TestNewStringsInGerman(t *testing.T) {
	for _, k := range newStrings {
		if _, ok := strs[k]; !ok {
			t.Errorf("no English string %s", k)
		}
		if _, ok := german[k]; !ok {
			t.Errorf("no German string %s", k)
		}
	}
}

// newReceiverServer serves rec on loopback for the test and returns its URL.
func newReceiverServer(t *testing.T, rec *receiver) string {
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestMoneyAndTimesFormatted: the dashboard writes amounts and times with
// the one formatter of the pages (http/i18n): "€12.50", not "12.5 EUR";
// satoshis grouped; times in UTC with the zone named.
func TestMoneyAndTimesFormatted(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.RequireFromString("12.5"), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	e.settle(inv)
	inv, _ = e.db.Invoice(t.Context(), inv.ID)
	link, err := e.sys.Service.CreatePaymentRequest(t.Context(), st.ID, &kassa.PaymentRequestInput{Title: "Mug", Amount: decimal.RequireFromString("3"), HasAmount: true, Currency: kassa.USD})
	if err != nil {
		t.Fatal(err)
	}
	base := "/dashboard/stores/" + st.ID
	money := htmlText(i18n.Money("en", inv.InvoiceAmount, kassa.EUR)) // €12.50
	for p, want := range map[string][]string{
		base + "/invoices/" + inv.ID: {money, htmlText(i18n.Sats("en", inv.Amount)), htmlText(i18n.Time("en", inv.CreatedAt)),
			htmlText(i18n.Money("en", inv.ExchangeRate, kassa.EUR))},
		base + "/invoices":            {money, htmlText(i18n.Time("en", inv.CreatedAt))},
		base + "/transactions":        {htmlText(i18n.Sats("en", inv.Amount)), htmlText(i18n.Time("en", inv.CreatedAt))},
		base + "/paylinks":            {htmlText(i18n.Money("en", link.Amount, kassa.USD))},
		base + "/paylinks/" + link.ID: {htmlText(i18n.PayLinkStatus("en", kassa.PaymentRequestPending))},
		"/dashboard/stores":           {htmlText(i18n.Sats("en", 0))},
	} {
		_, body, _ := c.get(p)
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", p, w)
			}
		}
		if strings.Contains(body, "12.5 EUR") {
			t.Errorf("%s still writes 12.5 EUR", p)
		}
	}
	if !strings.Contains(i18n.Time("en", inv.CreatedAt), "UTC") {
		t.Error("times do not name their zone")
	}
}

// TestPaidPayLinkIsReadOnly: a paid pay link's page has no edit form but
// says why; a save that reaches a paid or archived link anyway answers in
// the dashboard's words, and no page calls a pay link a payment request.
func TestPaidPayLinkIsReadOnly(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID + "/paylinks/"
	link, err := e.sys.Service.CreatePaymentRequest(t.Context(), st.ID, &kassa.PaymentRequestInput{Title: "Mug", Amount: decimal.NewFromInt(9), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := e.sys.Service.PayPaymentRequest(t.Context(), st.ID, link.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	e.settle(inv)
	waitFor(t, "the link paid", func() bool {
		p, err := e.db.PaymentRequest(t.Context(), link.ID)
		return err == nil && p.PaidInvoiceID == inv.ID
	})
	noPaymentRequest := func(what, body string) {
		t.Helper()
		if strings.Contains(strings.ToLower(body), "payment request") {
			t.Errorf("%s calls the pay link a payment request", what)
		}
	}
	_, body, _ := c.get(base + link.ID)
	if strings.Contains(body, `action="`+base+link.ID+`"`) || strings.Contains(body, `name="title"`) {
		t.Error("the paid pay link's page has an edit form")
	}
	if !strings.Contains(body, "This pay link has been paid, so it can no longer change") {
		t.Error("the paid pay link's page does not say why it cannot be edited")
	}
	noPaymentRequest("the paid link's page", body)

	code, body, _ := c.post(base+link.ID, url.Values{"title": {"Big mug"}, "amount": {"12"}, "currency": {"EUR"}})
	if code != http.StatusConflict || !strings.Contains(body, "This pay link has been paid, so it can no longer change") {
		t.Errorf("saving a paid pay link: %d, without the dashboard's words", code)
	}
	noPaymentRequest("saving a paid link", body)

	open, err := e.sys.Service.CreatePaymentRequest(t.Context(), st.ID, &kassa.PaymentRequestInput{Title: "Cup", Amount: decimal.NewFromInt(4), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	c.get(base + open.ID)
	if err := e.sys.Service.ArchivePaymentRequest(t.Context(), st.ID, open.ID); err != nil {
		t.Fatal(err)
	}
	code, body, _ = c.post(base+open.ID, url.Values{"title": {"Big cup"}, "amount": {"5"}, "currency": {"EUR"}})
	if code != http.StatusConflict || !strings.Contains(body, "This pay link is archived, so it can no longer change") {
		t.Errorf("saving an archived pay link: %d, without the dashboard's words", code)
	}
	noPaymentRequest("saving an archived link", body)
	if _, body, _ = c.get(base + open.ID); !strings.Contains(body, "This pay link is archived, so it can no longer change") {
		t.Error("the archived pay link's page does not say why it cannot be edited")
	}
}

// TestOnchainMethodName: the dashboard names the on-chain method as the
// checkout's receipt does, "On-chain", not the API's "BTC".
func TestOnchainMethodName(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sim.Pay(t.Context(), inv, kassa.MethodOnchain, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the payment seen", func() bool {
		got, err := e.db.Invoice(t.Context(), inv.ID)
		return err == nil && len(got.Payments) > 0
	})
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/invoices/" + inv.ID)
	label := `data-label="` + msg("inv.method") + `">`
	if !strings.Contains(body, label+i18n.T("en", "tab.onchain")) || strings.Contains(body, label+"BTC") {
		t.Errorf("the payment's method is not named %q", i18n.T("en", "tab.onchain"))
	}
}
