package webhook

import "encoding/json"

// Event types: the values of Event.Type.
const (
	// EventNew is sent when an invoice is created.
	EventNew = "New"
	// EventProcessing is sent when a payment is detected. On-chain the
	// payment still awaits confirmation; on Lightning, Settled follows at
	// once.
	EventProcessing = "Processing"
	// EventSettled is sent when the payment is fully confirmed.
	EventSettled = "Settled"
	// EventExpired is sent when an invoice expires without full payment.
	EventExpired = "Expired"
)

// Additional statuses: the values of Event.AdditionalStatus.
const (
	// StatusNone means nothing beyond the event type is to be said.
	StatusNone = "None"
	// StatusUnderpaid is set on Expired events of invoices that received
	// less than their amount, short by more than the store's tolerance.
	StatusUnderpaid = "Underpaid"
	// StatusOverpaid is set on Settled events of invoices paid more than
	// their amount.
	StatusOverpaid = "Overpaid"
	// StatusPaidAfterExpiration is set on Settled events of invoices paid
	// after they expired.
	StatusPaidAfterExpiration = "PaidAfterExpiration"
)

// Event is the JSON body of a webhook delivery.
//
// A redelivered event carries only Type and InvoiceID: Metadata is nil,
// AdditionalStatus is empty and IsUnderpaid, PartiallyPaid, Underpaid,
// OverPaid and AfterExpiration are nil.
type Event struct {
	// Type is one of EventNew, EventProcessing, EventSettled, EventExpired.
	Type string `json:"type"`
	// InvoiceID identifies the invoice the event is about.
	InvoiceID string `json:"invoiceId"`
	// Metadata is the JSON object given when the invoice was created, as
	// the service stored it; its orderId member carries the merchant's
	// order id (see OrderID).
	Metadata json.RawMessage `json:"metadata,omitempty"`
	// AdditionalStatus is one of StatusNone, StatusUnderpaid,
	// StatusOverpaid, StatusPaidAfterExpiration.
	AdditionalStatus string `json:"additionalStatus,omitempty"`
	// IsUnderpaid is set on Expired events: true when the invoice was
	// partially paid.
	IsUnderpaid *bool `json:"isUnderpaid,omitempty"`
	// PartiallyPaid and Underpaid repeat IsUnderpaid on Expired events,
	// under the names that existing shop plugins read.
	PartiallyPaid *bool `json:"partiallyPaid,omitempty"`
	Underpaid     *bool `json:"underpaid,omitempty"`
	// OverPaid and AfterExpiration are set on Settled events: true when
	// AdditionalStatus is StatusOverpaid, respectively
	// StatusPaidAfterExpiration.
	OverPaid        *bool `json:"overPaid,omitempty"`
	AfterExpiration *bool `json:"afterExpiration,omitempty"`
}

// OrderID returns metadata.orderId: the string, or the digits of a number,
// as the merchant gave it. It returns "" when the event has no metadata or
// no such member.
func (e *Event) OrderID() string {
	if len(e.Metadata) == 0 {
		return ""
	}
	var m struct {
		OrderID json.RawMessage `json:"orderId"`
	}
	if json.Unmarshal(e.Metadata, &m) != nil || len(m.OrderID) == 0 {
		return ""
	}
	switch c := m.OrderID[0]; {
	case c == '"':
		var id string
		if json.Unmarshal(m.OrderID, &id) == nil {
			return id
		}
	case c == '-' || c >= '0' && c <= '9':
		return string(m.OrderID)
	}
	return ""
}
