package http

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
	"github.com/kassapay/kassa/refund"
)

// claimForm posts a claim of pull payment id from the customer's page:
// no API key, a form body, from the page's own origin.
func (e *env) claimForm(id string, form url.Values, headers ...header) *httptest.ResponseRecorder {
	e.t.Helper()
	hs := append([]header{{"X-Api-Key", ""}, {"Content-Type", "application/x-www-form-urlencoded"}, {"Origin", "http://example.com"}}, headers...)
	return e.do("POST", "/pull-payments/"+id+"/claim", form.Encode(), hs...)
}

// payoutCount counts the payouts of the store.
func (e *env) payoutCount(store string) int {
	e.t.Helper()
	n := 0
	if err := e.db.Payouts(e.t.Context(), store, func(*kassa.Payout) error { n++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// TestClaimPage: the customer's claim page of a pull payment, reached
// by its id alone: it shows the store and what is left, takes a claim
// to a BOLT11 invoice (303 to the page following the payout), and
// follows that payout through its status endpoint to "paid" with its
// payment hash. A claim larger than what is left, a destination on
// another network, an expired invoice, a second claim of the spent pull
// payment and a cross-site post are 4xx, with nothing written.
func TestClaimPage(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	svc := refund.New(refund.Config{Reader: e.db, Payouts: e.db, Ledger: e.sys.Service, Rates: e.deps.Rates, Clock: e.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}})
	pp, err := svc.CreatePullPayment(ctx, "store_a", kassa.PullPaymentInput{Amount: decimal.NewFromInt(20_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	noKey := header{"X-Api-Key", ""}

	w := e.do("GET", "/pull-payments/"+pp.ID+"?lang=en", "", noKey)
	expectStatus(t, w, http.StatusOK)
	page := w.Body.String()
	for _, want := range []string{"Alice&#39;s Shop", i18n.Money("en", decimal.NewFromInt(20_000), kassa.SATS), `name="destination"`, pp.ID + `/claim`} {
		if !strings.Contains(page, want) {
			t.Errorf("claim page lacks %q", want)
		}
	}
	expectStatus(t, e.do("GET", "/pull-payments/pp_unknown0000000000", "", noKey), http.StatusNotFound)

	nothingWritten := func(what string) {
		t.Helper()
		if n := e.payoutCount("store_a"); n != 0 {
			t.Fatalf("%s: %d payouts written", what, n)
		}
		got, err := e.db.PullPayment(ctx, pp.ID)
		if err != nil || !got.Claimed.IsZero() {
			t.Fatalf("%s: pull payment %+v, %v", what, got, err)
		}
	}
	inv, err := e.node.CreateInvoice(ctx, 20_000_000, "refund", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	w = e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}, "amount": {"30000"}})
	expectStatus(t, w, http.StatusBadRequest)
	nothingWritten("a claim larger than what is left")
	w = e.claimForm(pp.ID, url.Values{"destination": {"bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"}})
	expectStatus(t, w, http.StatusBadRequest)
	if !strings.Contains(w.Body.String(), "another network") {
		t.Errorf("a destination on another network: %s", w.Body.String())
	}
	nothingWritten("a destination on another network")
	late, err := e.node.CreateInvoice(ctx, 20_000_000, "late", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(2 * time.Minute)
	expectStatus(t, e.claimForm(pp.ID, url.Values{"destination": {late.PaymentRequest}}), http.StatusBadRequest)
	nothingWritten("an expired invoice")
	expectStatus(t, e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}}, header{"Origin", "https://evil.example"}), http.StatusForbidden)
	expectStatus(t, e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}}, header{"Origin", ""}, header{"Sec-Fetch-Site", "cross-site"}), http.StatusForbidden)
	nothingWritten("a cross-site post")

	expectStatus(t, e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}}, header{"Origin", "null"}, header{"Sec-Fetch-Site", "cross-site"}), http.StatusForbidden)
	nothingWritten("a cross-site post")
	// The pages' no-referrer policy makes a browser's Origin "null".
	w = e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}}, header{"Origin", "null"}, header{"Sec-Fetch-Site", "same-origin"})
	expectStatus(t, w, http.StatusSeeOther)
	loc, err := url.Parse(w.Header().Get("Location"))
	if err != nil || loc.Path != "/pull-payments/"+pp.ID || !strings.HasPrefix(loc.Query().Get("payout"), "po_") {
		t.Fatalf("claim sent to %q", w.Header().Get("Location"))
	}
	poID := loc.Query().Get("payout")
	w = e.claimForm(pp.ID, url.Values{"destination": {inv.PaymentRequest}})
	expectStatus(t, w, http.StatusConflict)
	if n := e.payoutCount("store_a"); n != 1 {
		t.Fatalf("a second claim of the spent pull payment: %d payouts", n)
	}

	status := func() string {
		t.Helper()
		w := e.do("GET", "/pull-payments/"+pp.ID+"/payouts/"+poID+"/status", "", noKey)
		expectStatus(t, w, http.StatusOK)
		var s struct{ State, Key string }
		if err := json.Unmarshal(w.Body.Bytes(), &s); err != nil || s.Key == "" {
			t.Fatalf("status %s: %v", w.Body.String(), err)
		}
		return s.State
	}
	if s := status(); s != "waiting" {
		t.Fatalf("state after the claim = %q", s)
	}
	w = e.do("GET", "/pull-payments/"+pp.ID+"?lang=en&payout="+poID, "", noKey)
	expectStatus(t, w, http.StatusOK)
	if !strings.Contains(w.Body.String(), `id="live"`) || strings.Contains(w.Body.String(), `name="destination"`) {
		t.Errorf("the page after the claim does not follow the payout:\n%s", w.Body.String())
	}

	if _, err := e.sys.Service.TopUp(ctx, "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, "store_a", poID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Record(ctx, "store_a", poID, kassa.PayoutAttempt{PaymentRequest: inv.PaymentRequest, PaymentHash: inv.PaymentHash, At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != "waiting" {
		t.Fatalf("state in flight = %q", s)
	}
	if _, err := svc.Record(ctx, "store_a", poID, kassa.PayoutSucceeded{At: e.clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if s := status(); s != "paid" {
		t.Fatalf("state once paid = %q", s)
	}
	w = e.do("GET", "/pull-payments/"+pp.ID+"?lang=en&payout="+poID+"&part=live", "", noKey)
	expectStatus(t, w, http.StatusOK)
	if body := w.Body.String(); !strings.Contains(body, inv.PaymentHash) || !strings.Contains(body, `data-state="paid"`) {
		t.Errorf("the paid payout's live part lacks its proof:\n%s", body)
	}

	other, err := svc.CreatePullPayment(ctx, "store_a", kassa.PullPaymentInput{Amount: decimal.NewFromInt(1_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	expectStatus(t, e.do("GET", "/pull-payments/"+other.ID+"/payouts/"+poID+"/status", "", noKey), http.StatusNotFound)
}
