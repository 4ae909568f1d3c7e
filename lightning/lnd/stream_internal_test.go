package lnd

import (
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// TestIsSettleReadsTheWire checks isSettle against proto.Unmarshal on
// updates of each state, on fields in any order and repeated (the last
// wins, as in protobuf), and on malformed input, which fails as it does
// for proto.Unmarshal.
func TestIsSettleReadsTheWire(t *testing.T) {
	for _, state := range []lnrpc.Invoice_InvoiceState{lnrpc.Invoice_OPEN, lnrpc.Invoice_SETTLED, lnrpc.Invoice_CANCELED, lnrpc.Invoice_ACCEPTED} {
		for _, index := range []uint64{0, 1, 1 << 40} {
			data, err := proto.Marshal(openInvoiceUpdate(state, index))
			if err != nil {
				t.Fatal(err)
			}
			got, err := isSettle(data)
			if want := state == lnrpc.Invoice_SETTLED && index != 0; err != nil || got != want {
				t.Errorf("state %v, settle index %d: isSettle = %v, %v; want %v", state, index, got, err, want)
			}
		}
	}
	// State first and repeated: the last value counts.
	var data []byte
	data = protowire.AppendTag(data, invoiceStateField, protowire.VarintType)
	data = protowire.AppendVarint(data, uint64(lnrpc.Invoice_SETTLED))
	data = protowire.AppendTag(data, invoiceSettleIndexField, protowire.VarintType)
	data = protowire.AppendVarint(data, 3)
	data = protowire.AppendTag(data, invoiceStateField, protowire.VarintType)
	data = protowire.AppendVarint(data, uint64(lnrpc.Invoice_CANCELED))
	var inv lnrpc.Invoice
	if err := proto.Unmarshal(data, &inv); err != nil || inv.State != lnrpc.Invoice_CANCELED {
		t.Fatalf("proto.Unmarshal = %v, %v", inv.State, err)
	}
	if got, err := isSettle(data); err != nil || got {
		t.Errorf("settled then canceled: isSettle = %v, %v; want false", got, err)
	}
	whole, _ := proto.Marshal(openInvoiceUpdate(lnrpc.Invoice_SETTLED, 5))
	for _, bad := range [][]byte{whole[:len(whole)-1], {0xff}, append(protowire.AppendTag(nil, invoiceStateField, protowire.VarintType), 0x80)} {
		if err := proto.Unmarshal(bad, &lnrpc.Invoice{}); err == nil {
			t.Fatalf("proto.Unmarshal accepts %x", bad)
		}
		if _, err := isSettle(bad); err == nil {
			t.Errorf("isSettle accepts %x, which proto.Unmarshal refuses", bad)
		}
	}
}

// openInvoiceUpdate is an update of lnd's invoice stream as lnd sends it
// for an invoice it has just added, with the state and settle index
// given.
func openInvoiceUpdate(state lnrpc.Invoice_InvoiceState, settleIndex uint64) *lnrpc.Invoice {
	req := make([]byte, 360)
	for i := range req {
		req[i] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"[i%32]
	}
	return &lnrpc.Invoice{
		Memo: "Bench order 42", RHash: make([]byte, 32), ValueMsat: 1_000_000, Value: 1000, CreationDate: 1_700_000_000,
		PaymentRequest: "lnbcrt10u1p" + string(req), Expiry: 900, CltvExpiry: 80, AddIndex: 41, PaymentAddr: make([]byte, 32),
		State: state, SettleIndex: settleIndex,
		Features: map[uint32]*lnrpc.Feature{
			9: {Name: "tlv-onion", IsKnown: true}, 14: {Name: "payment-addr", IsRequired: true, IsKnown: true},
			17: {Name: "multi-path-payments", IsKnown: true},
		},
	}
}

// BenchmarkInvoiceUpdate is what each update of lnd's invoice stream
// for an added invoice costs to read: decoded in full (as before), and
// as the stream's codec reads it now.
func BenchmarkInvoiceUpdate(b *testing.B) {
	data, err := proto.Marshal(openInvoiceUpdate(lnrpc.Invoice_OPEN, 0))
	if err != nil {
		b.Fatal(err)
	}
	b.Run("proto.Unmarshal", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var inv lnrpc.Invoice
			if err := proto.Unmarshal(data, &inv); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("settleCodec", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var u streamedInvoice
			if err := (settleCodec{}).Unmarshal(data, &u); err != nil || u.settle != nil {
				b.Fatal(err)
			}
		}
	})
}
