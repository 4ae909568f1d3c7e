package actors

import (
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// The fuzz targets feed arbitrary bytes, as one command of a StoreCall,
// to the path a node serves another node's call by (serveCall: check,
// decode, dispatch, run) on a node over in-memory Pebble with a store.
// Nothing may panic: not the target, not the node's goroutines (a panic
// serveCall recovers is logged, and fails the target), not an actor (a
// panic protoactor-go's supervisor recovers leaves its requester without
// an answer until the request timeout, which is logged, and fails the
// target). The seeds under
// testdata/fuzz/FuzzXxx are valid encodings of the command, the empty
// one and truncated ones. make test runs each target for 10 s.

// fuzzCommand runs the fuzz target of command (a field of StoreCall's
// oneof call), seeded with seeds, their halves and the empty message.
func fuzzCommand(f *testing.F, command protoreflect.Name, seeds ...proto.Message) {
	fd := (&protos.StoreCall{}).ProtoReflect().Descriptor().Oneofs().ByName("call").Fields().ByName(command)
	if fd == nil {
		f.Fatalf("StoreCall has no command %s", command)
	}
	f.Add([]byte{})
	for _, s := range seeds {
		b, err := proto.Marshal(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	var logs kassatest.LogBuffer
	h := newHarnessWith(f, openMem(f), kassatest.NewTestClock(time.Now()), func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&logs, nil))
		c.RequestTimeout = 5 * time.Second
	})
	st := h.createStore("0", "0")
	var n atomic.Int64
	f.Fuzz(func(t *testing.T, b []byte) {
		call := &protos.StoreCall{StoreId: st.ID, RequestId: fmt.Sprintf("req_fuzz%d", n.Add(1))}
		m := call.ProtoReflect()
		cmd := m.NewField(fd).Message()
		if err := proto.Unmarshal(b, cmd.Interface()); err != nil {
			return // the node's port refuses what does not decode
		}
		m.Set(fd, protoreflect.ValueOfMessage(cmd))
		rep := h.sys.Cluster.serveCall(call)
		if rep == nil {
			t.Fatal("no reply")
		}
		if out := logs.String(); strings.Contains(out, "a forwarded call panicked") || strings.Contains(out, "actor request timed out") {
			t.Fatalf("serving %v panicked or hung:\n%s", call, out)
		}
	})
}

var fuzzTime = timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))

func FuzzCreateStoreCall(f *testing.F) {
	st := kassa.NewStore("st_fuzz", kassa.StoreSettings{Name: "Fuzz", Currency: kassa.EUR}, fuzzTime.AsTime())
	st.APIKeys = []kassa.APIKey{{ID: "key_fuzz", Label: "default", Key: strings.Repeat("a", 64), CreatedAt: st.CreatedAt}}
	fuzzCommand(f, "create_store", &protos.CreateStoreCall{Store: toDoc[*protos.StoreDoc](st)})
}

func FuzzTopUpCall(f *testing.F) {
	fuzzCommand(f, "top_up", &protos.TopUpCall{AmountSat: 1000, Reference: "ref_1"}, &protos.TopUpCall{AmountSat: -1})
}

func FuzzCreateInvoiceCall(f *testing.F) {
	fuzzCommand(f, "create_invoice", &protos.CreateInvoiceCall{Invoice: toDoc[*protos.InvoiceRequestDoc](&kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS, OrderID: "42", Metadata: []byte(`{"a":1}`),
		EnabledMethods: []kassa.PaymentMethod{kassa.PaymentMethod(1)},
	})})
}

func FuzzPayPaymentRequestCall(f *testing.F) {
	fuzzCommand(f, "pay_payment_request", &protos.PayPaymentRequestCall{PaymentRequestId: "pr_1", Session: "s"})
}

func FuzzInvoiceCommandCall(f *testing.F) {
	fuzzCommand(f, "command",
		&protos.InvoiceCommandCall{InvoiceId: "inv_1", Event: &protos.InvoiceEvent{Kind: &protos.InvoiceEvent_MarkedInvalid{MarkedInvalid: &protos.MarkedInvalid{}}}},
		&protos.InvoiceCommandCall{InvoiceId: "inv_1", Event: &protos.InvoiceEvent{Kind: &protos.InvoiceEvent_PaymentObserved{PaymentObserved: &protos.PaymentObserved{Id: "p", Txid: "t", AmountSat: 1}}}})
}

func fuzzPaymentRequestInput() *protos.PaymentRequestInputDoc {
	return toDoc[*protos.PaymentRequestInputDoc](&kassa.PaymentRequestInput{Title: "Fuzz", Amount: decimal.NewFromInt(5), HasAmount: true,
		Currency: kassa.EUR, ExpiryDate: fuzzTime.AsTime()})
}

func FuzzCreatePaymentRequestCall(f *testing.F) {
	fuzzCommand(f, "create_payment_request", &protos.CreatePaymentRequestCall{Input: fuzzPaymentRequestInput()})
}

func FuzzUpdatePaymentRequestCall(f *testing.F) {
	fuzzCommand(f, "update_payment_request", &protos.UpdatePaymentRequestCall{PaymentRequestId: "pr_1", Input: fuzzPaymentRequestInput()})
}

func FuzzArchivePaymentRequestCall(f *testing.F) {
	fuzzCommand(f, "archive_payment_request", &protos.ArchivePaymentRequestCall{PaymentRequestId: "pr_1"})
}

func fuzzWebhookInput() *protos.WebhookInputDoc {
	enabled := true
	return toDoc[*protos.WebhookInputDoc](&kassa.WebhookInput{URL: "https://example.com/hook", Events: []kassa.EventType{kassa.EventNew}, EventsGiven: true, Enabled: &enabled})
}

func FuzzCreateWebhookCall(f *testing.F) {
	fuzzCommand(f, "create_webhook", &protos.CreateWebhookCall{Input: fuzzWebhookInput()})
}

func FuzzUpdateWebhookCall(f *testing.F) {
	fuzzCommand(f, "update_webhook", &protos.UpdateWebhookCall{WebhookId: "wh_1", Input: fuzzWebhookInput()})
}

func FuzzDeleteWebhookCall(f *testing.F) {
	fuzzCommand(f, "delete_webhook", &protos.DeleteWebhookCall{WebhookId: "wh_1"})
}

func FuzzRedeliverCall(f *testing.F) {
	fuzzCommand(f, "redeliver", &protos.RedeliverCall{WebhookId: "wh_1", DeliveryId: "d_1"})
}

func FuzzUpdateStoreCall(f *testing.F) {
	fuzzCommand(f, "update_store", &protos.UpdateStoreCall{Update: &protos.StoreUpdateDoc{Name: "New", Currency: "EUR", ConfirmationsRequired: 2}})
}

func FuzzCreateAPIKeyCall(f *testing.F) {
	fuzzCommand(f, "create_api_key", &protos.CreateAPIKeyCall{Label: "ci"})
}

func FuzzDeleteAPIKeyCall(f *testing.F) {
	fuzzCommand(f, "delete_api_key", &protos.DeleteAPIKeyCall{KeyId: "key_1"})
}

func FuzzRevealAPIKeyCall(f *testing.F) {
	fuzzCommand(f, "reveal_api_key", &protos.RevealAPIKeyCall{KeyId: "key_1", By: "owner@example.com"})
}
