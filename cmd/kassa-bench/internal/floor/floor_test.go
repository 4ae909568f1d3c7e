//go:build bench

// The floor's tests check the bench's yardstick, not Kassa: they carry
// the build tag bench (make test and make bench pass it), so the fast
// tier does not link Pebble and the simulators for them.

package floor

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/kassapay/kassa/kassatest"
)

// invoiceBody is the body of the bench's creates (kassa-bench's load
// generator sends the same).
var invoiceBody = []byte(`{"amount":"12.50","currency":"EUR","orderId":"bench","metadata":{"sku":"A1"}}`)

// newWorkFloor returns the work floor's handler over Pebble in dir.
func newWorkFloor(tb testing.TB) http.Handler {
	tb.Helper()
	h, _ := newWorkFloorDB(tb)
	return h
}

// newWorkFloorDB is newWorkFloor with its Pebble.
func newWorkFloorDB(tb testing.TB) (http.Handler, *pebble.DB) {
	tb.Helper()
	db, err := pebble.Open(tb.TempDir(), &pebble.Options{Logger: quiet{tb}})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { db.Close() })
	w, err := NewWork()
	if err != nil {
		tb.Fatal(err)
	}
	return Handler(db, w), db
}

// quiet keeps Pebble's informational lines out of the benchmark's output.
type quiet struct{ tb testing.TB }

func (quiet) Infof(string, ...any)             {}
func (q quiet) Errorf(format string, a ...any) { q.tb.Logf(format, a...) }
func (q quiet) Fatalf(format string, a ...any) { q.tb.Fatalf(format, a...) }

// TestWorkFloorDoesTheRequiredWork: the work floor answers an invoice
// with a Lightning invoice, an address, the BIP21 URI and both QR codes,
// so that the ratio against it stays honest.
func TestWorkFloorDoesTheRequiredWork(t *testing.T) {
	h := newWorkFloor(t)
	r := httptest.NewRequest("POST", "/api/v1/stores/floor/invoices", bytes.NewReader(invoiceBody))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	var inv Invoice
	if err := json.Unmarshal(w.Body.Bytes(), &inv); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(inv.LightningInvoice, "ln") || inv.OnchainAddress == "" || !strings.HasPrefix(inv.BIP21, "bitcoin:") ||
		!strings.HasPrefix(inv.QRCodes.LightningQR, "data:image/png;base64,") || !strings.HasPrefix(inv.QRCodes.BitcoinQR, "data:image/png;base64,") {
		t.Errorf("work floor's invoice lacks required work: %+v", inv)
	}
}

// TestWorkFloorWritesEachAnswer: the work floor's answer buffers are
// reused, and each create's synced write and answer are still its own
// invoice, whole.
func TestWorkFloorWritesEachAnswer(t *testing.T) {
	h, db := newWorkFloorDB(t)
	answers := map[string][]byte{}
	for range 20 {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("POST", "/api/v1/stores/floor/invoices", bytes.NewReader(invoiceBody)))
		var inv Invoice
		if err := json.Unmarshal(w.Body.Bytes(), &inv); w.Code != http.StatusOK || err != nil {
			t.Fatalf("status %d, %v: %s", w.Code, err, w.Body)
		}
		if cl := w.Header().Get("Content-Length"); cl != strconv.Itoa(w.Body.Len()) {
			t.Errorf("Content-Length %q for %d bytes", cl, w.Body.Len())
		}
		answers[inv.ID] = w.Body.Bytes()
	}
	for id, answer := range answers {
		value, closer, err := db.Get([]byte("floor/" + id))
		if err != nil {
			t.Fatalf("invoice %s: %v", id, err)
		}
		if !bytes.Equal(value, answer) {
			t.Errorf("invoice %s written as %.80s…, answered as %.80s…", id, value, answer)
		}
		closer.Close()
	}
}

// BenchmarkWorkFloor is the work floor's create in-process, as
// http's BenchmarkCreateInvoice runs Kassa's: the two side by side
// (go test -bench 'WorkFloor|CreateInvoice' ./cmd/kassa-bench/internal/floor ./http)
// show Kassa's own share of a create in time and allocations, without
// the load generator.
func BenchmarkWorkFloor(b *testing.B) {
	h := newWorkFloor(b)
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	cpu := kassatest.ProcessCPU()
	defer func() { b.ReportMetric(float64(kassatest.ProcessCPU()-cpu)/float64(b.N)/1e3, "cpu-us/op") }()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := httptest.NewRequest("POST", "/api/v1/stores/floor/invoices", bytes.NewReader(invoiceBody))
			r.Header.Set("Content-Type", "application/json")
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if w.Code != http.StatusOK {
				b.Errorf("status %d: %s", w.Code, w.Body)
				return
			}
		}
	})
}
