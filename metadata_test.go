package kassa

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// nested returns a metadata object whose arrays nest to depth levels in
// all (the object counts as one).
func nested(depth int) json.RawMessage {
	return json.RawMessage(`{"a":` + strings.Repeat("[", depth-1) + "1" + strings.Repeat("]", depth-1) + `}`)
}

// TestMetadataDepth is issue 18's finding: metadata nested 5,000 deep
// (10 KB, under the size limit) was accepted, and its dashboard page
// took 4.8 s and 50 MB to render. Creation now refuses more than 32
// levels, naming the field; brackets inside strings do not count.
func TestMetadataDepth(t *testing.T) {
	request := func(meta json.RawMessage) *InvoiceRequest {
		return &InvoiceRequest{Amount: decimal.NewFromInt(1), HasAmount: true, Currency: EUR, Metadata: meta}
	}
	for _, ok := range []json.RawMessage{nested(1), nested(MaxMetadataDepth),
		json.RawMessage(`{"s": "` + strings.Repeat("[{", 2000) + `\"]"}`)} {
		if err := request(ok).Validate(); err != nil {
			t.Errorf("%.60s…: %v", ok, err)
		}
	}
	for _, bad := range []json.RawMessage{nested(MaxMetadataDepth + 1), nested(5000)} {
		err := request(bad).Validate()
		fields := fieldErrors(err)
		if len(fields) != 1 || fields[0].Field != "metadata" || !strings.Contains(fields[0].Message, "32 levels") {
			t.Errorf("%d bytes of metadata: %v", len(bad), err)
		}
	}
	if got := jsonDepth([]byte(`{"a": [1, {"b": "]]]"}], "c": {}}`)); got != 3 {
		t.Errorf("depth %d, want 3", got)
	}
}
