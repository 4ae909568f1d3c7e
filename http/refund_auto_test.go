package http

import (
	"net/http"
	"testing"

	"github.com/kassapay/kassa"
)

// TestPullPaymentAutoApproveClaims: POST …/pull-payments with
// autoApproveClaims needs btcpay.store.cancreatepullpayments (a key
// with only cancreatenonapprovedpullpayments is 403 naming it, nothing
// stored); the pull payment made and read back says so, and a
// Lightning claim on it that the prepaid balance covers is approved at
// once.
func TestPullPaymentAutoApproveClaims(t *testing.T) {
	e := newEnv(t)
	const body = `{"amount": 20000, "currency": "SATS", "autoApproveClaims": true}`
	nonApproved := header{"X-Api-Key", e.keyWith(kassa.PermCreateNonApprovedPullPayments)}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/pull-payments", body, nonApproved), http.StatusForbidden, kassa.Forbidden,
		"btcpay.store.cancreatepullpayments")
	n := 0
	if err := e.db.PullPayments(t.Context(), "store_a", func(*kassa.PullPayment) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d pull payments stored on a refused create (%v)", n, err)
	}

	key := header{"X-Api-Key", e.keyWith(kassa.PermCreatePullPayments)}
	w := e.do("POST", "/api/v1/stores/store_a/pull-payments", body, key)
	expectStatus(t, w, http.StatusOK)
	pp := decode[pullPaymentRecord](t, w)
	if !pp.AutoApproveClaims {
		t.Fatalf("pull payment %+v, want autoApproveClaims", pp)
	}
	if got := decode[pullPaymentRecord](t, e.do("GET", "/api/v1/stores/store_a/pull-payments/"+pp.ID, "", key)); !got.AutoApproveClaims {
		t.Errorf("read back %+v", got)
	}
	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+pp.ID+"/payouts", `{"destination": "customer@wallet.example", "amount": 5000}`, key)
	expectStatus(t, w, http.StatusOK)
	if po := decode[payoutRecord](t, w); po.State != "Approved" {
		t.Fatalf("claim %+v, want Approved", po)
	}
	// Without the flag, a claim waits for the merchant.
	w = e.do("POST", "/api/v1/stores/store_a/pull-payments", `{"amount": 20000, "currency": "SATS", "autoApproveClaims": false}`, nonApproved)
	expectStatus(t, w, http.StatusOK)
	plain := decode[pullPaymentRecord](t, w)
	w = e.do("POST", "/api/v1/stores/store_a/pull-payments/"+plain.ID+"/payouts", `{"destination": "customer@wallet.example", "amount": 5000}`, key)
	if po := decode[payoutRecord](t, w); plain.AutoApproveClaims || po.State != "AwaitingApproval" {
		t.Fatalf("pull payment %+v claim %+v, want AwaitingApproval", plain, po)
	}
}
