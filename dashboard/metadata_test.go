package dashboard

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// legacyMetadata is a Reader whose invoices with the metadata
// {"legacy":true} come back with other metadata: a record stored before
// the API bounded metadata nesting.
type legacyMetadata struct {
	kassa.Reader
	meta json.RawMessage
}

func (l legacyMetadata) Invoice(ctx context.Context, id string) (*kassa.Invoice, error) {
	inv, err := l.Reader.Invoice(ctx, id)
	if err == nil && string(inv.Metadata) == `{"legacy":true}` {
		inv.Metadata = l.meta
	}
	return inv, err
}

// TestDeepMetadataPageIsBounded: an invoice whose stored metadata is
// nested 5,000 levels deep (10 KB) renders as a page of a few kilobytes
// that says what it left out. Before, the page indented every level: 50
// MB in seconds.
func TestDeepMetadataPageIsBounded(t *testing.T) {
	deep := []byte(`{"a":` + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + `}`)
	e := newEnv(t, func(d *Deps) { d.Reader = legacyMetadata{d.Reader, deep} })
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true,
		Currency: kassa.EUR, Metadata: json.RawMessage(`{"legacy":true}`)})
	if err != nil {
		t.Fatal(err)
	}
	code, body, _ := c.get("/dashboard/stores/" + st.ID + "/invoices/" + inv.ID)
	if code != 200 {
		t.Fatalf("invoice page: %d", code)
	}
	if len(body) > 64<<10 {
		t.Fatalf("the invoice page is %d bytes", len(body))
	}
	if !strings.Contains(body, "[…]") {
		t.Errorf("the page does not show the cut-off levels as […]")
	}

	// Wide metadata is cut at the size bound, and says so.
	wide := `{"items":[` + strings.TrimSuffix(strings.Repeat(`{"sku":"ABC-123","qty":1},`, 2000), ",") + `]}`
	e.dash.Reader = legacyMetadata{e.db, json.RawMessage(wide)}
	_, body, _ = c.get("/dashboard/stores/" + st.ID + "/invoices/" + inv.ID)
	if len(body) > 64<<10 || !strings.Contains(body, msg("inv.metatruncated")) {
		t.Errorf("wide metadata: page of %d bytes, truncation said: %v", len(body), strings.Contains(body, msg("inv.metatruncated")))
	}
}

// TestRenderMetadata: metadata within the bounds is indented as
// json.Indent does, keys in their order; deeper levels are elided.
func TestRenderMetadata(t *testing.T) {
	for _, doc := range []string{
		`{}`,
		`{"order":"A-1","n":1.50,"ok":true,"none":null,"tags":[],"obj":{},"nested":{"a":[1,2,{"b":"<x>"}],"z":"é"}}`,
		`{"b":1,"a":2}`,
	} {
		var want bytes.Buffer
		if err := json.Indent(&want, []byte(doc), "", "  "); err != nil {
			t.Fatal(err)
		}
		if got := renderMetadata([]byte(doc)); got != want.String() {
			t.Errorf("%s:\n got %s\nwant %s", doc, got, want.String())
		}
	}
	deep := `{"a":{"b":{"c":{"d":{"e":{"f":{"g":{"h":{"i":1}},"g2":[1]}}}}}}}`
	got := renderMetadata([]byte(deep))
	if !strings.Contains(got, `"h": {…}`) || strings.Contains(got, `"i"`) || !strings.Contains(got, `"g2": [`) {
		t.Errorf("deep:\n%s", got)
	}
	if got := renderMetadata([]byte(`{"a":`)); got != "" {
		t.Errorf("broken JSON: %q", got)
	}
}
