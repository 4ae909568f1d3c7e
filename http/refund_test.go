package http

import (
	"net/http"
	"strconv"
	"testing"

	"github.com/kassapay/kassa"
)

// TestRefundRoutes: a settled invoice refunded through the API: the
// pull payment, a claim to a Lightning address, an approval the
// prepaid balance does not cover (402), a top-up, the approval that
// debits it, the payouts listed, and a cancel that gives it back.
// Every exchange is checked against the OpenAPI document.
func TestRefundRoutes(t *testing.T) {
	e := newEnv(t)
	refunds := header{"X-Api-Key", e.refundKey("store_a")}
	inv := e.seedInvoice("store_a", testNow, `{"amount": 10, "currency": "EUR"}`)
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen"}`, refunds),
		http.StatusConflict, kassa.Conflict, "no payment")
	if _, err := e.node.Pay(t.Context(), inv.LightningInvoice, inv.Amount.MSat()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the invoice to settle", func() bool { return e.invoice(inv.ID).Status == kassa.InvoiceSettled })

	w := e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen", "subtractPercentage": "10"}`, refunds)
	expectStatus(t, w, http.StatusOK)
	pp := decode[pullPaymentRecord](t, w)
	want := inv.Amount * 9 / 10
	if pp.Currency != kassa.SATS || string(pp.Amount) != strconv.FormatInt(int64(want), 10) || pp.InvoiceID != inv.ID {
		t.Fatalf("pull payment %+v, want %d SATS", pp, want)
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_b/pull-payments/"+pp.ID, "", header{"X-Api-Key", e.refundKey("store_b")}), http.StatusNotFound, kassa.NotFound)

	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"}`, refunds)
	expectError(t, w, http.StatusBadRequest, kassa.Invalid, "another network")
	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example"}`, refunds)
	expectStatus(t, w, http.StatusOK)
	po := decode[payoutRecord](t, w)
	if po.State != "AwaitingApproval" || po.DestinationKind != "LNURL" || po.Amount != kassa.Sats(want) {
		t.Fatalf("payout %+v", po)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example"}`, refunds),
		http.StatusConflict, kassa.Conflict, "fully claimed")

	expectError(t, e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/approve", "", refunds), http.StatusPaymentRequired, kassa.PaymentRequired)
	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := e.db.Balance(t.Context(), "store_a")
	w = e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/approve", "", refunds)
	expectStatus(t, w, http.StatusOK)
	approved := decode[payoutRecord](t, w)
	if approved.State != "Approved" {
		t.Fatalf("approved payout %+v", approved)
	}
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before-approved.Amount-approved.FeeLimit {
		t.Fatalf("balance %d after approval, want %d", after, before-approved.Amount-approved.FeeLimit)
	}
	list := decode[[]payoutRecord](t, e.do("GET", "/api/v1/stores/store_a/payouts", "", refunds))
	if len(list) != 1 || list[0].ID != po.ID {
		t.Fatalf("payouts %+v", list)
	}
	pps := decode[[]pullPaymentRecord](t, e.do("GET", "/api/v1/stores/store_a/pull-payments", "", refunds))
	if len(pps) != 1 || pps[0].Left != "0" {
		t.Fatalf("pull payments %+v", pps)
	}
	w = e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/cancel", "", refunds)
	expectStatus(t, w, http.StatusOK)
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before {
		t.Fatalf("balance %d after cancel, want %d", after, before)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/mark-paid", "", refunds), http.StatusConflict, kassa.Conflict)
	got := decode[payoutRecord](t, e.do("GET", "/api/v1/stores/store_a/payouts/"+po.ID, "", refunds))
	if got.State != "Cancelled" {
		t.Fatalf("payout after cancel %+v", got)
	}

	w = e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": "0.0001", "currency": "BTC", "description": "goodwill"}`, refunds)
	expectStatus(t, w, http.StatusOK)
	if created := decode[pullPaymentRecord](t, w); created.Currency != kassa.SATS || created.Amount != "10000" {
		t.Fatalf("created pull payment %+v", created)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": "1.5"}`, refunds), http.StatusBadRequest, kassa.Invalid)
}

// TestRefundCreatesAreIdempotent: a refund, a pull payment or a claim
// sent again with the same Idempotency-Key (a shop plugin's retry) is
// answered with the first one's record and makes nothing more: a
// second pull payment would let the customer be paid twice.
func TestRefundCreatesAreIdempotent(t *testing.T) {
	e := newEnv(t)
	refunds := header{"X-Api-Key", e.refundKey("store_a")}
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1000, "currency": "SATS"}`)
	if _, err := e.node.Pay(t.Context(), inv.LightningInvoice, inv.Amount.MSat()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the invoice to settle", func() bool { return e.invoice(inv.ID).Status == kassa.InvoiceSettled })
	key := header{"Idempotency-Key", "refund-order-1001"}
	first := e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen"}`, key, refunds)
	again := e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen"}`, key, refunds)
	expectStatus(t, again, http.StatusOK)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Fatalf("replay %s, want %s", again.Body.String(), first.Body.String())
	}
	if pps := decode[[]pullPaymentRecord](t, e.do("GET", "/api/v1/stores/store_a/pull-payments", "", refunds)); len(pps) != 1 {
		t.Fatalf("%d pull payments, want 1", len(pps))
	}
	pp := decode[pullPaymentRecord](t, first)
	claimKey := header{"Idempotency-Key", "claim-1"}
	c1 := e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example", "amount": 100}`, claimKey, refunds)
	c2 := e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example", "amount": 100}`, claimKey, refunds)
	if c1.Body.String() != c2.Body.String() {
		t.Fatalf("claim replay %s, want %s", c2.Body.String(), c1.Body.String())
	}
	if payouts := decode[[]payoutRecord](t, e.do("GET", "/api/v1/stores/store_a/payouts", "", refunds)); len(payouts) != 1 {
		t.Fatalf("%d payouts, want 1", len(payouts))
	}
	p1 := e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": 500}`, header{"Idempotency-Key", "pp-1"}, refunds)
	p2 := e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": 500}`, header{"Idempotency-Key", "pp-1"}, refunds)
	if p1.Body.String() != p2.Body.String() {
		t.Fatalf("pull payment replay %s, want %s", p2.Body.String(), p1.Body.String())
	}
}

// refundKey makes a key of store holding what the refund routes ask.
func (e *env) refundKey(store string) string {
	e.t.Helper()
	k, err := e.sys.Service.CreateAPIKey(e.t.Context(), store, "refunds", kassa.PermCreateNonApprovedPullPayments,
		kassa.PermViewPullPayments, kassa.PermViewPayouts, kassa.PermManagePayouts)
	if err != nil {
		e.t.Fatal(err)
	}
	return k.Key
}

// TestRefundAboveWhatWasPaid: a custom refund worth more than the
// bitcoin the invoice received (in satoshis, in the invoice's currency
// at the payment's rate, or in another currency at today's rate) is
// refused 400 and makes no pull payment; the same amount is accepted.
func TestRefundAboveWhatWasPaid(t *testing.T) {
	e := newEnv(t)
	refunds := header{"X-Api-Key", e.refundKey("store_a")}
	inv := e.seedInvoice("store_a", testNow, `{"amount": 10, "currency": "EUR"}`)
	if _, err := e.node.Pay(t.Context(), inv.LightningInvoice, inv.Amount.MSat()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the invoice to settle", func() bool { return e.invoice(inv.ID).Status == kassa.InvoiceSettled })
	path := "/api/v1/stores/store_a/invoices/" + inv.ID + "/refund"
	paid := strconv.FormatInt(int64(inv.Amount), 10)
	above := strconv.FormatInt(int64(inv.Amount)+1, 10)
	for _, body := range []string{
		`{"refundVariant": "Custom", "customAmount": "` + above + `", "customCurrency": "SATS"}`,
		`{"refundVariant": "Custom", "customAmount": "10.01", "customCurrency": "EUR"}`,
		`{"refundVariant": "Custom", "customAmount": "1000000", "customCurrency": "USD"}`,
	} {
		expectError(t, e.do("POST", path, body, refunds), http.StatusBadRequest, kassa.Invalid, "more than")
	}
	if pps := decode[[]pullPaymentRecord](t, e.do("GET", "/api/v1/stores/store_a/pull-payments", "", refunds)); len(pps) != 0 {
		t.Fatalf("refused refunds made %d pull payments", len(pps))
	}
	for _, body := range []string{
		`{"refundVariant": "Custom", "customAmount": "` + paid + `", "customCurrency": "SATS"}`,
		`{"refundVariant": "Custom", "customAmount": "10", "customCurrency": "EUR"}`,
	} {
		expectStatus(t, e.do("POST", path, body, refunds), http.StatusOK)
	}
}
