package kassa

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/shopspring/decimal"
)

// WebhookFormat is the wire format a webhook was registered in, and so
// the one its deliveries are sent in. It never changes after the create.
type WebhookFormat string

// Webhook formats. The zero value is Coinsnap's, so that a webhook stored
// without a format loads as one.
const (
	// FormatCoinsnap is Kassa's own API: Coinsnap's body and the
	// X-Service-Signature and X-Service-Sig headers (docs/api.md).
	FormatCoinsnap WebhookFormat = ""
	// FormatGreenfield is BTCPay's Greenfield API: its WebhookInvoiceEvent
	// bodies and the BTCPay-Sig header (docs/decisions.md, "BTCPay's
	// Greenfield API under its own base URL").
	FormatGreenfield WebhookFormat = "greenfield"
)

// Greenfield's invoice event types (BTCPay 2.4.1,
// swagger.template.webhooks.json, WebhookEvent.type), the events a
// Greenfield webhook selects and is sent.
const (
	GreenfieldInvoiceCreated         EventType = "InvoiceCreated"
	GreenfieldInvoiceReceivedPayment EventType = "InvoiceReceivedPayment"
	GreenfieldInvoicePaymentSettled  EventType = "InvoicePaymentSettled"
	GreenfieldInvoiceProcessing      EventType = "InvoiceProcessing"
	GreenfieldInvoiceExpired         EventType = "InvoiceExpired"
	GreenfieldInvoiceSettled         EventType = "InvoiceSettled"
	GreenfieldInvoiceInvalid         EventType = "InvoiceInvalid"
)

// GreenfieldEventTypes lists Greenfield's invoice event types: what
// authorizedEvents.everything selects.
var GreenfieldEventTypes = []EventType{
	GreenfieldInvoiceCreated, GreenfieldInvoiceReceivedPayment, GreenfieldInvoicePaymentSettled,
	GreenfieldInvoiceProcessing, GreenfieldInvoiceExpired, GreenfieldInvoiceSettled, GreenfieldInvoiceInvalid,
}

// Greenfield's payout event types (BTCPay's WebhookEventType and
// WebhookPayoutEvent). A Greenfield webhook is sent them only when it
// names them: authorizedEvents.everything selects the invoice events
// alone, so that a webhook made before Kassa had payout events does not
// start receiving them.
const (
	GreenfieldPayoutCreated  EventType = "PayoutCreated"
	GreenfieldPayoutApproved EventType = "PayoutApproved"
	GreenfieldPayoutUpdated  EventType = "PayoutUpdated"
)

// GreenfieldPayoutEventTypes lists Greenfield's payout event types.
var GreenfieldPayoutEventTypes = []EventType{GreenfieldPayoutCreated, GreenfieldPayoutApproved, GreenfieldPayoutUpdated}

// validateGreenfieldEvents checks the events of a Greenfield webhook:
// each one of GreenfieldEventTypes or GreenfieldPayoutEventTypes, each
// field error naming its index.
func (in *WebhookInput) validateGreenfieldEvents() []FieldError {
	var fields []FieldError
	var events []EventType
	for i, e := range in.Events {
		if !slices.Contains(GreenfieldEventTypes, e) && !slices.Contains(GreenfieldPayoutEventTypes, e) {
			fields = append(fields, FieldError{"authorizedEvents.specificEvents[" + strconv.Itoa(i) + "]",
				fmt.Sprintf("unknown event %q: Kassa sends InvoiceCreated, InvoiceReceivedPayment, InvoicePaymentSettled, InvoiceProcessing, InvoiceExpired, InvoiceSettled, InvoiceInvalid, PayoutCreated, PayoutApproved and PayoutUpdated", e)})
			continue
		}
		if !slices.Contains(events, e) {
			events = append(events, e)
		}
	}
	in.Events = events
	if in.Events == nil {
		in.Events = []EventType{}
	}
	return fields
}

// GreenfieldType names the Greenfield event an invoice effect is, if it is
// one: every Emit but one of an unknown type, and every Notice.
func GreenfieldType(e Effect) (EventType, bool) {
	switch e := e.(type) {
	case Emit:
		switch e.Type {
		case EventNew:
			return GreenfieldInvoiceCreated, true
		case EventProcessing:
			return GreenfieldInvoiceProcessing, true
		case EventSettled:
			return GreenfieldInvoiceSettled, true
		case EventExpired:
			return GreenfieldInvoiceExpired, true
		}
	case Notice:
		switch e.Type {
		case NoticePaymentReceived:
			return GreenfieldInvoiceReceivedPayment, true
		case NoticePaymentSettled:
			return GreenfieldInvoicePaymentSettled, true
		case NoticeInvalid:
			return GreenfieldInvoiceInvalid, true
		}
	}
	return "", false
}

// greenfieldBody is BTCPay's WebhookInvoiceEvent and its per-type
// extensions (BTCPayServer.Client/Models/WebhookInvoiceEvent.cs,
// WebhookEvent.cs, BTCPay 2.4.1), in its members' order. A member a type
// does not have is nil and left out.
type greenfieldBody struct {
	DeliveryID         string             `json:"deliveryId"`
	WebhookID          string             `json:"webhookId"`
	OriginalDeliveryID string             `json:"originalDeliveryId"`
	IsRedelivery       bool               `json:"isRedelivery"`
	Type               EventType          `json:"type"`
	Timestamp          int64              `json:"timestamp"`
	StoreID            string             `json:"storeId"`
	InvoiceID          string             `json:"invoiceId"`
	Metadata           json.RawMessage    `json:"metadata"`
	ManuallyMarked     *bool              `json:"manuallyMarked,omitempty"`
	OverPaid           *bool              `json:"overPaid,omitempty"`
	PartiallyPaid      *bool              `json:"partiallyPaid,omitempty"`
	AfterExpiration    *bool              `json:"afterExpiration,omitempty"`
	PaymentMethodID    *string            `json:"paymentMethodId,omitempty"`
	Payment            *GreenfieldPayment `json:"payment,omitempty"`
}

// GreenfieldPayment is a payment as BTCPay's InvoicePaymentMethodDataModel.
// Payment names it: the id "txid-vout" on-chain (the payment hash on
// Lightning), the value in BTC, status Processing until final.
type GreenfieldPayment struct {
	ID           string `json:"id"`
	ReceivedDate int64  `json:"receivedDate"`
	Value        string `json:"value"`
	Fee          string `json:"fee"`
	Status       string `json:"status"`
	Destination  string `json:"destination"`
}

// GreenfieldPaymentOf returns p of inv as Greenfield shows it.
func GreenfieldPaymentOf(inv *Invoice, p *Payment) GreenfieldPayment {
	id, status := p.ID, "Processing"
	if p.Method == MethodOnchain {
		id = p.TxID + "-" + strconv.FormatUint(uint64(p.Vout), 10)
	}
	switch {
	case p.Dropped:
		status = "Invalid"
	case inv.Final(p):
		status = "Settled"
	}
	return GreenfieldPayment{ID: id, ReceivedDate: p.ReceivedAt.Unix(), Value: BTCString(p.Amount), Fee: BTCString(0),
		Status: status, Destination: p.Destination}
}

// BTCString writes satoshis as a BTC amount with 8 decimals.
func BTCString(s Sats) string { return decimal.NewFromInt(int64(s)).Shift(-8).StringFixed(8) }

// GreenfieldMethodID names a payment method as BTCPay 2.4.1 does
// (PaymentMethodId: BTC-CHAIN, BTC-LN).
func GreenfieldMethodID(m PaymentMethod) string {
	if m == MethodLightning {
		return "BTC-LN"
	}
	return "BTC-CHAIN"
}

// GreenfieldPayload is the body of the first delivery deliveryID, to
// webhook webhookID, of invoice effect e (typ is GreenfieldType(e)) of
// inv, as it is after the effect's input, made at now. Each member comes
// from the domain: overPaid is the invoice's Overpaid additional status,
// partiallyPaid the Expired event's underpayment, afterExpiration and
// manuallyMarked the Notice's.
func GreenfieldPayload(inv *Invoice, e Effect, typ EventType, webhookID, deliveryID string, now time.Time) json.RawMessage {
	b := greenfieldBody{
		DeliveryID: deliveryID, WebhookID: webhookID, OriginalDeliveryID: deliveryID, Type: typ, Timestamp: now.Unix(),
		StoreID: inv.StoreID, InvoiceID: inv.ID, Metadata: inv.Metadata,
	}
	if len(b.Metadata) == 0 {
		b.Metadata = json.RawMessage("{}")
	}
	yes := func(v bool) *bool { return &v }
	switch typ {
	case GreenfieldInvoiceSettled:
		b.ManuallyMarked, b.OverPaid = yes(false), yes(inv.AdditionalStatus == StatusOverpaid)
	case GreenfieldInvoiceProcessing:
		b.OverPaid = yes(inv.AdditionalStatus == StatusOverpaid)
	case GreenfieldInvoiceExpired:
		if emit, ok := e.(Emit); ok {
			b.PartiallyPaid = yes(emit.IsUnderpaid)
		}
	case GreenfieldInvoiceInvalid:
		if n, ok := e.(Notice); ok {
			b.ManuallyMarked = yes(n.ManuallyMarked)
		}
	case GreenfieldInvoiceReceivedPayment, GreenfieldInvoicePaymentSettled:
		if n, ok := e.(Notice); ok {
			b.AfterExpiration = yes(n.AfterExpiration)
			for i := range inv.Payments {
				if p := &inv.Payments[i]; p.ID == n.PaymentID {
					method, payment := GreenfieldMethodID(p.Method), GreenfieldPaymentOf(inv, p)
					b.PaymentMethodID, b.Payment = &method, &payment
				}
			}
		}
	}
	out, _ := json.Marshal(b)
	return out
}

// GreenfieldRedelivery is the body of delivery deliveryID that re-sends
// the Greenfield body payload, by hand or automatically: BTCPay's
// redelivery (WebhookSender.CreateRedeliveryRequest) keeps the body, its
// timestamp and its originalDeliveryId, and sets the new deliveryId and
// isRedelivery. A body that is not Greenfield's is returned as it is.
func GreenfieldRedelivery(payload json.RawMessage, deliveryID string) json.RawMessage {
	var probe struct {
		PayoutID string `json:"payoutId"`
	}
	if json.Unmarshal(payload, &probe) == nil && probe.PayoutID != "" {
		var b greenfieldPayoutBody
		if json.Unmarshal(payload, &b) != nil || b.DeliveryID == "" {
			return payload
		}
		b.DeliveryID, b.IsRedelivery = deliveryID, true
		out, _ := json.Marshal(b)
		return out
	}
	var b greenfieldBody
	if json.Unmarshal(payload, &b) != nil || b.DeliveryID == "" {
		return payload
	}
	b.DeliveryID, b.IsRedelivery = deliveryID, true
	out, _ := json.Marshal(b)
	return out
}

// GreenfieldSigHeader carries a Greenfield delivery's signature:
// "sha256=" and the hex HMAC-SHA256 of the raw body with the webhook's
// secret (swagger.template.webhooks.json, WebhookDataCreate.secret).
const GreenfieldSigHeader = "BTCPay-Sig"

// WebhookAddressChecker is a WebhookClient that can check, without
// sending anything, that a URL's host resolves only to addresses the
// service may reach.
type WebhookAddressChecker interface {
	CheckAddress(ctx context.Context, rawURL string) error
}

// PayoutEvents are the Greenfield payout events of a payout's change
// from state from (zero: the payout is new) to to, in order:
// PayoutCreated for a new payout, PayoutApproved when it becomes
// Approved (both for a claim approved at once), PayoutUpdated for any
// other change of state.
func PayoutEvents(from, to PayoutState) []EventType {
	var out []EventType
	if from == 0 {
		out = append(out, GreenfieldPayoutCreated)
		from = PayoutAwaitingApproval
	}
	switch {
	case from == to:
	case to == PayoutApproved:
		out = append(out, GreenfieldPayoutApproved)
	default:
		out = append(out, GreenfieldPayoutUpdated)
	}
	return out
}

// GreenfieldPayoutState names a payout state as BTCPay's PayoutState:
// Approved is AwaitingPayment, and Failed is Cancelled (the money is
// back, as for a cancel).
func GreenfieldPayoutState(s PayoutState) string {
	switch s {
	case PayoutApproved:
		return "AwaitingPayment"
	case PayoutFailed:
		return "Cancelled"
	}
	return s.String()
}

// greenfieldPayoutBody is BTCPay's WebhookPayoutEvent, in its members'
// order.
type greenfieldPayoutBody struct {
	DeliveryID         string    `json:"deliveryId"`
	WebhookID          string    `json:"webhookId"`
	OriginalDeliveryID string    `json:"originalDeliveryId"`
	IsRedelivery       bool      `json:"isRedelivery"`
	Type               EventType `json:"type"`
	Timestamp          int64     `json:"timestamp"`
	StoreID            string    `json:"storeId"`
	PayoutID           string    `json:"payoutId"`
	PullPaymentID      string    `json:"pullPaymentId"`
	PayoutState        string    `json:"payoutState"`
}

// GreenfieldPayoutPayload is the body of the first delivery deliveryID,
// to webhook webhookID, of payout event typ of p (as it is after the
// change), made at now.
func GreenfieldPayoutPayload(p *Payout, typ EventType, webhookID, deliveryID string, now time.Time) json.RawMessage {
	out, _ := json.Marshal(greenfieldPayoutBody{
		DeliveryID: deliveryID, WebhookID: webhookID, OriginalDeliveryID: deliveryID, Type: typ, Timestamp: now.Unix(),
		StoreID: p.StoreID, PayoutID: p.ID, PullPaymentID: p.PullPaymentID, PayoutState: GreenfieldPayoutState(p.State),
	})
	return out
}
