package http_test

import (
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	kassahttp "github.com/kassapay/kassa/http"
)

// TestOneInvoiceTrace follows one invoice: it is created over HTTP and
// paid by Lightning over HTTP (the checkout page's simulation button).
// The payment's trace runs, one parent to the next, from its HTTP span
// through the Lightning event, the invoice actor and its Pebble commit
// to the webhook delivery of the settle and the forward of the money to
// the merchant's Lightning address (with its own commits); the delivery
// links back to the invoice's creation, whose trace runs from the create
// request's HTTP span through the actor to its commit and the delivery
// of its New event. No attribute carries the API key, the admin token
// or the webhook secret.
func TestOneInvoiceTrace(t *testing.T) {
	s := newStack(t)
	r := s.payOneInvoice()
	var delivered []sdktrace.ReadOnlySpan
	s.eventually("both deliveries' spans", func() bool {
		delivered = delivered[:0]
		for _, sp := range kassahttp.Spans.Ended() {
			if sp.Name() == "webhook.Deliver" && attr(sp, "invoice.id") == r.invoiceID {
				delivered = append(delivered, sp)
			}
		}
		return len(delivered) == 3 // New, Processing, Settled
	})
	all := kassahttp.Spans.Ended()
	byID := map[trace.SpanID]sdktrace.ReadOnlySpan{}
	for _, sp := range all {
		byID[sp.SpanContext().SpanID()] = sp
	}
	// path returns the names from sp up to its trace's root.
	path := func(sp sdktrace.ReadOnlySpan) []string {
		var names []string
		for sp != nil {
			names = append(names, sp.Name())
			if sp.Parent().IsValid() && sp.Parent().TraceID() != sp.SpanContext().TraceID() {
				t.Errorf("%s has a parent in another trace", sp.Name())
			}
			sp = byID[sp.Parent().SpanID()]
		}
		slices.Reverse(names)
		return names
	}
	var created, settled sdktrace.ReadOnlySpan
	for _, sp := range delivered {
		switch attr(sp, "event.type") {
		case "New":
			created = sp
		case "Settled":
			settled = sp
		}
	}
	if created == nil || settled == nil {
		t.Fatalf("deliveries %v: want New and Settled", delivered)
	}
	want := []string{"POST /api/v1/stores/{storeId}/invoices", "actors.CreateInvoice", "invoice.Create", "webhook.Deliver"}
	if got := path(created); !slices.Equal(got, want) {
		t.Errorf("creation's delivery: trace path %v, want %v", got, want)
	}
	want = []string{"POST /checkout/{invoiceId}/sim/pay", "actors.HandleLightningEvent", "invoice.Apply", "webhook.Deliver"}
	if got := path(settled); !slices.Equal(got, want) {
		t.Errorf("settle's delivery: trace path %v, want %v", got, want)
	}
	if attr(settled, "webhook.id") != r.webhookID || attr(settled, "store.id") != r.storeID {
		t.Errorf("settle's delivery attributes %v", settled.Attributes())
	}

	// The settle's delivery links to the invoice's creation.
	create := byID[created.Parent().SpanID()]
	if len(settled.Links()) != 1 || settled.Links()[0].SpanContext.SpanID() != create.SpanContext().SpanID() {
		t.Errorf("settle's delivery links %v, want the invoice.Create span %s", settled.Links(), create.SpanContext().SpanID())
	}

	// In the payment's trace: the invoice actor's commit and the forward,
	// whose commits are its children.
	apply := byID[settled.Parent().SpanID()]
	payTrace := apply.SpanContext().TraceID()
	var commits, forwardCommits int
	var forward sdktrace.ReadOnlySpan
	for _, sp := range all {
		if sp.SpanContext().TraceID() != payTrace {
			continue
		}
		switch {
		case sp.Name() == "pebble.Commit" && sp.Parent().SpanID() == apply.SpanContext().SpanID():
			commits++
		case sp.Name() == "forward.Step" && sp.Parent().SpanID() == apply.SpanContext().SpanID():
			forward = sp
		}
	}
	if commits != 1 {
		t.Errorf("%d commits under invoice.Apply, want 1", commits)
	}
	if forward == nil {
		t.Fatal("no forward.Step span in the payment's trace, under invoice.Apply")
	}
	if attr(forward, "forward.id") == "" || attr(forward, "store.id") != r.storeID {
		t.Errorf("forward attributes %v", forward.Attributes())
	}
	for _, sp := range all {
		if sp.Name() == "pebble.Commit" && sp.Parent().SpanID() == forward.SpanContext().SpanID() {
			forwardCommits++
		}
	}
	if forwardCommits < 2 {
		t.Errorf("%d commits under forward.Step, want the forward, its attempt and its success", forwardCommits)
	}
	if got := path(forward); !slices.Equal(got, []string{"POST /checkout/{invoiceId}/sim/pay", "actors.HandleLightningEvent", "invoice.Apply", "forward.Step"}) {
		t.Errorf("forward's trace path %v", got)
	}

	// No secret in any attribute of any span.
	for _, sp := range all {
		for _, a := range sp.Attributes() {
			v := a.Value.String()
			for _, secret := range []string{r.apiKey, r.secret, adminToken} {
				if secret != "" && strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s carries a secret", sp.Name(), a.Key)
				}
			}
		}
	}
}

// attr returns the string value of the attribute key of sp, or "".
func attr(sp sdktrace.ReadOnlySpan, key attribute.Key) string {
	for _, a := range sp.Attributes() {
		if a.Key == key {
			return a.Value.String()
		}
	}
	return ""
}
