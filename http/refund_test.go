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
	inv := e.seedInvoice("store_a", testNow, `{"amount": 10, "currency": "EUR"}`)
	expectError(t, e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen"}`),
		http.StatusConflict, kassa.Conflict, "no payment")
	if _, err := e.node.Pay(t.Context(), inv.LightningInvoice, inv.Amount.MSat()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the invoice to settle", func() bool { return e.invoice(inv.ID).Status == kassa.InvoiceSettled })

	w := e.do("POST", "/api/v1/stores/store_a/invoices/"+inv.ID+"/refund", `{"refundVariant": "RateThen", "subtractPercentage": "10"}`)
	expectStatus(t, w, http.StatusOK)
	pp := decode[pullPaymentRecord](t, w)
	want := inv.Amount * 9 / 10
	if pp.Currency != kassa.SATS || string(pp.Amount) != strconv.FormatInt(int64(want), 10) || pp.InvoiceID != inv.ID {
		t.Fatalf("pull payment %+v, want %d SATS", pp, want)
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_b/pull-payments/"+pp.ID, "", header{"X-Api-Key", keyB}), http.StatusNotFound, kassa.NotFound)

	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "bc1qw508d6qejxtdg4y5r3zarvary0c5xw7kv8f3t4"}`)
	expectError(t, w, http.StatusBadRequest, kassa.Invalid, "another network")
	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example"}`)
	expectStatus(t, w, http.StatusOK)
	po := decode[payoutRecord](t, w)
	if po.State != "AwaitingApproval" || po.DestinationKind != "LNURL" || po.Amount != kassa.Sats(want) {
		t.Fatalf("payout %+v", po)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example"}`),
		http.StatusConflict, kassa.Conflict, "fully claimed")

	expectError(t, e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/approve", ""), http.StatusPaymentRequired, kassa.PaymentRequired)
	if _, err := e.sys.TopUp(t.Context(), "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := e.db.Balance(t.Context(), "store_a")
	w = e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/approve", "")
	expectStatus(t, w, http.StatusOK)
	approved := decode[payoutRecord](t, w)
	if approved.State != "Approved" {
		t.Fatalf("approved payout %+v", approved)
	}
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before-approved.Amount-approved.FeeLimit {
		t.Fatalf("balance %d after approval, want %d", after, before-approved.Amount-approved.FeeLimit)
	}
	list := decode[[]payoutRecord](t, e.do("GET", "/api/v1/stores/store_a/payouts", ""))
	if len(list) != 1 || list[0].ID != po.ID {
		t.Fatalf("payouts %+v", list)
	}
	pps := decode[[]pullPaymentRecord](t, e.do("GET", "/api/v1/stores/store_a/pull-payments", ""))
	if len(pps) != 1 || pps[0].Left != "0" {
		t.Fatalf("pull payments %+v", pps)
	}
	w = e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/cancel", "")
	expectStatus(t, w, http.StatusOK)
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before {
		t.Fatalf("balance %d after cancel, want %d", after, before)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/payouts/"+po.ID+"/mark-paid", ""), http.StatusConflict, kassa.Conflict)
	got := decode[payoutRecord](t, e.do("GET", "/api/v1/stores/store_a/payouts/"+po.ID, ""))
	if got.State != "Cancelled" {
		t.Fatalf("payout after cancel %+v", got)
	}

	w = e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": "0.0001", "currency": "BTC", "description": "goodwill"}`)
	expectStatus(t, w, http.StatusOK)
	if created := decode[pullPaymentRecord](t, w); created.Currency != kassa.SATS || created.Amount != "10000" {
		t.Fatalf("created pull payment %+v", created)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": "1.5"}`), http.StatusBadRequest, kassa.Invalid)
}
