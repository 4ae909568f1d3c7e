package http_test

import (
	"strings"
	"testing"

	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/operator"
)

// TestOperatorPage reads the operator page after one invoice's run: it
// answers only with the admin token; the invoice's journal lists its
// events in order with their times and the ids of the traces that wrote
// them (the create request's, the payment's); the overview counts the
// live actors by kind and shows nothing pending once all was sent.
func TestOperatorPage(t *testing.T) {
	s := newStack(t)
	r := s.payOneInvoice()
	s.do("GET", "/admin/v1/operator/", "", "", 401, nil)
	s.do("GET", "/admin/v1/operator/", "Bearer wrong-token", "", 401, nil)

	var j operator.Overview
	s.do("GET", "/admin/v1/operator/invoices/"+r.invoiceID+"?format=json", "Bearer "+adminToken, "", 200, &j)
	if j.Invoice == nil || j.Invoice.InvoiceID != r.invoiceID || j.Invoice.StoreID != r.storeID {
		t.Fatalf("journal %+v", j.Invoice)
	}
	var kinds []string
	for _, ev := range j.Invoice.Events {
		kinds = append(kinds, ev.Kind)
		if ev.At.IsZero() || ev.TraceID == "" {
			t.Errorf("event %+v lacks its time or trace id", ev)
		}
	}
	if strings.Join(kinds, ",") != "Created,LightningPaid" {
		t.Fatalf("events %v, want Created,LightningPaid", kinds)
	}
	traceOf := func(name string) string {
		for _, sp := range kassahttp.Spans.Ended() {
			if sp.Name() == name && attr(sp, "invoice.id") == r.invoiceID {
				return sp.SpanContext().TraceID().String()
			}
		}
		return ""
	}
	if got, want := j.Invoice.Events[0].TraceID, traceOf("invoice.Create"); got != want {
		t.Errorf("Created event in trace %s, want the creation's %s", got, want)
	}
	if got, want := j.Invoice.Events[1].TraceID, traceOf("invoice.Apply"); got != want {
		t.Errorf("LightningPaid event in trace %s, want the payment's %s", got, want)
	}
	if !j.Invoice.Events[0].At.Before(j.Invoice.Events[1].At) && !j.Invoice.Events[0].At.Equal(j.Invoice.Events[1].At) {
		t.Errorf("events out of order: %v", j.Invoice.Events)
	}
	s.do("GET", "/admin/v1/operator/invoices/nosuchinvoice?format=json", "Bearer "+adminToken, "", 404, nil)

	var o operator.Overview
	s.do("GET", "/admin/v1/operator/?format=json", "Bearer "+adminToken, "", 200, &o)
	live := map[string]int64{}
	for _, a := range o.Actors {
		live[a.Kind] = a.Live
	}
	if live["store"] != 1 || live["webhook"] != 1 || live["forward"] != 1 {
		t.Errorf("live actors %v, want a store, a webhook and a forward actor", live)
	}
	if len(o.Deliveries) != 0 || len(o.Forwards) != 0 || o.Queued != 0 || len(o.Errors) != 0 {
		t.Errorf("pending after the run: %+v", o)
	}
	// The HTML page escapes what it shows and names the sections.
	s.do("GET", "/admin/v1/operator/", "Bearer "+adminToken, "", 200, nil)
}
