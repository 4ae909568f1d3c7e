package kassa

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// paidInvoice is an invoice of 20 USD at 50,000 USD/BTC (40,000 sat),
// settled by a Lightning payment of paid sats.
func paidInvoice(paid Sats) *Invoice {
	inv := &Invoice{
		ID: "inv1", StoreID: "s1", Status: InvoiceSettled,
		Amount: 40_000, InvoiceAmount: decimal.NewFromInt(20), Currency: USD,
		StoreCurrency: USD, RequestRate: decimal.NewFromInt(50_000), ExchangeRate: decimal.NewFromInt(50_000),
	}
	if paid > 0 {
		inv.Payments = []Payment{{ID: "p1", Method: MethodLightning, Amount: paid}}
	}
	return inv
}

func dec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func TestRefundAmountChoices(t *testing.T) {
	for _, tc := range []struct {
		name     string
		paid     Sats
		r        RefundRequest
		currency Currency
		amount   string
	}{
		{"rate then: the bitcoin paid", 40_000, RefundRequest{Choice: RefundRateThen}, SATS, "40000"},
		{"rate then, overpaid: all that was paid", 45_000, RefundRequest{Choice: RefundRateThen}, SATS, "45000"},
		{"current rate: the price in its currency", 40_000, RefundRequest{Choice: RefundCurrentRate}, USD, "20"},
		{"overpaid part only", 45_001, RefundRequest{Choice: RefundOverpaid}, SATS, "5001"},
		{"custom in BTC: satoshis", 40_000, RefundRequest{Choice: RefundCustom, CustomAmount: dec("0.0001"), CustomCurrency: BTC}, SATS, "10000"},
		{"custom in EUR, at today's rate", 40_000, RefundRequest{Choice: RefundCustom, CustomAmount: dec("7.5"), CustomCurrency: EUR, Rate: dec("45000")}, EUR, "7.5"},
		{"custom: all that was paid", 40_000, RefundRequest{Choice: RefundCustom, CustomAmount: dec("20"), CustomCurrency: USD}, USD, "20"},
		{"less 10 percent, rounded down to a sat", 40_001, RefundRequest{Choice: RefundRateThen, SubtractPercentage: dec("10")}, SATS, "36000"},
		{"less 2.5 percent of fiat, to the cent", 40_000, RefundRequest{Choice: RefundCurrentRate, SubtractPercentage: dec("2.5")}, USD, "19.5"},
		{"less 33.333 percent of fiat rounds down", 40_000, RefundRequest{Choice: RefundCurrentRate, SubtractPercentage: dec("33.333")}, USD, "13.33"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, amount, _, err := RefundAmount(paidInvoice(tc.paid), tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if c != tc.currency || !amount.Equal(dec(tc.amount)) {
				t.Fatalf("got %s %s, want %s %s", amount, c, tc.amount, tc.currency)
			}
		})
	}
}

func TestRefundRefusals(t *testing.T) {
	for _, tc := range []struct {
		name string
		inv  *Invoice
		r    RefundRequest
		code string
	}{
		{"unpaid invoice", paidInvoice(0), RefundRequest{Choice: RefundRateThen}, Conflict},
		{"not overpaid", paidInvoice(40_000), RefundRequest{Choice: RefundOverpaid}, Conflict},
		{"unknown choice", paidInvoice(40_000), RefundRequest{Choice: "Everything"}, Invalid},
		{"percentage above 100", paidInvoice(40_000), RefundRequest{Choice: RefundRateThen, SubtractPercentage: dec("101")}, Invalid},
		{"negative custom amount", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("-1"), CustomCurrency: USD}, Invalid},
		{"custom without a currency", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("1")}, Invalid},
		{"less 100 percent: nothing", paidInvoice(40_000), RefundRequest{Choice: RefundRateThen, SubtractPercentage: dec("100")}, Invalid},
		{"custom sats above paid", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("40001"), CustomCurrency: SATS}, Invalid},
		{"custom BTC above paid", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("0.00040001"), CustomCurrency: BTC}, Invalid},
		{"custom fiat above paid at the payment's rate", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("20.01"), CustomCurrency: USD}, Invalid},
		{"custom fiat above paid at today's rate", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("18.01"), CustomCurrency: EUR, Rate: dec("45000")}, Invalid},
		{"custom fiat without a rate to bound it", paidInvoice(40_000), RefundRequest{Choice: RefundCustom, CustomAmount: dec("1"), CustomCurrency: EUR}, Unavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, _, err := RefundAmount(tc.inv, tc.r)
			if ErrorCode(err) != tc.code {
				t.Fatalf("err = %v, want code %s", err, tc.code)
			}
		})
	}
}

func TestUnconfirmedPaymentIsNotRefundable(t *testing.T) {
	inv := paidInvoice(0)
	inv.Status, inv.ConfirmationsRequired = InvoiceProcessing, 1
	inv.Payments = []Payment{{ID: "p1", Method: MethodOnchain, Amount: 40_000}}
	if _, _, _, err := RefundAmount(inv, RefundRequest{Choice: RefundRateThen}); err != ErrInvoiceNotPaid {
		t.Fatalf("err = %v, want %v", err, ErrInvoiceNotPaid)
	}
}

func TestPullPaymentClaims(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	pp, err := NewPullPayment("pp1", "s1", PullPaymentInput{Amount: dec("1000"), Currency: SATS, ExpiresAt: now.Add(time.Hour)}, now)
	if err != nil {
		t.Fatal(err)
	}
	if err := pp.Claim(dec("1001"), now); ErrorCode(err) != Invalid {
		t.Fatalf("claim above the amount: %v", err)
	}
	if !pp.Claimed.IsZero() {
		t.Fatalf("a refused claim changed Claimed to %s", pp.Claimed)
	}
	if err := pp.Claim(dec("600"), now); err != nil {
		t.Fatal(err)
	}
	if err := pp.Claim(dec("401"), now); ErrorCode(err) != Invalid {
		t.Fatalf("claim above what is left: %v", err)
	}
	if err := pp.Claim(dec("400"), now); err != nil {
		t.Fatal(err)
	}
	if err := pp.Claim(dec("1"), now); err != ErrPullPaymentSpent {
		t.Fatalf("second claim of a spent pull payment: %v", err)
	}
	pp.Release(dec("400"))
	if err := pp.Claim(dec("400"), now.Add(time.Hour)); err != ErrPullPaymentExpired {
		t.Fatalf("claim after expiry: %v", err)
	}
	pp.Archived = true
	if err := pp.Claim(dec("1"), now); err != ErrPullPaymentArchived {
		t.Fatalf("claim of an archived pull payment: %v", err)
	}
}

func TestNewPullPaymentRefusesBadInput(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, in := range []PullPaymentInput{
		{Amount: dec("0"), Currency: SATS},
		{Amount: dec("1.5"), Currency: SATS},
		{Amount: dec("1.005"), Currency: USD},
		{Amount: dec("1"), Currency: "XYZ"},
		{Amount: dec("1"), Currency: SATS, ExpiresAt: now},
		{Amount: dec("22000000"), Currency: BTC},
	} {
		if _, err := NewPullPayment("pp", "s1", in, now); ErrorCode(err) != Invalid {
			t.Errorf("%+v: err = %v, want invalid", in, err)
		}
	}
	pp, err := NewPullPayment("pp", "s1", PullPaymentInput{Amount: dec("0.00012345"), Currency: BTC}, now)
	if err != nil || pp.Currency != SATS || !pp.Amount.Equal(dec("12345")) {
		t.Fatalf("BTC pull payment: %+v, %v", pp, err)
	}
}
