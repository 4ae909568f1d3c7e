package greenfield_test

import (
	"net/http"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestPullPaymentAutoApproveClaims: a pull payment made with
// autoApproveClaims (BTCPay's GreenfieldPullPaymentController asks
// btcpay.store.cancreatepullpayments for it, else 403
// missing-permission, nothing stored) says so in its answers, and a
// Lightning claim on it is approved at once when the store's prepaid
// balance covers it with its fee limit, in a store with no limit of
// its own; a claim the balance does not cover, and an on-chain claim,
// wait for the merchant.
func TestPullPaymentAutoApproveClaims(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const body = `{"name":"Prize","amount":"0.0002","currency":"BTC","autoApproveClaims":true,"paymentMethods":["BTC-LN","BTC-CHAIN"]}`
	nonApproved := e.keyWith(kassa.PermCreateNonApprovedPullPayments)
	w := e.do("POST", base+"/api/v1/stores/store_a/pull-payments", body, nonApproved)
	expectAPIError(t, w, http.StatusForbidden, "missing-permission", "btcpay.store.cancreatepullpayments")
	if got := decode[struct{ MissingPermission string }](t, w); got.MissingPermission != string(kassa.PermCreatePullPayments) {
		t.Errorf("missingPermission %q", got.MissingPermission)
	}
	if n := e.pullPaymentCount("store_a"); n != 0 {
		t.Fatalf("%d pull payments stored on a refused create", n)
	}

	key := e.keyWith(kassa.PermCreatePullPayments)
	w = e.do("POST", base+"/api/v1/stores/store_a/pull-payments", body, key)
	expectStatus(t, w, http.StatusOK)
	pp := decode[pullPaymentData](t, w)
	if pp.AutoApproveClaims == nil || !*pp.AutoApproveClaims || pp.Amount != "0.00020000" {
		t.Fatalf("pull payment %+v, want autoApproveClaims true", pp)
	}
	if got := decode[pullPaymentData](t, e.do("GET", base+"/api/v1/pull-payments/"+pp.ID, "", "")); got.AutoApproveClaims == nil || !*got.AutoApproveClaims {
		t.Errorf("read back %+v", got)
	}

	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 8_000, ""); err != nil {
		t.Fatal(err)
	}
	claim := func(dest string, sats int64) *kassa.Payout {
		t.Helper()
		p, err := e.refunds.Claim(t.Context(), pp.ID, dest, decimal.NewFromInt(sats))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	before, _ := e.db.Balance(t.Context(), "store_a")
	within := claim("customer@wallet.example", 5_000)
	if within.State != kassa.PayoutApproved || within.Debited != 5_000+within.FeeLimit {
		t.Fatalf("claim the balance covers: %+v, want Approved and debited", within)
	}
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before-within.Debited {
		t.Fatalf("balance %d, want %d", after, before-within.Debited)
	}
	before, _ = e.db.Balance(t.Context(), "store_a")
	// 4000 sat and its fee limit are more than the balance left.
	if p := claim("customer@wallet.example", 4_000); p.State != kassa.PayoutAwaitingApproval || p.Debited != 0 {
		t.Fatalf("claim the balance does not cover: %+v, want AwaitingApproval", p)
	}
	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	if p := claim("bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", 1_000); p.State != kassa.PayoutAwaitingApproval {
		t.Fatalf("on-chain claim: %+v, want AwaitingApproval", p)
	}
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before+100_000 {
		t.Fatalf("balance %d after claims left to the merchant, want %d", after, before+100_000)
	}
	list := decode[[]pullPaymentData](t, e.do("GET", base+"/api/v1/stores/store_a/pull-payments", "", key))
	if len(list) != 1 || list[0].AutoApproveClaims == nil || !*list[0].AutoApproveClaims {
		t.Errorf("list %+v", list)
	}
}
