package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/refund"
)

// The merchant's side of refunds (issue 39): the Refund button and form
// of an invoice, and the Payouts page, against the real actors.

// refundEnv is a signed-in merchant with a store and an invoice of 10 EUR
// (20,000 sat at the test rate), settled when paid is set.
func refundEnv(t *testing.T, paid bool) (*env, *client, *kassa.Store, *kassa.Invoice) {
	t.Helper()
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	if paid {
		e.settle(inv)
	}
	return e, c, st, inv
}

// pullPayments returns the store's pull payments as stored.
func (e *env) pullPayments(storeID string) []*kassa.PullPayment {
	e.t.Helper()
	var out []*kassa.PullPayment
	if err := e.db.PullPayments(e.t.Context(), storeID, func(p *kassa.PullPayment) error {
		out = append(out, p)
		return nil
	}); err != nil {
		e.t.Fatal(err)
	}
	return out
}

// TestRefundFromTheInvoicePage: a settled invoice's page offers Refund;
// its form makes the pull payment through the refund service and shows
// the claim link to give the customer.
func TestRefundFromTheInvoicePage(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	_, body, _ := c.get(base + "/invoices/" + inv.ID)
	if !strings.Contains(body, base+"/invoices/"+inv.ID+"/refund") {
		t.Fatalf("a settled invoice's page has no Refund button:\n%s", body)
	}
	code, body, _ := c.get(base + "/invoices/" + inv.ID + "/refund")
	if code != http.StatusOK {
		t.Fatalf("refund form: %d %s", code, body)
	}
	for _, choice := range []string{"RateThen", "CurrentRate", "OverpaidAmount", "Custom", "subtractPercentage"} {
		if !strings.Contains(body, choice) {
			t.Errorf("the refund form lacks %s", choice)
		}
	}
	code, body, hdr := c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"RateThen"}, "subtractPercentage": {"10"}, "description": {"Broken cup"}})
	if code != http.StatusSeeOther {
		t.Fatalf("refund: %d %s", code, body)
	}
	pps := e.pullPayments(st.ID)
	if len(pps) != 1 || pps[0].InvoiceID != inv.ID || pps[0].Currency != kassa.SATS || !pps[0].Amount.Equal(decimal.NewFromInt(18000)) {
		t.Fatalf("pull payments = %+v, want one of 18000 SATS (20000 less 10%%)", pps)
	}
	if want := base + "/pull-payments/" + pps[0].ID + "?done=refunded"; hdr.Get("Location") != want {
		t.Fatalf("refund went to %s, want %s", hdr.Get("Location"), want)
	}
	code, body, _ = c.get(hdr.Get("Location"))
	link := e.dash.PublicURL + "/pull-payments/" + pps[0].ID
	if code != http.StatusOK || !strings.Contains(body, link) || !strings.Contains(body, "Broken cup") {
		t.Fatalf("the refund page lacks the claim link %s: %d\n%s", link, code, body)
	}
	// Today's fiat amount is the invoice's price in EUR.
	if code, body, _ = c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"CurrentRate"}}); code != http.StatusSeeOther {
		t.Fatalf("refund at today's rate: %d %s", code, body)
	}
	pps = e.pullPayments(st.ID)
	if len(pps) != 2 {
		t.Fatalf("pull payments = %+v, want two", pps)
	}
	if eur := pps[0]; eur.Currency != kassa.EUR && pps[1].Currency == kassa.EUR {
		pps[0], pps[1] = pps[1], eur
	}
	if pps[0].Currency != kassa.EUR || !pps[0].Amount.Equal(decimal.NewFromInt(10)) {
		t.Fatalf("pull payments = %+v %+v, want one of 10 EUR", *pps[0], *pps[1])
	}
}

// TestRefundFormBadInput: a refund of an unpaid invoice, a custom amount
// above what was paid, and amounts that are not numbers are refused with
// a clear message, and nothing is written.
func TestRefundFormBadInput(t *testing.T) {
	e, c, st, unpaid := refundEnv(t, false)
	base := "/dashboard/stores/" + st.ID
	_, body, _ := c.get(base + "/invoices/" + unpaid.ID)
	if strings.Contains(body, "/refund\"") {
		t.Errorf("an unpaid invoice's page offers a refund")
	}
	notPaid := htmlText(kassa.ErrorMessage(kassa.ErrInvoiceNotPaid))
	if code, body, _ := c.get(base + "/invoices/" + unpaid.ID + "/refund"); code != http.StatusConflict || !strings.Contains(body, notPaid) {
		t.Errorf("refund form of an unpaid invoice: %d, want 409 with %q\n%s", code, notPaid, body)
	}
	c.get(base + "/invoices/" + unpaid.ID)
	if code, body, _ := c.post(base+"/invoices/"+unpaid.ID+"/refund", url.Values{"choice": {"RateThen"}}); code != http.StatusConflict || !strings.Contains(body, notPaid) {
		t.Errorf("refund of an unpaid invoice: %d, want 409 with %q\n%s", code, notPaid, body)
	}

	paid, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	e.settle(paid)
	path := base + "/invoices/" + paid.ID + "/refund"
	for _, tc := range []struct {
		name string
		form url.Values
		want string
	}{
		{"sats above paid", url.Values{"choice": {"Custom"}, "customAmount": {"20001"}, "customCurrency": {"SATS"}}, "20,000 sats"},
		{"fiat above paid", url.Values{"choice": {"Custom"}, "customAmount": {"10.01"}, "customCurrency": {"EUR"}}, "€10.00"},
		{"not a number", url.Values{"choice": {"Custom"}, "customAmount": {"ten"}, "customCurrency": {"EUR"}}, msg("err.number")},
		{"percentage", url.Values{"choice": {"RateThen"}, "subtractPercentage": {"120"}}, "between 0 and 100"},
		{"not overpaid", url.Values{"choice": {"OverpaidAmount"}}, htmlText(kassa.ErrorMessage(kassa.ErrInvoiceNotOverpaid))},
	} {
		c.get(path)
		code, body, _ := c.post(path, tc.form)
		if code < 400 || code >= 500 || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d, want a 4xx with %q\n%s", tc.name, code, tc.want, body)
		}
	}
	if pps := e.pullPayments(st.ID); len(pps) != 0 {
		t.Errorf("refused refunds wrote %+v", pps)
	}
	// A refund without the form's CSRF token is refused.
	if code, _, _ := c.post(path, url.Values{"choice": {"RateThen"}, "csrf": {"forged"}}); code != http.StatusForbidden {
		t.Errorf("refund with a forged CSRF token: %d, want 403", code)
	}
	if pps := e.pullPayments(st.ID); len(pps) != 0 {
		t.Errorf("a forged refund wrote %+v", pps)
	}
}

// TestPayoutsPage: the store's payouts with their state, amount and
// destination; an approval the prepaid balance does not cover says so
// and how to top up, and changes nothing; cancel and mark paid go
// through the refund service.
func TestPayoutsPage(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/invoices/" + inv.ID + "/refund")
	if code, body, _ := c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"RateThen"}}); code != http.StatusSeeOther {
		t.Fatalf("refund: %d %s", code, body)
	}
	pp := e.pullPayments(st.ID)[0]
	// The customer claims half, twice (the claim page is another's).
	var ids []string
	for range 2 {
		p, err := e.dash.Refunds.Claim(t.Context(), pp.ID, "alice@example.com", decimal.NewFromInt(10000))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, p.ID)
	}
	code, body, _ := c.get(base + "/payouts")
	if code != http.StatusOK {
		t.Fatalf("payouts page: %d %s", code, body)
	}
	for _, want := range []string{ids[0], ids[1], "alice@example.com", "AwaitingApproval", "10,000 sats", base + "/payouts/" + ids[0] + "/approve"} {
		if !strings.Contains(body, want) {
			t.Errorf("the payouts page lacks %q", want)
		}
	}
	// The store's balance is its settlement fee below zero: approval is
	// refused with the domain's reason and the way to top up.
	code, body, _ = c.post(base+"/payouts/"+ids[0]+"/approve", nil)
	if code != http.StatusPaymentRequired || !strings.Contains(body, "top up the balance to approve it") || !strings.Contains(body, base+"/balance") {
		t.Fatalf("approve above the balance: %d, want 402 saying how to top up\n%s", code, body)
	}
	if p, err := e.db.Payout(t.Context(), ids[0]); err != nil || p.State != kassa.PayoutAwaitingApproval || p.Debited != 0 {
		t.Fatalf("after a refused approval: %+v %v", p, err)
	}
	// Topped up, the approval debits the balance by the amount and the
	// fee limit; cancelled, the payout gives it all back.
	c.get(base + "/balance")
	if code, body, _ := c.post(base+"/balance/topup", url.Values{"amount": {"25000"}}); code != http.StatusSeeOther {
		t.Fatalf("top up: %d %s", code, body)
	}
	tops, err := e.dash.TopUps.List(t.Context(), st.ID)
	if err != nil || len(tops) != 1 {
		t.Fatalf("top-ups = %v, %v", tops, err)
	}
	top, err := e.db.Invoice(t.Context(), tops[0].InvoiceID)
	if err != nil {
		t.Fatal(err)
	}
	e.settle(top)
	before := kassa.Sats(25_000 - 200)
	waitFor(t, "the top-up to be credited", func() bool {
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == before
	})
	c.get(base + "/payouts")
	code, body, hdr := c.post(base+"/payouts/"+ids[0]+"/approve", nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != base+"/payouts?done=payoutapproved" {
		t.Fatalf("approve: %d %s %s", code, hdr.Get("Location"), body)
	}
	p, err := e.db.Payout(t.Context(), ids[0])
	if err != nil || p.State != kassa.PayoutApproved || p.Debited != 10_000+p.FeeLimit {
		t.Fatalf("approved payout: %+v %v", p, err)
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != before-p.Debited {
		t.Fatalf("balance after approval %d, want %d", bal, before-p.Debited)
	}
	_, body, _ = c.get(base + "/payouts?done=payoutapproved")
	if !strings.Contains(body, msg("done.payoutapproved")) || !strings.Contains(body, "Approved") {
		t.Errorf("the payouts page after approval lacks its notice or state")
	}
	code, body, hdr = c.post(base+"/payouts/"+ids[0]+"/cancel", nil)
	if code != http.StatusSeeOther || hdr.Get("Location") != base+"/payouts?done=payoutcancelled" {
		t.Fatalf("cancel: %d %s %s", code, hdr.Get("Location"), body)
	}
	c.get(base + "/payouts")
	if code, body, _ = c.post(base+"/payouts/"+ids[1]+"/mark-paid", nil); code != http.StatusSeeOther {
		t.Fatalf("mark paid: %d %s", code, body)
	}
	if p, _ := e.db.Payout(t.Context(), ids[0]); p.State != kassa.PayoutCancelled {
		t.Errorf("cancelled payout: %v", p.State)
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != before {
		t.Errorf("balance after the cancel %d, want %d back", bal, before)
	}
	if p, _ := e.db.Payout(t.Context(), ids[1]); p.State != kassa.PayoutCompleted || !p.MarkedPaid {
		t.Errorf("marked-paid payout: %v %v", p.State, p.MarkedPaid)
	}
	// A final payout cannot be cancelled: the domain's reason, shown.
	c.get(base + "/payouts") // the page, as a merchant sees it before the click
	code, body, _ = c.post(base+"/payouts/"+ids[1]+"/cancel", nil)
	if code != http.StatusConflict || !strings.Contains(body, htmlText(kassa.ErrorMessage(kassa.ErrPayoutFinal))) {
		t.Errorf("cancel of a completed payout: %d\n%s", code, body)
	}
	// The merchant's other store does not reach this store's payouts.
	shop2 := c.createStore("Other")
	c.get("/dashboard/stores/" + shop2.ID + "/payouts")
	if code, _, _ := c.post("/dashboard/stores/"+shop2.ID+"/payouts/"+ids[0]+"/approve", nil); code != http.StatusNotFound {
		t.Errorf("approve another store's payout: %d, want 404", code)
	}
	if _, body, _ := c.get("/dashboard/stores/" + shop2.ID + "/payouts"); !strings.Contains(body, msg("po.none")) || !strings.Contains(body, msg("nav.payouts")) {
		t.Errorf("the other store's payouts page is not empty, or lacks its menu entry")
	}
	// Another store's merchant sees none of it.
	other := e.client()
	other.signup("b@example.com")
	if code, _, _ := other.get(base + "/payouts"); code != http.StatusNotFound {
		t.Errorf("another account's payouts page: %d, want 404", code)
	}
}

// TestRefundPagesInEveryLanguage: the refund form, a refund's page and
// the payouts page have all their strings in every dashboard language,
// and the refused custom amount says so in the page's language.
func TestRefundPagesInEveryLanguage(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/invoices/" + inv.ID + "/refund")
	if code, body, _ := c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"RateThen"}}); code != http.StatusSeeOther {
		t.Fatalf("refund: %d %s", code, body)
	}
	pp := e.pullPayments(st.ID)[0]
	if _, err := e.dash.Refunds.Claim(t.Context(), pp.ID, "alice@example.com", decimal.Zero); err != nil {
		t.Fatal(err)
	}
	for _, lang := range Languages {
		for _, p := range []string{"/invoices/" + inv.ID, "/invoices/" + inv.ID + "/refund", "/pull-payments/" + pp.ID, "/payouts"} {
			code, body := c.getLang(base+p, lang)
			if code != http.StatusOK || missingString.MatchString(body) {
				t.Errorf("%s %s: %d, missing %v", lang, p, code, missingString.FindAllString(body, -1))
			}
		}
		c.getLang(base+"/invoices/"+inv.ID+"/refund", lang)
		code, body := c.postLang(base+"/invoices/"+inv.ID+"/refund", lang, url.Values{"csrf": {c.csrf}, "choice": {"Custom"}, "customAmount": {"30000"}, "customCurrency": {"SATS"}})
		want := strings.SplitN(msgIn(lang, "err.refundabove"), " (", 2)[0]
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, htmlText(want)) {
			t.Errorf("%s: custom refund above paid: %d, want 422 with %q", lang, code, want)
		}
	}
}

// TestPayoutsPageShowsWhyAPayoutFailed: a payout whose payment failed
// (recorded as the sender records it) shows Failed and the reason on the
// Payouts page, and its debit is back on the balance.
func TestPayoutsPageShowsWhyAPayoutFailed(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	svc := e.dash.Refunds.(*refund.Service)
	pp, err := svc.RefundInvoice(t.Context(), st.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		t.Fatal(err)
	}
	p, err := svc.Claim(t.Context(), pp.ID, "alice@example.com", decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sys.Service.TopUp(t.Context(), st.ID, 50_000, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := e.db.Balance(t.Context(), st.ID)
	if _, err := svc.Approve(t.Context(), st.ID, p.ID); err != nil {
		t.Fatal(err)
	}
	const reason = "no route to the destination within the fee limit"
	if _, err := svc.Record(t.Context(), st.ID, p.ID, kassa.PayoutPaymentFailed{Reason: reason, At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != before {
		t.Errorf("balance after the failure %d, want %d back", bal, before)
	}
	code, body, _ := c.get(base + "/payouts")
	if code != http.StatusOK || !strings.Contains(body, "Failed") || !strings.Contains(body, reason) {
		t.Errorf("payouts page: %d, want Failed and %q\n%s", code, reason, body)
	}
}

// TestRefundAutoApproveSetting: the store settings set the amount up to
// which refund payouts are approved without the merchant; a claim
// within it is approved at once, one above waits; a limit that is not a
// whole number of satoshis, or negative, is refused and nothing changes.
func TestRefundAutoApproveSetting(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	save := func(limit string) (int, string) {
		c.get(base + "/")
		code, body, _ := c.post(base+"/settings", url.Values{"name": {"Shop"}, "currency": {"EUR"}, "confirmations": {"1"}, "refundAutoApproveMax": {limit}})
		return code, body
	}
	for _, bad := range []string{"1.5", "-1", "lots"} {
		if code, body := save(bad); code != http.StatusUnprocessableEntity || !strings.Contains(body, "refundAutoApproveMax") {
			t.Errorf("limit %q: %d, want 422 naming the field", bad, code)
		}
	}
	if got, _ := e.db.Store(t.Context(), st.ID); got.RefundAutoApproveMax != 0 {
		t.Fatalf("a refused limit was stored: %d", got.RefundAutoApproveMax)
	}
	if code, body := save("5000"); code != http.StatusSeeOther {
		t.Fatalf("save the limit: %d %s", code, body)
	}
	if _, body, _ := c.get(base + "/"); !strings.Contains(body, `name="refundAutoApproveMax" value="5000"`) || !strings.Contains(body, htmlText(msg("settings.refundauto"))) {
		t.Error("the settings page does not show the limit and its explanation")
	}
	if _, err := e.sys.Service.TopUp(t.Context(), st.ID, 50_000, ""); err != nil {
		t.Fatal(err)
	}
	pp, err := e.dash.Refunds.RefundInvoice(t.Context(), st.ID, inv.ID, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		t.Fatal(err)
	}
	if p, err := e.dash.Refunds.Claim(t.Context(), pp.ID, "alice@example.com", decimal.NewFromInt(5000)); err != nil || p.State != kassa.PayoutApproved {
		t.Fatalf("claim within the limit: %+v %v, want Approved", p, err)
	}
	if p, err := e.dash.Refunds.Claim(t.Context(), pp.ID, "alice@example.com", decimal.NewFromInt(5001)); err != nil || p.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("claim above the limit: %+v %v, want AwaitingApproval", p, err)
	}
}
