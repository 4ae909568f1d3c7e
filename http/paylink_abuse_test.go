package http

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// payClick is one click on a pay link's Pay button: the status, the
// invoice the redirect names and the cookie the answer set.
type payClick struct {
	status  int
	invoice string
	cookie  string
}

func (e *env) clickPay(remote, link, cookie string) payClick {
	e.t.Helper()
	var headers []header
	headers = append(headers, noKey)
	if cookie != "" {
		headers = append(headers, header{"Cookie", payLinkSessionCookie + "=" + cookie})
	}
	w := e.doFrom(remote, "POST", "/payment-requests/"+link+"/pay", "", headers...)
	return clickOf(w)
}

func clickOf(w *httptest.ResponseRecorder) payClick {
	c := payClick{status: w.Code}
	if loc := w.Header().Get("Location"); loc != "" {
		c.invoice = loc[strings.LastIndexByte(loc, '/')+1:]
	}
	for _, ck := range w.Result().Cookies() {
		if ck.Name == payLinkSessionCookie {
			c.cookie = ck.Value
		}
	}
	return c
}

// TestPayLinkUnderStrangers is issue 18's pay-link finding: 21 requests
// from 21 addresses locked a pay link for every customer for a minute
// (429 for all), and a customer's second click on "Pay with Bitcoin"
// counted as a new payment (issue 22). Now 100 strangers from 100
// addresses, then 100 more while a real customer pays, cannot keep the
// customer from paying: the customer resumes its invoice on every click,
// new customers are handed the strangers' unpaid invoices once the link's
// bucket is empty, and no more invoices are made than the bucket allows.
func TestPayLinkUnderStrangers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	limits := DefaultPublicLimits()
	link := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 10, "title": "Ticket"}`)).ID

	var mu sync.Mutex
	outcomes := map[string]int{}
	strangers := func(from, n int) {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := e.clickPay(fmt.Sprintf("10.0.%d.%d:4000", (from+i)/250, (from+i)%250+1), link, "")
				mu.Lock()
				defer mu.Unlock()
				switch {
				case c.status == http.StatusSeeOther && c.invoice != "":
					outcomes["invoice"]++
				case c.status == http.StatusTooManyRequests:
					outcomes["429"]++
				case c.status == http.StatusConflict:
					outcomes["closed"]++ // the customer paid: the link is Completed
				default:
					outcomes[fmt.Sprint(c.status)]++
				}
			}()
		}
		wg.Wait()
	}
	start := time.Now()
	strangers(0, 100)
	flood := time.Since(start)

	// The customer comes after the flood: the link's bucket is empty.
	customer := "198.51.100.77:5000"
	first := e.clickPay(customer, link, "")
	if first.status != http.StatusSeeOther || first.invoice == "" || first.cookie == "" {
		t.Fatalf("the customer's click after 100 strangers answered %d (%s): the link is locked", first.status, first.invoice)
	}
	// 100 more strangers while the customer clicks again and pays.
	done := make(chan struct{})
	go func() { defer close(done); strangers(100, 100) }()
	again := e.clickPay(customer, link, first.cookie)
	if again.status != http.StatusSeeOther || again.invoice != first.invoice {
		t.Errorf("the customer's second click went to %q (%d), want its invoice %s", again.invoice, again.status, first.invoice)
	}
	inv := e.invoice(first.invoice)
	if _, err := e.node.Pay(t.Context(), inv.LightningInvoice, inv.Amount.MSat()); err != nil {
		t.Fatal(err)
	}
	e.eventually("the customer's invoice to settle", func() bool { return e.invoice(first.invoice).Status == kassa.InvoiceSettled })
	paidAfter := time.Since(start)
	<-done

	created := len(e.invoiceIDs("store_a"))
	// A stranger's 429 would be a customer's: none while invoices are open.
	t.Logf("pay link under 200 strangers from 200 addresses: %v; %d invoices made (link bucket %d); the flood of 100 took %v; the customer's invoice settled %v after the flood began",
		outcomes, created, limits.PayLinkBurst, flood.Round(time.Millisecond), paidAfter.Round(time.Millisecond))
	if created > limits.PayLinkBurst {
		t.Errorf("%d invoices made, want at most the link's bucket of %d", created, limits.PayLinkBurst)
	}
	if outcomes["invoice"]+outcomes["429"]+outcomes["closed"] != 200 || outcomes["429"] > 0 {
		t.Errorf("stranger outcomes %v", outcomes)
	}
	e.eventually("the pay link to be Completed", func() bool {
		return decode[paymentRequestRecord](t, e.do("GET", "/api/v1/stores/store_a/payment-requests/"+link, "")).Status == kassa.PaymentRequestCompleted
	})
}

// TestPayLinkTicketIsSigned: a cookie that names an invoice it was not
// given for resumes nothing; a forged one falls back to the buckets.
func TestPayLinkTicketIsSigned(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	link := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 10, "title": "Ticket"}`)).ID
	a := e.clickPay("198.51.100.1:1", link, "")
	b := e.clickPay("198.51.100.2:1", link, "")
	if a.invoice == "" || b.invoice == "" || a.invoice == b.invoice {
		t.Fatalf("two customers got %q and %q", a.invoice, b.invoice)
	}
	parts := strings.Split(a.cookie, ".")
	forged := strings.Join([]string{parts[0], link, b.invoice, parts[3]}, ".")
	if c := e.clickPay("198.51.100.1:1", link, forged); c.invoice == b.invoice {
		t.Errorf("a forged cookie resumed another customer's invoice")
	}
	if c := e.clickPay("198.51.100.1:1", link, a.cookie); c.invoice != a.invoice {
		t.Errorf("the customer's own cookie went to %q, want %q", c.invoice, a.invoice)
	}
}
