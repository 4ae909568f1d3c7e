package dashboard

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// overviewStore is a store with a history, made through the real
// actors over in-memory Pebble: a sale 40 days ago (outside the
// overview), then two days ago a 10 EUR Lightning sale, a 20 EUR
// on-chain sale and a 7 EUR invoice left to expire, and today a 5 EUR
// Lightning sale and a 3 EUR invoice still open. EUR is at 50,000 and
// the service fee 1 %.
func overviewStore(t *testing.T, e *env, c *client) *kassa.Store {
	t.Helper()
	st := c.createStore("Café")
	ctx := t.Context()
	create := func(eur int64) *kassa.Invoice {
		t.Helper()
		inv, err := e.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(eur), HasAmount: true,
			Currency: kassa.EUR, OrderID: "order-" + itoa(eur)})
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	e.settle(create(100))
	e.clock.Advance(40 * 24 * time.Hour)
	e.settle(create(10))
	on := create(20)
	if _, err := e.sim.Pay(ctx, on, kassa.MethodOnchain, 0); err != nil {
		t.Fatal(err)
	}
	e.sim.Mine(ctx, 6)
	waitFor(t, "on-chain settled", func() bool {
		got, err := e.db.Invoice(ctx, on.ID)
		return err == nil && got.Status == kassa.InvoiceSettled
	})
	left := create(7)
	e.clock.Advance(2 * 24 * time.Hour)
	// The deadline as the sweeper fires it.
	if err := e.sys.Service.FireDeadline(ctx, st.ID, left.ID); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "expired", func() bool {
		got, err := e.db.Invoice(ctx, left.ID)
		return err == nil && got.Status == kassa.InvoiceExpired
	})
	e.settle(create(5))
	// A second later, so that the open invoice is the newest: two
	// invoices of the same instant have no order by time.
	e.clock.Advance(time.Second)
	create(3)
	// The session ended in the 42 days.
	if code := c.login("a@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("log in again: %d", code)
	}
	return st
}

// TestStoreOverviewFigures: the overview's figures are the store's
// ledger and invoices of the last 30 days: sales per day in EUR at the
// locked rate, invoices by status, Lightning against on-chain, and the
// prepaid balance at the end of each day, moved by the service fees.
func TestStoreOverviewFigures(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := overviewStore(t, e, c)
	now := e.clock.Now()
	o, err := kassa.ReadStoreOverview(t.Context(), e.db, st, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Days) != kassa.OverviewDays || !o.To.After(now) || o.From.After(now.AddDate(0, 0, -29)) || o.Currency != kassa.EUR {
		t.Fatalf("period %v–%v, %d days, %s", o.From, o.To, len(o.Days), o.Currency)
	}
	type day struct {
		count int
		sats  kassa.Sats
		fiat  string
	}
	want := map[int]day{27: {2, 60_000, "30"}, 29: {1, 10_000, "5"}}
	for i, d := range o.Days {
		w, ok := want[i]
		if !ok {
			w = day{0, 0, "0"}
		}
		if d.Count != w.count || d.Sats != w.sats || !d.Fiat.Equal(decimal.RequireFromString(w.fiat)) {
			t.Errorf("day %d (%s): %d sales, %d sats, %s EUR; want %d, %d, %s", i, d.Day.Format("2006-01-02"), d.Count, d.Sats, d.Fiat, w.count, w.sats, w.fiat)
		}
	}
	if total := o.SalesTotal(); total.Count != 3 || !total.Fiat.Equal(decimal.NewFromInt(35)) {
		t.Errorf("total %d sales, %s EUR; want 3, 35", total.Count, total.Fiat)
	}
	if got := o.Statuses; got[kassa.InvoiceSettled] != 3 || got[kassa.InvoiceExpired] != 1 || got[kassa.InvoiceNew] != 1 || o.Invoices != 5 {
		t.Errorf("statuses %v of %d invoices, want 3 Settled, 1 Expired, 1 New", got, o.Invoices)
	}
	if l := o.Lightning; l.Count != 2 || l.Sats != 30_000 || !l.Fiat.Equal(decimal.NewFromInt(15)) {
		t.Errorf("Lightning %+v, want 2 sales, 30,000 sats, 15 EUR", l)
	}
	if on := o.Onchain; on.Count != 1 || on.Sats != 40_000 || !on.Fiat.Equal(decimal.NewFromInt(20)) {
		t.Errorf("on-chain %+v, want 1 sale, 40,000 sats, 20 EUR", on)
	}
	bal, err := e.db.Balance(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	// 1 % fees: 100 sats today, 200 + 400 two days ago.
	if o.Balance != bal || o.BalanceAt[29] != bal || o.BalanceAt[28] != bal+100 || o.BalanceAt[27] != bal+100 || o.BalanceAt[26] != bal+700 || o.BalanceAt[0] != bal+700 {
		t.Errorf("balance %d, by day %v", bal, o.BalanceAt)
	}
	if len(o.Recent) != kassa.OverviewRecent || o.Recent[0].Status != kassa.InvoiceNew || o.Truncated || o.OtherCurrency != 0 {
		t.Errorf("recent %d, newest %v, truncated %v, other currency %d", len(o.Recent), o.Recent[0].Status, o.Truncated, o.OtherCurrency)
	}
}

// TestOverviewPage: a store link lands on the overview, which draws its
// charts as inline SVG with a title, a description and a table of the
// same figures, in the reader's language; a guest (invoice view only)
// sees it without the balance.
func TestOverviewPage(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := overviewStore(t, e, c)
	base := "/dashboard/stores/" + st.ID
	_, body, _ := c.get("/dashboard/stores")
	if !strings.Contains(body, `href="`+base+`/overview"`) {
		t.Errorf("the stores page does not link the store's overview")
	}
	code, body, _ := c.get(base + "/overview")
	if code != http.StatusOK {
		t.Fatalf("overview: %d %s", code, body)
	}
	for _, want := range []string{`<svg role="img" aria-labelledby="sales-title sales-desc"`, `<title id="sales-title">`, `<desc id="sales-desc">`,
		"€30.00", "€35.00", "€15.00", "€20.00", `id="balance"`, `id="statuses"`, "order-3", htmlText(msg("ov.sales"))} {
		if !strings.Contains(body, want) {
			t.Errorf("the overview lacks %q", want)
		}
	}
	if strings.Contains(body, "order-100") {
		t.Errorf("the overview shows the sale of 40 days ago")
	}
	// A guest may view invoices, not the reports or the payouts: the
	// overview without the balance and the payouts.
	guest := e.client()
	guest.signup("guest@example.com")
	guest.join(inviteMember(t, c, st, kassa.RoleGuest))
	code, gbody, _ := guest.get(base + "/overview")
	if code != http.StatusOK || !strings.Contains(gbody, "€35.00") || strings.Contains(gbody, `id="balance"`) || strings.Contains(gbody, htmlText(msg("ov.payouts"))) {
		t.Errorf("a guest's overview: %d, balance %v, payouts %v", code, strings.Contains(gbody, `id="balance"`), strings.Contains(gbody, htmlText(msg("ov.payouts"))))
	}
	if !strings.Contains(body, htmlText(msg("ov.payouts"))) {
		t.Errorf("the owner's overview lacks the payouts")
	}
	_, body = c.getLang(base+"/overview", "de")
	if !strings.Contains(body, htmlText(msgIn("de", "ov.sales"))) || !strings.Contains(body, i18n.Money("de", decimal.NewFromInt(30), kassa.EUR)) {
		i := max(strings.Index(body, `id="sales-total"`), 0)
		t.Errorf("the German overview: %.300s", body[i:])
	}
}
