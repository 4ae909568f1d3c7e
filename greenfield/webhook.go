package greenfield

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// webhookBody is WebhookDataCreate and WebhookDataUpdate of
// swagger.template.webhooks.json (BTCPay 2.4.1), as
// btcpayserver-greenfield-php v2.9.0 sends them (src/Client/Webhook.php,
// createWebhook, updateWebhook): enabled, automaticRedelivery, url,
// authorizedEvents {everything, specificEvents} and secret (left out, or
// null on update, for "keep").
type webhookBody struct {
	Enabled             *bool   `json:"enabled"`
	AutomaticRedelivery *bool   `json:"automaticRedelivery"`
	URL                 *string `json:"url"`
	Secret              *string `json:"secret"`
	AuthorizedEvents    *struct {
		Everything     *bool    `json:"everything"`
		SpecificEvents []string `json:"specificEvents"`
	} `json:"authorizedEvents"`
}

// input translates the body into the domain's request. BTCPay's
// defaults: enabled and automaticRedelivery true, everything when
// authorizedEvents is left out or says so.
func (b *webhookBody) input() *kassa.WebhookInput {
	yes := true
	in := &kassa.WebhookInput{Format: kassa.FormatGreenfield, Enabled: b.Enabled, AutomaticRedelivery: b.AutomaticRedelivery}
	if in.Enabled == nil {
		in.Enabled = &yes
	}
	if in.AutomaticRedelivery == nil {
		in.AutomaticRedelivery = &yes
	}
	if b.URL != nil {
		in.URL = strings.TrimSpace(*b.URL)
	}
	if b.Secret != nil {
		in.Secret = *b.Secret
	}
	in.EventsGiven = true
	if ae := b.AuthorizedEvents; ae == nil || ae.Everything == nil || *ae.Everything {
		in.Events = kassa.GreenfieldEventTypes
	} else {
		for _, e := range ae.SpecificEvents {
			in.Events = append(in.Events, kassa.EventType(e))
		}
	}
	return in
}

// webhookData is WebhookData (WebhookDataCreateResult with the secret,
// on create only): the webhook as BTCPay's GreenfieldStoreWebhooksController.
// FromModel shows it.
type webhookData struct {
	ID                  string  `json:"id"`
	Enabled             bool    `json:"enabled"`
	AutomaticRedelivery bool    `json:"automaticRedelivery"`
	URL                 string  `json:"url"`
	Secret              *string `json:"secret"`
	AuthorizedEvents    struct {
		Everything     bool     `json:"everything"`
		SpecificEvents []string `json:"specificEvents"`
	} `json:"authorizedEvents"`
}

func toWebhookData(w *kassa.Webhook, withSecret bool) webhookData {
	d := webhookData{ID: w.ID, Enabled: w.Enabled, AutomaticRedelivery: w.AutomaticRedelivery, URL: w.URL}
	if withSecret {
		d.Secret = &w.Secret
	}
	everything := true
	for _, t := range kassa.GreenfieldEventTypes {
		everything = everything && w.Selects(t)
	}
	// Everything is the invoice events; a webhook that names payout
	// events too shows its list.
	for _, t := range kassa.GreenfieldPayoutEventTypes {
		everything = everything && !w.Selects(t)
	}
	d.AuthorizedEvents.Everything = everything
	d.AuthorizedEvents.SpecificEvents = []string{}
	if !everything {
		for _, e := range w.Events {
			d.AuthorizedEvents.SpecificEvents = append(d.AuthorizedEvents.SpecificEvents, string(e))
		}
	}
	return d
}

func webhookNotFound(w http.ResponseWriter) {
	writeAPIError(w, http.StatusNotFound, "webhook-not-found", "The webhook was not found")
}

func deliveryNotFound(w http.ResponseWriter) {
	writeAPIError(w, http.StatusNotFound, "webhookdelivery-not-found", "The webhook delivery was not found")
}

// webhookFields names the domain's webhook fields as Greenfield's paths.
var webhookFields = map[string]string{"url": "url", "secret": "secret", "events": "authorizedEvents.specificEvents"}

// writeWebhookError answers a webhook service error: bad fields as 422
// with Greenfield's paths, others as writeError does.
func (s *server) writeWebhookError(w http.ResponseWriter, r *http.Request, err error) {
	var e *kassa.Error
	if errors.As(err, &e) && e.Code == kassa.Invalid {
		if len(e.Fields) == 0 {
			writeValidation(w, []validationError{{Path: "url", Message: e.Message}})
			return
		}
		errs := make([]validationError, 0, len(e.Fields))
		for _, f := range e.Fields {
			path, ok := webhookFields[f.Field]
			if !ok {
				path = f.Field
			}
			errs = append(errs, validationError{Path: path, Message: f.Message})
		}
		writeValidation(w, errs)
		return
	}
	s.writeError(w, r, err)
}

// storeWebhook reads the path's webhook if it is a Greenfield webhook of
// the caller's store; otherwise it answers 404 and returns nil. A webhook
// registered through Kassa's own API is not this API's: its events and
// deliveries are in Coinsnap's format.
func (s *server) storeWebhook(w http.ResponseWriter, r *http.Request) *kassa.Webhook {
	id := chi.URLParam(r, "webhookId")
	if !kassa.ValidID(id) {
		webhookNotFound(w)
		return nil
	}
	hook, err := s.Reader.Webhook(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound ||
		err == nil && (hook.StoreID != callerFrom(r.Context()).store.ID || hook.Format != kassa.FormatGreenfield) {
		webhookNotFound(w)
		return nil
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil
	}
	return hook
}

// listWebhooks answers GET …/webhooks: the store's Greenfield webhooks.
func (s *server) listWebhooks(w http.ResponseWriter, r *http.Request) {
	out := []webhookData{}
	err := s.Reader.Webhooks(r.Context(), callerFrom(r.Context()).store.ID, func(hook *kassa.Webhook) error {
		if hook.Format == kassa.FormatGreenfield {
			out = append(out, toWebhookData(hook, false))
		}
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// createWebhook answers POST …/webhooks (Webhook::createWebhook): the
// webhook with its secret. Its URL gets the https and address checks,
// not the unsigned probe (kassa.FormatGreenfield).
func (s *server) createWebhook(w http.ResponseWriter, r *http.Request) {
	var body webhookBody
	if !s.readBody(w, r, &body) {
		return
	}
	in := body.input()
	if in.URL == "" {
		writeValidation(w, []validationError{{Path: "url", Message: "Invalid Url"}})
		return
	}
	hook, err := s.Webhooks.CreateWebhook(r.Context(), callerFrom(r.Context()).store.ID, in)
	if err != nil {
		s.writeWebhookError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toWebhookData(hook, true))
}

// getWebhook answers GET …/webhooks/{webhookId} (Webhook::getWebhook).
func (s *server) getWebhook(w http.ResponseWriter, r *http.Request) {
	if hook := s.storeWebhook(w, r); hook != nil {
		writeJSON(w, http.StatusOK, toWebhookData(hook, false))
	}
}

// updateWebhook answers PUT …/webhooks/{webhookId} (Webhook::updateWebhook):
// a null or left-out secret keeps the webhook's.
func (s *server) updateWebhook(w http.ResponseWriter, r *http.Request) {
	var body webhookBody
	if !s.readBody(w, r, &body) {
		return
	}
	in := body.input()
	if in.URL == "" {
		writeValidation(w, []validationError{{Path: "url", Message: "Invalid Url"}})
		return
	}
	hook := s.storeWebhook(w, r)
	if hook == nil {
		return
	}
	out, err := s.Webhooks.UpdateWebhook(r.Context(), hook.StoreID, hook.ID, in)
	if err != nil {
		s.writeWebhookError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toWebhookData(out, false))
}

// deleteWebhook answers DELETE …/webhooks/{webhookId}: 200, no body.
func (s *server) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	hook := s.storeWebhook(w, r)
	if hook == nil {
		return
	}
	if err := s.Webhooks.DeleteWebhook(r.Context(), hook.StoreID, hook.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// deliveryData is WebhookDeliveryData: status Failed (no answer),
// HttpError or HttpSuccess as WebhookDeliveryStatus names them; a
// delivery not yet attempted is listed as Failed with no time sent.
type deliveryData struct {
	ID           string `json:"id"`
	Timestamp    int64  `json:"timestamp"`
	DeliveryTime int64  `json:"deliveryTime"` // never null: BTCPay's is a DateTimeOffset
	HTTPCode     *int   `json:"httpCode"`
	ErrorMessage string `json:"errorMessage,omitempty"`
	Status       string `json:"status"`
}

func toDeliveryData(d *kassa.Delivery) deliveryData {
	// Not yet sent, a delivery's time is when it was due.
	out := deliveryData{ID: d.ID, Timestamp: d.CreatedAt.Unix(), DeliveryTime: d.CreatedAt.Unix(), ErrorMessage: d.Error, Status: "Failed"}
	if !d.SentAt.IsZero() {
		out.DeliveryTime = d.SentAt.Unix()
	}
	if d.StatusCode != 0 {
		code := d.StatusCode
		out.HTTPCode = &code
		out.Status = "HttpError"
	}
	if d.Status == kassa.DeliveryDelivered {
		out.Status = "HttpSuccess"
	}
	return out
}

// maxDeliveries bounds a delivery list, BTCPay's count parameter
// included.
const maxDeliveries = 100

// listDeliveries answers GET …/webhooks/{webhookId}/deliveries
// (Webhook::getLatestDeliveries sends count): newest first.
func (s *server) listDeliveries(w http.ResponseWriter, r *http.Request) {
	count := maxDeliveries
	if v := r.URL.Query().Get("count"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeValidation(w, []validationError{{Path: "count", Message: "must be a whole number, 0 or more"}})
			return
		}
		count = min(n, maxDeliveries)
	}
	hook := s.storeWebhook(w, r)
	if hook == nil {
		return
	}
	out := []deliveryData{}
	_, err := s.Reader.Deliveries(r.Context(), hook.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
		if len(out) >= count {
			return errListDone
		}
		out = append(out, toDeliveryData(d))
		return nil
	})
	if err != nil && !errors.Is(err, errListDone) {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// storeDelivery reads the path's delivery of the path's webhook.
func (s *server) storeDelivery(w http.ResponseWriter, r *http.Request) (*kassa.Webhook, *kassa.Delivery) {
	hook := s.storeWebhook(w, r)
	if hook == nil {
		return nil, nil
	}
	id := chi.URLParam(r, "deliveryId")
	if !kassa.ValidID(id) {
		deliveryNotFound(w)
		return nil, nil
	}
	d, err := s.Reader.Delivery(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && d.WebhookID != hook.ID {
		deliveryNotFound(w)
		return nil, nil
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil, nil
	}
	return hook, d
}

// getDelivery answers GET …/deliveries/{deliveryId} (Webhook::getDelivery).
func (s *server) getDelivery(w http.ResponseWriter, r *http.Request) {
	if _, d := s.storeDelivery(w, r); d != nil {
		writeJSON(w, http.StatusOK, toDeliveryData(d))
	}
}

// deliveryRequest answers GET …/deliveries/{deliveryId}/request: the body
// that was sent.
func (s *server) deliveryRequest(w http.ResponseWriter, r *http.Request) {
	if _, d := s.storeDelivery(w, r); d != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(d.Payload)
	}
}

// redeliver answers POST …/deliveries/{deliveryId}/redeliver
// (Webhook::redeliverDelivery): the new delivery's id, a JSON string.
// The body is the original's with the new deliveryId and isRedelivery
// (kassa.GreenfieldRedelivery), sent through the webhook's queue.
func (s *server) redeliver(w http.ResponseWriter, r *http.Request) {
	hook, d := s.storeDelivery(w, r)
	if d == nil {
		return
	}
	out, err := s.Webhooks.Redeliver(r.Context(), hook.StoreID, hook.ID, d.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out.ID)
}
