package format

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/kassapay/kassa"
)

// goldenInvoice reads the invoice of the golden file, every field set.
func goldenInvoice(b *testing.B) (*kassa.Invoice, []byte) {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "invoice.v1.json"))
	if err != nil {
		b.Fatal(err)
	}
	var inv kassa.Invoice
	if err := Unmarshal(data, &inv); err != nil {
		b.Fatal(err)
	}
	return &inv, data
}

// BenchmarkInvoice compares writing and reading an invoice snapshot in
// its format with the bare JSON it was before versions.
func BenchmarkInvoice(b *testing.B) {
	inv, data := goldenInvoice(b)
	prefix := make([]byte, 8)
	b.Run("MarshalJSON", func(b *testing.B) {
		for b.Loop() {
			d, _ := json.Marshal(inv)
			_ = append(prefix[:8:8], d...)
		}
	})
	b.Run("MarshalFormat", func(b *testing.B) {
		for b.Loop() {
			_, _ = Append(prefix[:8:8], inv)
		}
	})
	b.Run("UnmarshalJSON", func(b *testing.B) {
		for b.Loop() {
			var v kassa.Invoice
			_ = json.Unmarshal(data, &v)
		}
	})
	b.Run("UnmarshalFormat", func(b *testing.B) {
		for b.Loop() {
			var v kassa.Invoice
			_ = Unmarshal(data, &v)
		}
	})
}
