package kassa

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"
)

// Webhook is a store's registration of a URL for invoice events.
type Webhook struct {
	ID      string `json:"id"`
	StoreID string `json:"storeId"`
	URL     string `json:"url"`
	// Secret signs every delivery (HMAC-SHA256). It is a credential of its
	// own, never the API key.
	Secret string `json:"secret"`
	// Events are the selected event types; none selected receives nothing.
	Events  []EventType `json:"events"`
	Enabled bool        `json:"enabled"`
	// AutomaticRedelivery opts in to durable retries with backoff for
	// failures that may pass later (5xx, 408, 429, network errors).
	AutomaticRedelivery bool      `json:"automaticRedelivery"`
	CreatedAt           time.Time `json:"createdAt"`
	UpdatedAt           time.Time `json:"updatedAt"`
	// Format is the API the webhook was registered through, and the
	// format of its deliveries; empty (Coinsnap's) in records made before
	// there were two.
	Format WebhookFormat `json:"format,omitempty"`
}

// Selects reports whether the webhook wants events of type t. Invalid
// may be selected but is never sent.
func (w *Webhook) Selects(t EventType) bool {
	return t != EventInvalid && slices.Contains(w.Events, t)
}

// NewWebhook returns the webhook that a validated create request makes:
// the events Validate settled on (all four when left out), enabled unless
// the request says otherwise, automatic redelivery only when asked, and a
// new secret when none was given.
func NewWebhook(id, storeID string, in *WebhookInput, now time.Time) *Webhook {
	w := &Webhook{ID: id, StoreID: storeID, URL: in.URL, Secret: in.Secret, Events: slices.Clone(in.Events),
		Enabled: true, CreatedAt: now, UpdatedAt: now, Format: in.Format}
	if w.Events == nil {
		w.Events = []EventType{}
	}
	if w.Secret == "" {
		w.Secret = NewSecret()
	}
	if in.Enabled != nil {
		w.Enabled = *in.Enabled
	}
	if in.AutomaticRedelivery != nil {
		w.AutomaticRedelivery = *in.AutomaticRedelivery
	}
	return w
}

// Update returns w as a validated update request changes it; w itself is
// left as it was. What the request leaves out stays: an empty url or
// secret, events not given, enabled or automaticRedelivery nil. Events
// given replace the selection, and an empty list selects none. The id,
// store and creation time never change; UpdatedAt becomes now. A changed
// URL must be checked by the caller before the result is saved.
func (w *Webhook) Update(in *WebhookInput, now time.Time) *Webhook {
	next := *w
	next.Events = slices.Clone(w.Events)
	if in.URL != "" {
		next.URL = in.URL
	}
	if in.EventsGiven {
		next.Events = slices.Clone(in.Events)
		if next.Events == nil {
			next.Events = []EventType{}
		}
	}
	if in.Secret != "" {
		next.Secret = in.Secret
	}
	if in.Enabled != nil {
		next.Enabled = *in.Enabled
	}
	if in.AutomaticRedelivery != nil {
		next.AutomaticRedelivery = *in.AutomaticRedelivery
	}
	next.UpdatedAt = now
	return &next
}

// MaxWebhooksPerStore bounds registrations, and so the fan-out of one
// invoice event.
const MaxWebhooksPerStore = 50

// WebhookInput is a create or update request for a webhook. Pointers and
// EventsGiven tell a field left out from one set to its zero value.
type WebhookInput struct {
	URL                 string
	Events              []EventType
	EventsGiven         bool
	Secret              string
	Enabled             *bool
	AutomaticRedelivery *bool
	// Format is the create's format (FormatGreenfield: events are
	// Greenfield's types, and the URL is not probed); an update keeps the
	// webhook's.
	Format WebhookFormat
}

// EventInvalid may be selected by a webhook, as shop plugins do, but no
// event of this type is ever sent: an invoice marked invalid sends none.
const EventInvalid EventType = "Invalid"

// ParseEventType reads an event type as the API names it: one of
// EventTypes, or EventInvalid.
func ParseEventType(s string) (EventType, error) {
	for _, t := range EventTypes {
		if string(t) == s {
			return t, nil
		}
	}
	if s == string(EventInvalid) {
		return EventInvalid, nil
	}
	return "", Errorf(Invalid, "unknown event %q: use New, Processing, Settled or Expired (Invalid is accepted and never sent)", s)
}

// Validate checks the input. On create, events left out mean all four
// (what existing clients expect); an explicit empty list means none.
func (in *WebhookInput) Validate(create bool) error {
	var fields []FieldError
	if create && in.URL == "" {
		fields = append(fields, FieldError{"url", "is required"})
	}
	if len(in.URL) > MaxURL {
		fields = append(fields, FieldError{"url", "must be at most 2048 characters"})
	}
	if in.Format == FormatGreenfield {
		fields = append(fields, in.validateGreenfieldEvents()...)
		if create && !in.EventsGiven {
			in.Events = slices.Clone(GreenfieldEventTypes)
		}
		return in.finishValidate(fields)
	}
	seen := map[EventType]bool{}
	var events []EventType
	for _, e := range in.Events {
		t, err := ParseEventType(string(e))
		if err != nil {
			fields = append(fields, FieldError{"events", ErrorMessage(err)})
			continue
		}
		if !seen[t] {
			seen[t] = true
			events = append(events, t)
		}
	}
	in.Events = events
	if create && !in.EventsGiven {
		in.Events = append([]EventType(nil), EventTypes...)
	}
	if in.Events == nil && in.EventsGiven {
		in.Events = []EventType{}
	}
	return in.finishValidate(fields)
}

// finishValidate adds the checks both formats share to fields.
func (in *WebhookInput) finishValidate(fields []FieldError) error {
	if in.Format != FormatCoinsnap && in.Format != FormatGreenfield {
		fields = append(fields, FieldError{"format", fmt.Sprintf("unknown webhook format %q", in.Format)})
	}
	if in.Secret != "" && (len(in.Secret) < 8 || len(in.Secret) > 255) {
		fields = append(fields, FieldError{"secret", "must be 8 to 255 characters"})
	}
	if len(fields) > 0 {
		return InvalidFields(fields)
	}
	return nil
}

// DeliveryStatus is the state of one delivery attempt. The numbers are on
// disk.
type DeliveryStatus uint8

// Delivery states.
const (
	DeliveryPending   DeliveryStatus = 1
	DeliveryDelivered DeliveryStatus = 2
	DeliveryFailed    DeliveryStatus = 3
)

func (s DeliveryStatus) String() string {
	switch s {
	case DeliveryPending:
		return "Pending"
	case DeliveryDelivered:
		return "Delivered"
	case DeliveryFailed:
		return "Failed"
	}
	return "Unknown"
}

// Delivery is one attempt to send an event to a webhook: what was sent,
// and what the receiver answered.
type Delivery struct {
	ID        string          `json:"id"`
	WebhookID string          `json:"webhookId"`
	StoreID   string          `json:"storeId"`
	InvoiceID string          `json:"invoiceId"`
	Type      EventType       `json:"type"`
	Payload   json.RawMessage `json:"payload"`
	// Headers are the request headers sent (signatures, not the secret).
	Headers      map[string]string `json:"headers,omitempty"`
	Status       DeliveryStatus    `json:"status"`
	StatusCode   int               `json:"statusCode,omitempty"`
	ResponseBody string            `json:"responseBody,omitempty"`
	Duration     time.Duration     `json:"duration,omitempty"`
	Error        string            `json:"error,omitempty"`
	// EventID names the invoice event the delivery carries: one id per
	// event, the same on every endpoint, kept by retries and redeliveries.
	EventID string `json:"eventId,omitempty"`
	// RedeliveryOf is the delivery this one re-sends, by hand or
	// automatically; Attempt counts automatic retries (0 for the first).
	RedeliveryOf string    `json:"redeliveryOf,omitempty"`
	Attempt      int       `json:"attempt,omitempty"`
	NotBefore    time.Time `json:"notBefore,omitzero"`
	// OutboxSeq orders the endpoint's pending deliveries; the store sets
	// it when the delivery first enters the outbox.
	OutboxSeq uint64 `json:"outboxSeq,omitempty"`
	// TraceParent is the W3C traceparent of the span that queued the
	// delivery, and CreationTrace that of its invoice's creation: the
	// delivery's span continues the one and links to the other. Neither
	// is shown to merchants.
	TraceParent   string    `json:"traceParent,omitempty"`
	CreationTrace string    `json:"creationTrace,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	SentAt        time.Time `json:"sentAt,omitzero"`
}

// Event returns the id of the event d carries. Deliveries recorded before
// event ids existed answer the id of the event's first delivery, which
// their retries and redeliveries name in RedeliveryOf.
func (d *Delivery) Event() string {
	switch {
	case d.EventID != "":
		return d.EventID
	case d.RedeliveryOf != "":
		return d.RedeliveryOf
	}
	return d.ID
}

// EventPayload is the body of a full webhook event. Expired events carry
// isUnderpaid, and beside it the same value as partiallyPaid and
// underpaid, the names that shop plugins read (docs/decisions.md, "Shop
// plugins"); Settled events carry overPaid and afterExpiration, which
// repeat additionalStatus Overpaid and PaidAfterExpiration as booleans
// for the same plugins.
func EventPayload(inv *Invoice, e Emit) json.RawMessage {
	p := struct {
		Type             EventType       `json:"type"`
		InvoiceID        string          `json:"invoiceId"`
		Metadata         json.RawMessage `json:"metadata"`
		AdditionalStatus string          `json:"additionalStatus"`
		IsUnderpaid      *bool           `json:"isUnderpaid,omitempty"`
		PartiallyPaid    *bool           `json:"partiallyPaid,omitempty"`
		Underpaid        *bool           `json:"underpaid,omitempty"`
		OverPaid         *bool           `json:"overPaid,omitempty"`
		AfterExpiration  *bool           `json:"afterExpiration,omitempty"`
	}{Type: e.Type, InvoiceID: inv.ID, Metadata: inv.Metadata, AdditionalStatus: e.AdditionalStatus.String()}
	if len(p.Metadata) == 0 {
		p.Metadata = json.RawMessage("{}")
	}
	if e.Type == EventExpired {
		underpaid := e.IsUnderpaid
		p.IsUnderpaid, p.PartiallyPaid, p.Underpaid = &underpaid, &underpaid, &underpaid
	}
	if e.Type == EventSettled {
		over, late := e.AdditionalStatus == StatusOverpaid, e.AdditionalStatus == StatusPaidAfterExpiration
		p.OverPaid, p.AfterExpiration = &over, &late
	}
	out, _ := json.Marshal(p)
	return out
}

// RedeliveryPayload is the reduced body of a redelivered event: type and
// invoiceId only (docs/api.md, Webhooks).
func RedeliveryPayload(t EventType, invoiceID string) json.RawMessage {
	out, _ := json.Marshal(struct {
		Type      EventType `json:"type"`
		InvoiceID string    `json:"invoiceId"`
	}{t, invoiceID})
	return out
}

// CheckSigAlias checks the name of a header that repeats the X-Service-Sig
// value for receivers that read it under another name (X-Coinsnap-Sig):
// an HTTP token, not a header that a delivery already sends or that the
// HTTP client sets.
func CheckSigAlias(name string) error {
	if name == "" || len(name) > 64 {
		return Errorf(Invalid, "webhook signature alias %q: a header name of 1 to 64 characters is needed", name)
	}
	for i := 0; i < len(name); i++ {
		if !isTokenChar(name[i]) {
			return Errorf(Invalid, "webhook signature alias %q: %q is not allowed in a header name", name, name[i])
		}
	}
	canonical := http.CanonicalHeaderKey(name)
	for _, reserved := range reservedDeliveryHeaders {
		if canonical == http.CanonicalHeaderKey(reserved) {
			return Errorf(Invalid, "webhook signature alias %q: %s is a header every delivery already has", name, reserved)
		}
	}
	return nil
}

// reservedDeliveryHeaders are the headers a delivery sends or its HTTP
// client sets; a signature alias may not replace one of them.
var reservedDeliveryHeaders = []string{
	"X-Service-Signature", "X-Service-Sig", "X-Service-Event-Id", "X-Service-Delivery-Id",
	"Content-Type", "Content-Length", "Content-Encoding", "Transfer-Encoding", "Host", "User-Agent",
	"Connection", "Keep-Alive", "Upgrade", "Te", "Trailer", "Expect", "Accept-Encoding", "Authorization", "Cookie",
}

// isTokenChar reports whether c may appear in an HTTP token (RFC 9110).
func isTokenChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

// RetryDelay is the wait before automatic retry n (1-based): 10 s doubling
// to at most an hour. Retries stop after MaxAutomaticRetries.
func RetryDelay(n int) time.Duration {
	d := 10 * time.Second
	for i := 1; i < n && d < time.Hour; i++ {
		d *= 2
	}
	return min(d, time.Hour)
}

// MaxAutomaticRetries is how many times a failed delivery is retried when
// the webhook opted in.
const MaxAutomaticRetries = 8

// Retryable reports whether a failed attempt may pass later: 5xx, 408,
// 429 or no answer at all.
func Retryable(statusCode int) bool {
	return statusCode == 0 || statusCode == 408 || statusCode == 429 || statusCode >= 500
}

// WebhookAttempt is what one POST to a webhook URL gave.
type WebhookAttempt struct {
	StatusCode   int
	ResponseBody []byte
	Duration     time.Duration
	Err          string
	OK           bool
}

// WebhookClient sends to merchants' URLs, refusing addresses the service
// must not reach.
type WebhookClient interface {
	// CheckURL checks a URL's form (and https outside development).
	CheckURL(rawURL string) error
	// Validate sends the unsigned registration check; an error says why
	// the URL is refused.
	Validate(ctx context.Context, rawURL string) error
	// Deliver sends one POST and never retries.
	Deliver(ctx context.Context, rawURL string, headers http.Header, body []byte) WebhookAttempt
}

// WebhookService registers webhooks and re-sends deliveries.
type WebhookService interface {
	CreateWebhook(ctx context.Context, storeID string, in *WebhookInput) (*Webhook, error)
	UpdateWebhook(ctx context.Context, storeID, id string, in *WebhookInput) (*Webhook, error)
	DeleteWebhook(ctx context.Context, storeID, id string) error
	// Redeliver re-sends a delivery with the reduced payload, freshly
	// signed, and returns the new attempt.
	Redeliver(ctx context.Context, storeID, webhookID, deliveryID string) (*Delivery, error)
}

// WebhookReader reads webhooks and their deliveries.
type WebhookReader interface {
	Webhook(ctx context.Context, id string) (*Webhook, error)
	Webhooks(ctx context.Context, storeID string, fn func(*Webhook) error) error
	Delivery(ctx context.Context, id string) (*Delivery, error)
	// Deliveries lists a webhook's deliveries, newest first.
	Deliveries(ctx context.Context, webhookID string, q ListQuery, fn func(*Delivery) error) (next string, err error)
	// PendingDeliveries calls fn for every delivery still to be sent,
	// webhook by webhook, each in outbox order.
	PendingDeliveries(ctx context.Context, fn func(webhookID, deliveryID string) error) error
	// WebhookOutbox calls fn for every delivery still to be sent to one
	// webhook, in outbox order: for the events of one invoice, the order
	// they were committed.
	WebhookOutbox(ctx context.Context, webhookID string, fn func(deliveryID string) error) error
}
