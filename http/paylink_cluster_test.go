package http

import (
	"bytes"
	"fmt"
	"net/http"
	"testing"

	"github.com/kassapay/kassa/kassatest/apitest"
)

// TestPayLinkTicketHonouredByAnotherNode: the nodes of a cluster behind
// one load balancer share the pay-link ticket key (Deps.TicketKey), so a
// ticket one node issued, for an invoice it made or handed out, resumes
// that invoice on another: before, each node signed with a key of its
// own, and the other node read the ticket as forged and sent the customer
// to its buckets (a 429, or a new invoice).
func TestPayLinkTicketHonouredByAnotherNode(t *testing.T) {
	t.Parallel()
	key := bytes.Repeat([]byte{7}, 32)
	e := newEnv(t, withDeps(func(d *Deps) { d.TicketKey = key }))
	link := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 10, "title": "Ticket"}`)).ID
	limits := DefaultPublicLimits()

	nodeA := e.h
	nodeB := apitest.Handler(t, NewHandler(e.deps)) // another node over the same store
	onB := func(f func()) {
		e.h = nodeB
		defer func() { e.h = nodeA }()
		f()
	}

	// A customer gets an invoice on node A.
	customer := "198.51.100.7:1"
	first := e.clickPay(customer, link, "")
	if first.status != http.StatusSeeOther || first.cookie == "" {
		t.Fatalf("first click on node A: %d", first.status)
	}
	// Node B's bucket of the customer's address is empty: only the ticket
	// can take the customer back to its invoice there.
	onB(func() {
		for range limits.PayBurst {
			e.clickPay(customer, link, "")
		}
		if c := e.clickPay(customer, link, first.cookie); c.status != http.StatusSeeOther || c.invoice != first.invoice {
			t.Errorf("node B sent the customer with node A's ticket to %q (%d), want its invoice %s", c.invoice, c.status, first.invoice)
		}
	})

	// Strangers empty node A's bucket of the link; a new customer is
	// handed one of their invoices, and its ticket holds on node B.
	for i := range limits.PayLinkBurst {
		e.clickPay(fmt.Sprintf("10.9.0.%d:1", i+1), link, "")
	}
	handed := e.clickPay("198.51.100.8:1", link, "")
	if handed.status != http.StatusSeeOther || handed.cookie == "" {
		t.Fatalf("a new customer after the strangers on node A: %d", handed.status)
	}
	onB(func() {
		for range limits.PayBurst {
			e.clickPay("198.51.100.8:1", link, "")
		}
		if c := e.clickPay("198.51.100.8:1", link, handed.cookie); c.status != http.StatusSeeOther || c.invoice != handed.invoice {
			t.Errorf("node B sent the customer handed %s on node A to %q (%d)", handed.invoice, c.invoice, c.status)
		}
	})
}
