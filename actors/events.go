package actors

import (
	"fmt"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
)

// inputOf turns a journaled invoice event into the state machine's input.
func inputOf(ev *protos.InvoiceEvent) (kassa.InvoiceInput, error) {
	at := time.Unix(0, ev.AtUnixNano).UTC()
	switch k := ev.Kind.(type) {
	case *protos.InvoiceEvent_PaymentObserved:
		p := k.PaymentObserved
		return kassa.PaymentObserved{At: at, Payment: kassa.Payment{
			ID:            p.Id,
			Method:        kassa.MethodOnchain,
			TxID:          p.Txid,
			Vout:          p.Vout,
			Amount:        kassa.Sats(p.AmountSat),
			Destination:   p.Destination,
			Confirmations: p.Confirmations,
			NetworkFee:    kassa.Sats(p.NetworkFeeSat),
			FeeRate:       kassa.Sats(p.FeeRate),
			ReplaceByFee:  p.ReplaceByFee,
			BlockHeight:   p.BlockHeight,
			ReceivedAt:    at,
		}}, nil
	case *protos.InvoiceEvent_PaymentDropped:
		return kassa.PaymentDropped{PaymentID: k.PaymentDropped.PaymentId, ReplacedByFee: k.PaymentDropped.ReplacedByFee, At: at}, nil
	case *protos.InvoiceEvent_LightningPaid:
		return kassa.LightningPaid{PaymentHash: k.LightningPaid.PaymentHash, AmountMSat: kassa.MSat(k.LightningPaid.AmountMsat), At: at}, nil
	case *protos.InvoiceEvent_ExpiryReached:
		return kassa.ExpiryReached{At: at}, nil
	case *protos.InvoiceEvent_MonitoringEnded:
		return kassa.MonitoringEnded{At: at}, nil
	case *protos.InvoiceEvent_MarkedInvalid:
		return kassa.MarkedInvalid{At: at}, nil
	case *protos.InvoiceEvent_Archived:
		return kassa.Archived{At: at}, nil
	}
	return nil, fmt.Errorf("invoice event has no input: %T", ev.Kind)
}

// eventOf turns a state machine input into the event to journal.
func eventOf(in kassa.InvoiceInput) *protos.InvoiceEvent {
	switch in := in.(type) {
	case kassa.PaymentObserved:
		p := in.Payment
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_PaymentObserved{PaymentObserved: &protos.PaymentObserved{
			Id: p.ID, Txid: p.TxID, Vout: p.Vout, AmountSat: int64(p.Amount), Destination: p.Destination,
			Confirmations: p.Confirmations, NetworkFeeSat: int64(p.NetworkFee), FeeRate: int64(p.FeeRate), ReplaceByFee: p.ReplaceByFee,
			BlockHeight: p.BlockHeight,
		}}}
	case kassa.PaymentDropped:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_PaymentDropped{PaymentDropped: &protos.PaymentDropped{PaymentId: in.PaymentID, ReplacedByFee: in.ReplacedByFee}}}
	case kassa.LightningPaid:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_LightningPaid{LightningPaid: &protos.LightningPaid{PaymentHash: in.PaymentHash, AmountMsat: int64(in.AmountMSat)}}}
	case kassa.ExpiryReached:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_ExpiryReached{ExpiryReached: &protos.ExpiryReached{}}}
	case kassa.MonitoringEnded:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_MonitoringEnded{MonitoringEnded: &protos.MonitoringEnded{}}}
	case kassa.MarkedInvalid:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_MarkedInvalid{MarkedInvalid: &protos.MarkedInvalid{}}}
	case kassa.Archived:
		return &protos.InvoiceEvent{AtUnixNano: in.At.UnixNano(), Kind: &protos.InvoiceEvent_Archived{Archived: &protos.InvoiceArchived{}}}
	}
	return nil
}

// createdEvent is the first event of a new invoice. It carries no copy
// of the invoice: the snapshot committed in the same batch holds the
// document, so a create encodes and writes the invoice JSON once.
// Older journals hold the document in the event, and load still reads
// it (docs/decisions.md, "Storage").
func createdEvent(inv *kassa.Invoice) *protos.InvoiceEvent {
	return &protos.InvoiceEvent{AtUnixNano: inv.CreatedAt.UnixNano(), Kind: &protos.InvoiceEvent_Created{Created: &protos.InvoiceCreated{}}}
}

func marshal(m proto.Message) ([]byte, error) { return proto.Marshal(m) }

// jsonUnmarshal reads a document an event holds, in its format (package
// format): a newer format than this binary's is refused.
func jsonUnmarshal(data []byte, v any) error { return format.Unmarshal(data, v) }
