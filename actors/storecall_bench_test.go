package actors

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

func benchInvoiceRequest() *kassa.InvoiceRequest {
	return &kassa.InvoiceRequest{
		Amount: decimal.RequireFromString("49.90"), HasAmount: true, Currency: kassa.EUR,
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodOnchain, kassa.MethodLightning},
		BuyerEmail:     "buyer@shop.example", RedirectURL: "https://shop.example/thanks", OrderID: "order-1042",
		Metadata: json.RawMessage(`{"orderUrl":"https://shop.example/orders/1042","posData":{"cart":3}}`),
	}
}

func benchInvoice() *kassa.Invoice {
	idx := uint32(7)
	now := time.Now().UTC()
	return &kassa.Invoice{
		ID: kassa.NewID(""), StoreID: kassa.NewID(""), Amount: 51_234, InvoiceAmount: decimal.RequireFromString("49.90"),
		Currency: kassa.EUR, StoreCurrency: kassa.EUR, ExchangeRate: decimal.RequireFromString("97400.12"),
		RequestRate: decimal.RequireFromString("97400.12"), OrderID: "order-1042", BuyerEmail: "buyer@shop.example",
		RedirectURL: "https://shop.example/thanks", Metadata: json.RawMessage(`{"orderUrl":"https://shop.example/orders/1042"}`),
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodOnchain, kassa.MethodLightning},
		OnchainAddress: "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080", DerivationIndex: &idx,
		LightningInvoice: "lnbcrt512340n1pjexampleexampleexampleexampleexampleexampleexampleexampleexampleexampleexample",
		PaymentHash:      "f3b1c2d4e5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8f90",
		PercentFee:       decimal.RequireFromString("1"), Tolerance: decimal.RequireFromString("0.25"), ConfirmationsRequired: 1,
		CreatedAt: now, UpdatedAt: now, ExpiresAt: now.Add(15 * time.Minute), MonitorUntil: now.Add(24 * time.Hour),
	}
}

// BenchmarkCreateInvoiceCall encodes a CreateInvoice call as the
// forwarding node does, sends it through the wire format and decodes it
// as the store's node does. The reply carries the created invoice. The
// JSON-inside-protobuf envelope it replaced measured about twice the
// time and wire bytes ("Typed cluster calls" in docs/decisions.md).
func BenchmarkCreateInvoiceCall(b *testing.B) {
	storeID, reqID := kassa.NewID(""), kassa.NewID("req_")
	trace := map[string]string{"traceparent": "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}
	b.Run("typed", func(b *testing.B) {
		r, inv := benchInvoiceRequest(), benchInvoice()
		wire := 0
		defer func() { b.ReportMetric(float64(wire), "wire-B/op") }()
		b.ReportAllocs()
		for b.Loop() {
			data, _ := proto.Marshal(&protos.StoreCall{StoreId: storeID, RequestId: reqID, Trace: trace,
				Call: &protos.StoreCall_CreateInvoice{CreateInvoice: &protos.CreateInvoiceCall{Invoice: toDoc[*protos.InvoiceRequestDoc](r)}}})
			wire = len(data)
			var call protos.StoreCall
			if err := proto.Unmarshal(data, &call); err != nil {
				b.Fatal(err)
			}
			if _, err := fromDoc[kassa.InvoiceRequest](call.GetCreateInvoice().GetInvoice()); err != nil {
				b.Fatal(err)
			}
			data, _ = proto.Marshal(&protos.StoreCallReply{Value: &protos.StoreCallReply_Invoice{Invoice: toDoc[*protos.InvoiceDoc](inv)}})
			wire += len(data)
			var rep protos.StoreCallReply
			if err := proto.Unmarshal(data, &rep); err != nil {
				b.Fatal(err)
			}
			if _, err := invoiceResult.get(&rep); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkCreateInvoiceLocalConversion is what the single-node path
// added to a CreateInvoice while it shared the cluster's typed call
// (route): the request and the invoice converted to their mirrors and
// back, without the wire format. A command's body now runs without them
// on the store's node ("An actor runtime and an application service").
func BenchmarkCreateInvoiceLocalConversion(b *testing.B) {
	r, inv := benchInvoiceRequest(), benchInvoice()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := fromDoc[kassa.InvoiceRequest](toDoc[*protos.InvoiceRequestDoc](r)); err != nil {
			b.Fatal(err)
		}
		if _, err := fromDoc[kassa.Invoice](toDoc[*protos.InvoiceDoc](inv)); err != nil {
			b.Fatal(err)
		}
	}
}
