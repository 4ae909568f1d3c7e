package dashboard

import (
	"encoding/csv"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestAccountingExportPeriod: the transactions CSV of a period (from,
// to) is the accounting export: every payment of those days with its
// value in the store's currency at the invoice's locked rate, its
// service fee, the top-up and the refund (payout) lines, and nothing of
// the days after; the file is named by the period.
func TestAccountingExportPeriod(t *testing.T) {
	e, c, st, inv := refundEnv(t, true)
	base := "/dashboard/stores/" + st.ID
	// A top-up, then a refund of the invoice claimed and approved.
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
	waitFor(t, "the top-up credited", func() bool {
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == 25_000-200
	})
	c.get(base + "/invoices/" + inv.ID + "/refund")
	if code, body, _ := c.post(base+"/invoices/"+inv.ID+"/refund", url.Values{"choice": {"RateThen"}}); code != http.StatusSeeOther {
		t.Fatalf("refund: %d %s", code, body)
	}
	p, err := e.dash.Refunds.Claim(t.Context(), e.pullPayments(st.ID)[0].ID, "alice@example.com", decimal.NewFromInt(5000))
	if err != nil {
		t.Fatal(err)
	}
	c.get(base + "/payouts")
	if code, body, _ := c.post(base+"/payouts/"+p.ID+"/approve", nil); code != http.StatusSeeOther {
		t.Fatalf("approve: %d %s", code, body)
	}
	day := testNow.Format("2006-01-02")
	// Two days later, another sale: outside the period.
	e.clock.Advance(48 * time.Hour)
	later, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(7), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	e.settle(later)
	if code := c.login("a@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("log in again: %d", code)
	}

	code, body, hdr := c.get(base + "/transactions.csv?from=" + day + "&to=" + day)
	if code != http.StatusOK {
		t.Fatalf("export: %d %s", code, body)
	}
	if got, want := hdr.Get("Content-Disposition"), `attachment; filename="transactions-`+st.ID+`-`+day+`-`+day+`.csv"`; got != want {
		t.Errorf("Content-Disposition %q, want %q", got, want)
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	col := func(name string) int { return slices.Index(rows[0], name) }
	var types []string
	for _, r := range rows[1:] {
		types = append(types, r[col("type")])
		if r[col("invoiceId")] == later.ID {
			t.Errorf("the export of %s has the sale of two days later", day)
		}
		if r[col("type")] == "transfer" && r[col("invoiceId")] == inv.ID {
			// 10 EUR, paid in full at 50,000 EUR per bitcoin.
			if r[col("fullAmount")] != "20000" || r[col("amountInPreferredCurrency")] != "10" || r[col("currency")] != "EUR" || r[col("rate")] != "50000" || r[col("feeAmount")] != "200" {
				t.Errorf("the payment's row: %v", r)
			}
		}
	}
	for _, want := range []string{"transfer", "fee", "topup", "refund"} {
		if !slices.Contains(types, want) {
			t.Errorf("the export of %s has no %s line: %v", day, want, types)
		}
	}
}
