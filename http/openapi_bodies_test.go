package http

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa/kassatest/apitest"
)

// TestRequestBodiesDocumented compares the fields each handler reads from
// a request body with the properties of the document's request schema,
// both ways: request schemas are open (unknown fields are ignored), so
// the exchange checks alone would not notice a field added to one side.
func TestRequestBodiesDocumented(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	bodies := map[string]any{
		"InvoiceRequest":      createInvoiceBody{},
		"PaymentRequestInput": paymentRequestBody{},
		"WebhookUpdate":       webhookBody{},
		"AdminStoreInput":     createStoreBody{},
		"AdminTopUpInput":     topUpBody{},
		"AdminSimPayInput":    simPayBody{},
		"AdminSimMineInput":   simMineBody{},
		"RefundInput":         refundBody{},
		"PullPaymentInput":    pullPaymentBody{},
		"ClaimInput":          claimBody{},
		"APIKeyCreate":        apiKeyBody{},
		"StoreUpdate":         storeUpdateBody{},
	}
	for name, body := range bodies {
		schema := doc.Components.Schemas[name]
		if schema == nil {
			t.Errorf("no schema %s in the document", name)
			continue
		}
		var documented []string
		for prop := range schema.Value.Properties {
			documented = append(documented, prop)
		}
		read := jsonFields(reflect.TypeOf(body))
		slices.Sort(documented)
		if !slices.Equal(read, documented) {
			t.Errorf("%s: the handler reads %v, the document has %v", name, read, documented)
		}
	}
	// Each body schema is the one its operations take.
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			if op.RequestBody == nil {
				continue
			}
			ref := op.RequestBody.Value.Content.Get("application/json").Schema.Ref
			name := ref[strings.LastIndex(ref, "/")+1:]
			if _, ok := bodies[name]; !ok && name != "WebhookCreate" {
				t.Errorf("%s %s takes %s, which this test does not compare", method, path, name)
			}
		}
	}
}

// jsonFields returns the JSON names of t's fields, sorted.
func jsonFields(t reflect.Type) []string {
	var names []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}
