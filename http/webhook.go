package http

import (
	"encoding/json"
	"net/http"
	"slices"
	"time"

	"github.com/kassapay/kassa"
)

// webhookRecord is a webhook as the API shows it (docs/api.md, Webhooks):
// id, enabled, url, secret, events and automaticRedelivery. Every webhook
// response (create, update, get, list) has this one shape; events is
// always an array, never null.
type webhookRecord struct {
	ID      string            `json:"id"`
	Enabled bool              `json:"enabled"`
	URL     string            `json:"url"`
	Secret  string            `json:"secret"`
	Events  []kassa.EventType `json:"events"`
	// AuthorizedEvents is the selection in the form shop plugins create
	// webhooks with: everything when all four events are selected.
	AuthorizedEvents    authorizedEventsRecord `json:"authorizedEvents"`
	AutomaticRedelivery bool                   `json:"automaticRedelivery"`
}

// authorizedEventsRecord is authorizedEvents as a webhook response shows it.
type authorizedEventsRecord struct {
	Everything     bool              `json:"everything"`
	SpecificEvents []kassa.EventType `json:"specificEvents"`
}

// newWebhookRecord renders w.
func newWebhookRecord(w *kassa.Webhook) webhookRecord {
	events := w.Events
	if events == nil {
		events = []kassa.EventType{}
	}
	return webhookRecord{
		ID:                  w.ID,
		Enabled:             w.Enabled,
		URL:                 w.URL,
		Secret:              w.Secret,
		Events:              events,
		AuthorizedEvents:    authorizedEventsRecord{Everything: sameEvents(events, kassa.EventTypes) && sameEvents(kassa.EventTypes, events), SpecificEvents: events},
		AutomaticRedelivery: w.AutomaticRedelivery,
	}
}

// deliveryRecord is one delivery attempt as the API shows it. eventId is
// the X-Service-Event-Id it was sent with and id its X-Service-Delivery-Id; payload is
// the JSON object that was sent, embedded as JSON; durationMs is whole
// milliseconds; sentAt is null until the attempt was made.
type deliveryRecord struct {
	ID           string            `json:"id"`
	WebhookID    string            `json:"webhookId"`
	InvoiceID    string            `json:"invoiceId"`
	EventID      string            `json:"eventId"`
	Type         kassa.EventType   `json:"type"`
	Status       string            `json:"status"`
	StatusCode   int               `json:"statusCode"`
	ResponseBody string            `json:"responseBody"`
	DurationMs   int64             `json:"durationMs"`
	Error        string            `json:"error"`
	RedeliveryOf string            `json:"redeliveryOf"`
	Attempt      int               `json:"attempt"`
	Payload      json.RawMessage   `json:"payload"`
	Headers      map[string]string `json:"headers"`
	CreatedAt    int64             `json:"createdAt"`
	SentAt       *int64            `json:"sentAt"`
}

// newDeliveryRecord renders d.
func newDeliveryRecord(d *kassa.Delivery) deliveryRecord {
	rec := deliveryRecord{
		ID:           d.ID,
		WebhookID:    d.WebhookID,
		InvoiceID:    d.InvoiceID,
		EventID:      d.Event(),
		Type:         d.Type,
		Status:       d.Status.String(),
		StatusCode:   d.StatusCode,
		ResponseBody: d.ResponseBody,
		DurationMs:   d.Duration.Milliseconds(),
		Error:        d.Error,
		RedeliveryOf: d.RedeliveryOf,
		Attempt:      d.Attempt,
		Payload:      deliveryPayload(d.Payload),
		Headers:      d.Headers,
		CreatedAt:    unixSeconds(d.CreatedAt),
	}
	if rec.Headers == nil {
		rec.Headers = map[string]string{}
	}
	if !d.SentAt.IsZero() {
		sent := d.SentAt.Unix()
		rec.SentAt = &sent
	}
	return rec
}

// deliveryPayload returns the stored payload for embedding in a response:
// null when there is none, and a JSON string of its bytes in the unlikely
// case that they are not JSON, so that one bad record cannot break a
// whole list.
func deliveryPayload(p json.RawMessage) json.RawMessage {
	switch {
	case absent(p):
		return json.RawMessage("null")
	case json.Valid(p):
		return p
	}
	quoted, _ := json.Marshal(string(p))
	return quoted
}

// webhookBody is the create and update request of a webhook. A null
// field is absent. events is an array of event names (or one
// comma-separated string); left out or null it is not given, while an
// empty array selects no event. authorizedEvents, the form shop plugins
// send, is read as events (see authorizedEventsBody).
type webhookBody struct {
	URL                 string          `json:"url"`
	Events              json.RawMessage `json:"events"`
	AuthorizedEvents    json.RawMessage `json:"authorizedEvents"`
	Secret              string          `json:"secret"`
	Enabled             *bool           `json:"enabled"`
	AutomaticRedelivery *bool           `json:"automaticRedelivery"`
}

// authorizedEventsBody is {"everything": bool, "specificEvents": [...]}:
// everything true selects the four events; otherwise specificEvents are
// the selection, none when left out ({} selects none).
type authorizedEventsBody struct {
	Everything     *bool           `json:"everything"`
	SpecificEvents json.RawMessage `json:"specificEvents"`
}

// webhookInput turns the body into a validated kassa.WebhookInput for a
// create or an update, reporting every bad field at once.
func (b *webhookBody) webhookInput(create bool) (*kassa.WebhookInput, error) {
	var fields []kassa.FieldError
	in := &kassa.WebhookInput{
		URL:                 b.URL,
		Secret:              b.Secret,
		Enabled:             b.Enabled,
		AutomaticRedelivery: b.AutomaticRedelivery,
	}
	if !absent(b.Events) {
		var names stringList
		if err := json.Unmarshal(b.Events, &names); err != nil {
			fields = append(fields, kassa.FieldError{Field: "events", Message: `must be an array of event names, such as ["Settled", "Expired"]`})
		} else {
			in.EventsGiven = true
			in.Events = make([]kassa.EventType, 0, len(names))
			for _, name := range names {
				in.Events = append(in.Events, kassa.EventType(name))
			}
		}
	}
	if !absent(b.AuthorizedEvents) {
		events, err := b.authorizedEvents()
		switch {
		case err != nil:
			fields = append(fields, *err)
		case in.EventsGiven && !sameEvents(in.Events, events):
			fields = append(fields, kassa.FieldError{Field: "authorizedEvents", Message: "selects other events than events; give one of the two"})
		case !in.EventsGiven:
			in.EventsGiven, in.Events = true, events
		}
	}
	fields = mergeFields(fields, in.Validate(create))
	if len(fields) > 0 {
		return nil, kassa.InvalidFields(fields)
	}
	return in, nil
}

// authorizedEvents reads the authorizedEvents field as an event list.
func (b *webhookBody) authorizedEvents() ([]kassa.EventType, *kassa.FieldError) {
	var ae authorizedEventsBody
	if err := json.Unmarshal(b.AuthorizedEvents, &ae); err != nil {
		return nil, &kassa.FieldError{Field: "authorizedEvents", Message: `must be an object such as {"everything": false, "specificEvents": ["Settled"]}`}
	}
	if ae.Everything != nil && *ae.Everything {
		return append([]kassa.EventType{}, kassa.EventTypes...), nil
	}
	events := []kassa.EventType{}
	if absent(ae.SpecificEvents) {
		return events, nil
	}
	var names stringList
	if err := json.Unmarshal(ae.SpecificEvents, &names); err != nil {
		return nil, &kassa.FieldError{Field: "authorizedEvents.specificEvents", Message: `must be an array of event names, such as ["Settled", "Expired"]`}
	}
	for _, name := range names {
		t, err := kassa.ParseEventType(name)
		if err != nil {
			return nil, &kassa.FieldError{Field: "authorizedEvents.specificEvents", Message: kassa.ErrorMessage(err)}
		}
		events = append(events, t)
	}
	return events, nil
}

// sameEvents reports whether two event lists select the same events.
func sameEvents(a, b []kassa.EventType) bool {
	for _, t := range a {
		if !slices.Contains(b, t) {
			return false
		}
	}
	for _, t := range b {
		if !slices.Contains(a, t) {
			return false
		}
	}
	return true
}

// errWebhooksUnavailable answers every webhook route of a server built
// without a WebhookService.
var errWebhooksUnavailable = kassa.Errorf(kassa.NotFound, "webhooks are not available on this server")

// webhooksAvailable answers 404 on every webhook route when the server
// has no WebhookService.
func (s *server) webhooksAvailable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Webhooks == nil {
			s.writeError(w, r, errWebhooksUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var (
	errWebhookNotFound  = kassa.Errorf(kassa.NotFound, "webhook not found")
	errDeliveryNotFound = kassa.Errorf(kassa.NotFound, "delivery not found")
)

// storeWebhook returns the webhook named by the path when it belongs to
// the caller's store; otherwise NotFound.
func (s *server) storeWebhook(r *http.Request) (*kassa.Webhook, error) {
	id, err := pathID(r, "webhookId", "webhook")
	if err != nil {
		return nil, err
	}
	wh, err := s.Reader.Webhook(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && wh.StoreID != callerFrom(r.Context()).store.ID {
		return nil, errWebhookNotFound
	}
	if err != nil {
		return nil, err
	}
	return wh, nil
}

func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var body webhookBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := body.webhookInput(true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	wh, err := s.Webhooks.CreateWebhook(r.Context(), callerFrom(r.Context()).store.ID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookRecord(wh))
}

func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := s.storeWebhook(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body webhookBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	in, err := body.webhookInput(false)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	updated, err := s.Webhooks.UpdateWebhook(r.Context(), wh.StoreID, wh.ID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookRecord(updated))
}

func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := s.storeWebhook(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newWebhookRecord(wh))
}

func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	wh, err := s.storeWebhook(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.Webhooks.DeleteWebhook(r.Context(), wh.StoreID, wh.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, message{Message: "webhook deleted"})
}

// listWebhooks answers the store's webhooks within startDate and
// endDate, in pages of limit (listByID).
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	storeID := callerFrom(r.Context()).store.ID
	listByID(s, w, r,
		func(fn func(*kassa.Webhook) error) error { return s.Reader.Webhooks(r.Context(), storeID, fn) },
		func(wh *kassa.Webhook) string { return wh.ID },
		func(wh *kassa.Webhook) time.Time { return wh.CreatedAt },
		func(wh *kassa.Webhook) any { return newWebhookRecord(wh) })
}

func (s *server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	wh, err := s.storeWebhook(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	q, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := newListWriter(w, q.Limit > 0)
	next, err := s.Reader.Deliveries(r.Context(), wh.ID, q, func(d *kassa.Delivery) error {
		return list.add(newDeliveryRecord(d))
	})
	s.finishList(list, r, next, err)
}

// getDelivery answers one delivery. It is found by its own record, which
// names its store and webhook, so a delivery stays readable after its
// webhook was deleted.
func (s *server) getDelivery(w http.ResponseWriter, r *http.Request) {
	webhookID, err := pathID(r, "webhookId", "webhook")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	id, err := pathID(r, "deliveryId", "delivery")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.Reader.Delivery(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound ||
		err == nil && (d.StoreID != callerFrom(r.Context()).store.ID || d.WebhookID != webhookID) {
		s.writeError(w, r, errDeliveryNotFound)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, newDeliveryRecord(d))
}

// redelivered is the answer of a redelivery: the message, plus the
// new attempt's id and outcome. A receiver that failed the new attempt is
// still a 200 (the resend happened) with status Failed and the reason.
type redelivered struct {
	Message    string `json:"message"`
	DeliveryID string `json:"deliveryId"`
	Status     string `json:"status"`
	StatusCode int    `json:"statusCode"`
	Error      string `json:"error,omitempty"`
}

// redeliver re-sends a stored delivery (docs/api.md, Webhooks: the path
// says "paylods"). The request body, if any, is read and ignored.
func (s *server) redeliver(w http.ResponseWriter, r *http.Request) {
	wh, err := s.storeWebhook(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	deliveryID, err := pathID(r, "payloadId", "delivery")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := readBody(w, r); err != nil {
		s.writeError(w, r, err)
		return
	}
	d, err := s.Webhooks.Redeliver(r.Context(), wh.StoreID, wh.ID, deliveryID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, redelivered{
		Message:    "webhook was resent",
		DeliveryID: d.ID,
		Status:     d.Status.String(),
		StatusCode: d.StatusCode,
		Error:      d.Error,
	})
}
