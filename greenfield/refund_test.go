package greenfield_test

// Refunds through Greenfield: pull payments, the invoice refund and
// payouts, as BTCPay v2.4.1 serves them (swagger.template.pull-payments.json,
// swagger.template.invoices.json InvoiceRefundRequest) and BTCPay's
// WooCommerce plugin v2.8.0 calls them (src/Gateway/AbstractGateway.php
// process_refund; src/Helper/GreenfieldApiHelper.php serverSupportsRefunds
// and apiKeyHasRefundPermission; src/Helper/GreenfieldApiAuthorization.php
// hasRefundsPermission), through btcpayserver-greenfield-php v2.9.0
// (src/Client/PullPayment.php createPullPayment, approvePayout,
// cancelPayout, markPayoutAsPaid; src/Result/PullPayment.php).

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// pullPaymentData is BTCPay's PullPaymentData as the tests read it.
type pullPaymentData struct {
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	Description       *string `json:"description"`
	Currency          string  `json:"currency"`
	Amount            string  `json:"amount"`
	Period            *int64  `json:"period"`
	BOLT11Expiration  *int64  `json:"BOLT11Expiration"`
	AutoApproveClaims *bool   `json:"autoApproveClaims"`
	Archived          *bool   `json:"archived"`
	ViewLink          string  `json:"viewLink"`
	StartsAt          int64   `json:"startsAt"`
	ExpiresAt         *int64  `json:"expiresAt"`
}

// payoutData is BTCPay's PayoutData as the tests read it.
type payoutData struct {
	ID               string         `json:"id"`
	PullPaymentID    string         `json:"pullPaymentId"`
	Date             int64          `json:"date"`
	Destination      string         `json:"destination"`
	OriginalCurrency string         `json:"originalCurrency"`
	OriginalAmount   string         `json:"originalAmount"`
	PayoutCurrency   string         `json:"payoutCurrency"`
	PayoutAmount     *string        `json:"payoutAmount"`
	PayoutMethodID   string         `json:"payoutMethodId"`
	State            string         `json:"state"`
	PaymentProof     map[string]any `json:"paymentProof"`
}

// pluginKey is a key holding what the plugin's authorize link asks:
// GreenfieldApiAuthorization's REQUIRED_PERMISSIONS and OPTIONAL_PERMISSIONS.
func (e *env) pluginKey() string {
	e.t.Helper()
	return e.keyWith(kassa.PermViewInvoices, kassa.PermCreateInvoice, kassa.PermViewStoreSettings, kassa.PermModifyInvoices,
		kassa.PermCreateNonApprovedPullPayments, kassa.PermModifyWebhooks)
}

// settledInvoice makes the plugin's invoice of 42.90 EUR of store_a and
// pays it on-chain, confirmed: Settled.
func (e *env) settledInvoice() invoiceData {
	e.t.Helper()
	w := e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody)
	expectStatus(e.t, w, http.StatusOK)
	inv := decode[invoiceData](e.t, w)
	e.payOnchain(inv.ID, strings.Repeat("cd02", 16), 85800, 1)
	if got := decode[invoiceData](e.t, e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID, "")); got.Status != "Settled" {
		e.t.Fatalf("invoice %s, want Settled", got.Status)
	}
	return inv
}

// pullPaymentCount is how many pull payments store has.
func (e *env) pullPaymentCount(storeID string) int {
	e.t.Helper()
	n := 0
	if err := e.db.PullPayments(e.t.Context(), storeID, func(*kassa.PullPayment) error { n++; return nil }); err != nil {
		e.t.Fatal(err)
	}
	return n
}

// pluginRefundBody is PullPayment::createPullPayment's body as
// process_refund sends it: the name "Refund for order no.: <n> reason:
// <reason>", the amount as PreciseNumber's string, the order's currency,
// autoApproveClaims false, and the gateways' payment methods.
const pluginRefundBody = `{"name":"Refund for order no.: 123 reason: damaged","amount":"10.00","currency":"EUR","period":null,"BOLT11Expiration":null,"autoApproveClaims":false,"startsAt":null,"expiresAt":null,"paymentMethods":["BTC_CHAIN","BTC_LN"]}`

// TestPluginRefund replays process_refund: serverSupportsRefunds
// (server/info's version not below 1.7.6), apiKeyHasRefundPermission
// (api-keys/current lists btcpay.store.cancreatenonapprovedpullpayments
// by that exact name), createPullPayment, and the viewLink and id it
// writes in the order note; in sats mode it asks in BTC.
func TestPluginRefund(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.pluginKey()
	e.settledInvoice()

	// serverSupportsRefunds: !version_compare(version, '1.7.6', '<').
	info := decode[struct{ Version string }](t, e.do("GET", base+"/api/v1/server/info", "", key))
	if !versionAtLeast(info.Version, "1.7.6") {
		t.Fatalf("version %q: the plugin would say the server does not support refunds", info.Version)
	}
	// apiKeyHasRefundPermission: the part before ":" of a permission.
	cur := decode[apiKeyData](t, e.do("GET", base+"/api/v1/api-keys/current", "", key))
	names := make([]string, 0, len(cur.Permissions))
	for _, p := range cur.Permissions {
		name, _, _ := strings.Cut(p, ":")
		names = append(names, name)
	}
	if !slices.Contains(names, "btcpay.store.cancreatenonapprovedpullpayments") {
		t.Fatalf("permissions %v: the plugin would say the key cannot refund", cur.Permissions)
	}

	// createPullPayment.
	w := e.do("POST", base+"/api/v1/stores/store_a/pull-payments", pluginRefundBody, key)
	expectStatus(t, w, http.StatusOK)
	pp := decode[pullPaymentData](t, w)
	if pp.ID == "" || pp.ViewLink != "https://pay.example.com/pull-payments/"+pp.ID {
		t.Fatalf("id %q viewLink %q", pp.ID, pp.ViewLink)
	}
	if pp.Name != "Refund for order no.: 123 reason: damaged" || pp.Currency != "EUR" || pp.Amount != "10.00" ||
		pp.Archived == nil || *pp.Archived || pp.AutoApproveClaims == nil || *pp.AutoApproveClaims || pp.StartsAt != testNow.Unix() || pp.ExpiresAt != nil {
		t.Errorf("pull payment %+v", pp)
	}
	stored, err := e.db.PullPayment(t.Context(), pp.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.StoreID != "store_a" || stored.Currency != kassa.EUR || !stored.Amount.Equal(decimal.RequireFromString("10")) {
		t.Errorf("stored %+v", stored)
	}

	// Sats mode: the order in SAT is refunded in BTC, amount / 1e8.
	w = e.do("POST", base+"/api/v1/stores/store_a/pull-payments",
		`{"name":"Refund for order no.: 124 reason: ","amount":"0.00012345","currency":"BTC","period":null,"BOLT11Expiration":null,"autoApproveClaims":false,"startsAt":null,"expiresAt":null,"paymentMethods":["BTC_CHAIN","BTC_LN"]}`, key)
	expectStatus(t, w, http.StatusOK)
	sats := decode[pullPaymentData](t, w)
	if sats.Currency != "BTC" || sats.Amount != "0.00012345" {
		t.Errorf("sats-mode pull payment %+v", sats)
	}
	if s, err := e.db.PullPayment(t.Context(), sats.ID); err != nil || s.Currency != kassa.SATS || !s.Amount.Equal(decimal.NewFromInt(12345)) {
		t.Errorf("stored %+v, %v", s, err)
	}

	// The customer's page reads the pull payment by its id alone: public.
	w = e.do("GET", base+"/api/v1/pull-payments/"+pp.ID, "", "")
	expectStatus(t, w, http.StatusOK)
	if got := decode[pullPaymentData](t, w); got.ID != pp.ID || got.ViewLink != pp.ViewLink || got.Amount != "10.00" {
		t.Errorf("public pull payment %+v", got)
	}
	expectAPIError(t, e.do("GET", base+"/api/v1/pull-payments/pp_nothere", "", ""), http.StatusNotFound, "pullpayment-not-found")

	// GetPullPayments lists the store's, newest first.
	list := decode[[]pullPaymentData](t, e.do("GET", base+"/api/v1/stores/store_a/pull-payments", "", key))
	if len(list) != 2 {
		t.Fatalf("pull payments %+v", list)
	}
	if ids := []string{list[0].ID, list[1].ID}; !slices.Contains(ids, pp.ID) || !slices.Contains(ids, sats.ID) {
		t.Errorf("pull payments %v", ids)
	}
}

// versionAtLeast compares dotted versions as PHP's version_compare does
// for plain numbers.
func versionAtLeast(v, min string) bool {
	a, b := strings.Split(v, "."), strings.Split(min, ".")
	for i := range max(len(a), len(b)) {
		var x, y int64
		if i < len(a) {
			x = decimal.RequireFromString(a[i]).IntPart()
		}
		if i < len(b) {
			y = decimal.RequireFromString(b[i]).IntPart()
		}
		if x != y {
			return x > y
		}
	}
	return true
}

// TestCreatePullPaymentBadInput: Greenfield's 422 per field, nothing
// stored; what Kassa does not do (recurring periods, a later start) is
// refused, not ignored (autoApproveClaims: TestPullPaymentAutoApproveClaims).
func TestCreatePullPaymentBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.pluginKey()
	for body, path := range map[string]string{
		`{"name":"x","amount":"abc","currency":"EUR"}`:                          "amount",
		`{"name":"x","amount":"-1","currency":"EUR"}`:                           "amount",
		`{"name":"x","amount":"10","currency":"EURO"}`:                          "currency",
		`{"name":"x","amount":"10","currency":"EUR","period":86400}`:            "period",
		`{"name":"x","amount":"10","currency":"EUR","startsAt":1893456000}`:     "startsAt",
		`{"name":"x","amount":"10","currency":"EUR","expiresAt":1000}`:          "expiresAt",
		`{"name":"x","amount":"10","currency":"EUR","paymentMethods":["DOGE"]}`: "paymentMethods",
		`{"name":"x","amount":10,"currency":"EUR","expiresAt":"soon"}`:          "expiresAt",
	} {
		expectValidation(t, e.do("POST", base+"/api/v1/stores/store_a/pull-payments", body, key), path)
	}
	if n := e.pullPaymentCount("store_a"); n != 0 {
		t.Errorf("%d pull payments stored on bad input", n)
	}
	// An expiry in the future is kept, in Unix seconds.
	exp := testNow.Unix() + 86400
	w := e.do("POST", base+"/api/v1/stores/store_a/pull-payments", `{"name":"x","amount":10,"currency":"EUR","expiresAt":`+itoa(exp)+`}`, key)
	expectStatus(t, w, http.StatusOK)
	if pp := decode[pullPaymentData](t, w); pp.ExpiresAt == nil || *pp.ExpiresAt != exp || pp.Amount != "10.00" {
		t.Errorf("pull payment %+v", pp)
	}
}

// TestInvoiceRefund: POST …/invoices/{id}/refund (BTCPay's
// InvoiceRefundRequest) makes the refund's pull payment by each
// variant; a refund of an unpaid or another store's invoice, or a bad
// field, stores nothing.
func TestInvoiceRefund(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.pluginKey()
	unpaid := decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody))
	expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+unpaid.ID+"/refund", `{"refundVariant":"RateThen","paymentMethod":"BTC-LN"}`, key),
		http.StatusConflict, "conflict", "no payment")
	inv := e.settledInvoice()
	path := base + "/api/v1/stores/store_a/invoices/" + inv.ID + "/refund"

	for _, c := range []struct{ body, currency, amount string }{
		// The bitcoin paid, less 10 %.
		{`{"name":"Refund 123","paymentMethod":"BTC-LN","refundVariant":"RateThen","subtractPercentage":"10"}`, "BTC", "0.00077220"},
		// The price in its currency (BTCPay's Fiat; CurrentRate alike),
		// paid at the rate of the approval.
		{`{"paymentMethod":"BTC-CHAIN","refundVariant":"Fiat"}`, "EUR", "42.90"},
		{`{"paymentMethod":"BTC","refundVariant":"CurrentRate","subtractPercentage":50}`, "EUR", "21.45"},
		{`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"5.5","customCurrency":"EUR"}`, "EUR", "5.50"},
	} {
		w := e.do("POST", path, c.body, key)
		expectStatus(t, w, http.StatusOK)
		pp := decode[pullPaymentData](t, w)
		if pp.Currency != c.currency || pp.Amount != c.amount || pp.ViewLink != "https://pay.example.com/pull-payments/"+pp.ID {
			t.Errorf("%s: pull payment %+v, want %s %s", c.body, pp, c.amount, c.currency)
		}
		if stored, err := e.db.PullPayment(t.Context(), pp.ID); err != nil || stored.InvoiceID != inv.ID {
			t.Errorf("stored %+v, %v", stored, err)
		}
	}
	n := e.pullPaymentCount("store_a")

	for body, field := range map[string]string{
		`{"paymentMethod":"BTC-LN","refundVariant":"Everything"}`:                                        "refundVariant",
		`{"paymentMethod":"DOGE","refundVariant":"RateThen"}`:                                            "paymentMethod",
		`{"paymentMethod":"BTC-LN","refundVariant":"RateThen","subtractPercentage":"x"}`:                 "subtractPercentage",
		`{"paymentMethod":"BTC-LN","refundVariant":"RateThen","subtractPercentage":101}`:                 "subtractPercentage",
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"-1","customCurrency":"EUR"}`: "customAmount",
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"1","customCurrency":"XX"}`:   "customCurrency",
	} {
		expectValidation(t, e.do("POST", path, body, key), field)
	}
	expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/inv_nothere/refund", `{"refundVariant":"RateThen","paymentMethod":"BTC-LN"}`, key),
		http.StatusNotFound, "invoice-not-found")
	// Store B's invoice under store A's path is not found; under its own
	// path store A's key has no permission.
	other := decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_b/invoices", `{"amount":"5","currency":"USD"}`, keyB))
	expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+other.ID+"/refund", `{"refundVariant":"RateThen","paymentMethod":"BTC-LN"}`, key),
		http.StatusNotFound, "invoice-not-found")
	expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_b/invoices/"+other.ID+"/refund", `{"refundVariant":"RateThen","paymentMethod":"BTC-LN"}`, key),
		http.StatusForbidden, "missing-permission")
	if got := e.pullPaymentCount("store_a"); got != n {
		t.Errorf("bad refunds stored %d pull payments", got-n)
	}
}

// TestPayouts: a claim on a refund is a payout awaiting approval;
// approval needs canmanagepayouts and the store's prepaid balance
// (BTCPay's AwaitingPayment once approved), DELETE cancels it and gives
// the balance back, mark-paid completes one paid elsewhere; lists hide
// cancelled payouts unless asked.
func TestPayouts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	manager := e.keyWith(kassa.PermCreateNonApprovedPullPayments, kassa.PermManagePayouts)
	viewer := e.keyWith(kassa.PermViewStoreSettings)
	inv := e.settledInvoice()
	pp := decode[pullPaymentData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+inv.ID+"/refund",
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"0.0002","customCurrency":"BTC"}`, manager))
	if pp.Currency != "BTC" || pp.Amount != "0.00020000" {
		t.Fatalf("pull payment %+v", pp)
	}
	// The customer claims half, then the rest (on the claim page).
	first, err := e.refunds.Claim(t.Context(), pp.ID, "customer@wallet.example", decimal.NewFromInt(10000))
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.refunds.Claim(t.Context(), pp.ID, "customer@wallet.example", decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}

	list := decode[[]payoutData](t, e.do("GET", base+"/api/v1/stores/store_a/payouts", "", viewer))
	if len(list) != 2 {
		t.Fatalf("payouts %+v", list)
	}
	for _, p := range list {
		if p.State != "AwaitingApproval" || p.PullPaymentID != pp.ID || p.PayoutMethodID != "BTC-LN" || p.Destination != "customer@wallet.example" ||
			p.OriginalCurrency != "BTC" || p.OriginalAmount != "0.00010000" || p.PayoutCurrency != "BTC" || p.Date != testNow.Unix() {
			t.Errorf("payout %+v", p)
		}
	}
	got := decode[payoutData](t, e.do("GET", base+"/api/v1/stores/store_a/payouts/"+first.ID, "", viewer))
	if got.ID != first.ID || got.PayoutAmount == nil || *got.PayoutAmount != "0.00010000" {
		t.Errorf("payout %+v", got)
	}

	// Approval (PullPayment::approvePayout posts revision and rateRule).
	approve := base + "/api/v1/stores/store_a/payouts/" + first.ID
	expectAPIError(t, e.do("POST", approve, `{"revision":0,"rateRule":null}`, viewer), http.StatusForbidden, "missing-permission", "btcpay.store.canmanagepayouts")
	expectAPIError(t, e.do("POST", approve, `{"revision":0,"rateRule":null}`, manager), http.StatusPaymentRequired, "payment-required", "top up")
	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 100_000, ""); err != nil {
		t.Fatal(err)
	}
	before, _ := e.db.Balance(t.Context(), "store_a")
	w := e.do("POST", approve, `{"revision":0,"rateRule":null}`, manager)
	expectStatus(t, w, http.StatusOK)
	if p := decode[payoutData](t, w); p.State != "AwaitingPayment" || p.ID != first.ID {
		t.Errorf("approved %+v", p)
	}
	if after, _ := e.db.Balance(t.Context(), "store_a"); after >= before-10000 {
		t.Errorf("balance %d after approval, from %d", after, before)
	}
	expectAPIError(t, e.do("POST", approve, `{"revision":0}`, manager), http.StatusBadRequest, "invalid-state")

	// Cancel (cancelPayout: DELETE, 200): the balance comes back.
	w = e.do("DELETE", approve, "", manager)
	expectStatus(t, w, http.StatusOK)
	if after, _ := e.db.Balance(t.Context(), "store_a"); after != before {
		t.Errorf("balance %d after cancel, want %d", after, before)
	}
	// Mark paid (markPayoutAsPaid: 200).
	w = e.do("POST", base+"/api/v1/stores/store_a/payouts/"+second.ID+"/mark-paid", "", manager)
	expectStatus(t, w, http.StatusOK)
	expectAPIError(t, e.do("POST", approve+"/mark-paid", "", manager), http.StatusBadRequest, "invalid-state")

	list = decode[[]payoutData](t, e.do("GET", base+"/api/v1/stores/store_a/payouts", "", viewer))
	if len(list) != 1 || list[0].ID != second.ID || list[0].State != "Completed" {
		t.Errorf("payouts without cancelled %+v", list)
	}
	list = decode[[]payoutData](t, e.do("GET", base+"/api/v1/stores/store_a/payouts?includeCancelled=true", "", viewer))
	states := map[string]string{}
	for _, p := range list {
		states[p.ID] = p.State
	}
	if len(list) != 2 || states[first.ID] != "Cancelled" || states[second.ID] != "Completed" {
		t.Errorf("payouts %v", states)
	}

	for _, path := range []string{"/payouts/po_nothere", "/payouts/po_nothere/mark-paid"} {
		expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_a"+path, "", manager), http.StatusNotFound, "payout-not-found")
	}
	expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_a/payouts/po_nothere", "", viewer), http.StatusNotFound, "payout-not-found")
	// Store B sees none of store A's payouts.
	if l := decode[[]payoutData](t, e.do("GET", base+"/api/v1/stores/store_b/payouts?includeCancelled=true", "", keyB)); len(l) != 0 {
		t.Errorf("store B's payouts %+v", l)
	}
	expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_b/payouts/"+second.ID, "", keyB), http.StatusNotFound, "payout-not-found")
	expectValidation(t, e.do("GET", base+"/api/v1/stores/store_a/payouts?includeCancelled=maybe", "", viewer), "includeCancelled")
}

// TestInvoiceRefundAboveWhatWasPaid: a Custom refund worth more than
// the 85,800 sat the invoice received (in BTC, or in EUR at the
// payment's rate) is 422 on customAmount and stores nothing; what was
// paid, exactly, is a refund.
func TestInvoiceRefundAboveWhatWasPaid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.pluginKey()
	inv := e.settledInvoice()
	path := base + "/api/v1/stores/store_a/invoices/" + inv.ID + "/refund"
	for _, body := range []string{
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"0.00085801","customCurrency":"BTC"}`,
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"42.91","customCurrency":"EUR"}`,
		`{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"1000000","customCurrency":"USD"}`,
	} {
		expectValidation(t, e.do("POST", path, body, key), "customAmount")
	}
	if n := e.pullPaymentCount("store_a"); n != 0 {
		t.Fatalf("refused refunds stored %d pull payments", n)
	}
	w := e.do("POST", path, `{"paymentMethod":"BTC-LN","refundVariant":"Custom","customAmount":"0.000858","customCurrency":"BTC"}`, key)
	expectStatus(t, w, http.StatusOK)
	if pp := decode[pullPaymentData](t, w); pp.Amount != "0.00085800" {
		t.Errorf("pull payment of %s BTC, want 0.00085800", pp.Amount)
	}
}
