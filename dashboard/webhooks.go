package dashboard

import (
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// maxDeliveriesShown bounds the delivery log of one page.
const maxDeliveriesShown = 100

func (h *Dashboard) storeWebhooks(r *http.Request, st *kassa.Store) ([]*kassa.Webhook, error) {
	var list []*kassa.Webhook
	err := h.Reader.Webhooks(r.Context(), st.ID, func(w *kassa.Webhook) error {
		list = append(list, w)
		return nil
	})
	return list, err
}

func (h *Dashboard) webhooksPage(w http.ResponseWriter, r *http.Request) {
	h.renderWebhooks(w, r, http.StatusOK, map[string]any{})
}

func (h *Dashboard) renderWebhooks(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	list, err := h.storeWebhooks(r, currentStore(r.Context()))
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Webhooks"] = list
	h.render(w, r, status, "webhooks", data)
}

// webhookInput reads the webhook form: url, the ticked events, enabled
// and automatic redelivery.
func webhookInput(r *http.Request) *kassa.WebhookInput {
	f := r.PostForm
	in := &kassa.WebhookInput{URL: strings.TrimSpace(f.Get("url")), EventsGiven: true, Events: []kassa.EventType{}}
	for _, e := range f["events"] {
		if t, err := kassa.ParseEventType(e); err == nil && t != kassa.EventInvalid {
			in.Events = append(in.Events, t)
		}
	}
	enabled, auto := f.Get("enabled") == "on", f.Get("automaticRedelivery") == "on"
	in.Enabled, in.AutomaticRedelivery = &enabled, &auto
	return in
}

func (h *Dashboard) createWebhook(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	in := webhookInput(r)
	hook, err := h.Services.CreateWebhook(r.Context(), st.ID, in)
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			// The validation ping's answer is in the message.
			h.renderWebhooks(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": m, "URL": in.URL})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/webhooks/"+hook.ID, "hookcreated")
}

// webhookOf returns the webhook of the path when it belongs to the store.
func (h *Dashboard) webhookOf(w http.ResponseWriter, r *http.Request) *kassa.Webhook {
	id := chi.URLParam(r, "webhookId")
	if !kassa.ValidID(id) {
		h.notFound(w, r)
		return nil
	}
	hook, err := h.Reader.Webhook(r.Context(), id)
	if err == nil && hook.StoreID != currentStore(r.Context()).ID {
		err = kassa.Errorf(kassa.NotFound, "webhook not found")
	}
	if err != nil {
		h.serverError(w, r, err)
		return nil
	}
	return hook
}

func (h *Dashboard) webhookPage(w http.ResponseWriter, r *http.Request) {
	if hook := h.webhookOf(w, r); hook != nil {
		h.renderWebhook(w, r, http.StatusOK, hook, map[string]any{})
	}
}

func (h *Dashboard) renderWebhook(w http.ResponseWriter, r *http.Request, status int, hook *kassa.Webhook, data map[string]any) {
	var deliveries []*kassa.Delivery
	_, err := h.Reader.Deliveries(r.Context(), hook.ID, kassa.ListQuery{Limit: maxDeliveriesShown}, func(d *kassa.Delivery) error {
		deliveries = append(deliveries, d)
		return nil
	})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Hook"], data["Deliveries"] = hook, deliveries
	h.render(w, r, status, "webhook", data)
}

func (h *Dashboard) updateWebhook(w http.ResponseWriter, r *http.Request) {
	hook := h.webhookOf(w, r)
	if hook == nil {
		return
	}
	in := webhookInput(r)
	if r.PostForm.Get("newSecret") == "on" {
		in.Secret = kassa.NewSecret()
	}
	if _, err := h.Services.UpdateWebhook(r.Context(), hook.StoreID, hook.ID, in); err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.renderWebhook(w, r, http.StatusUnprocessableEntity, hook, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, currentStore(r.Context()), "/webhooks/"+hook.ID, "saved")
}

func (h *Dashboard) toggleWebhook(w http.ResponseWriter, r *http.Request) {
	hook := h.webhookOf(w, r)
	if hook == nil {
		return
	}
	enabled := !hook.Enabled
	if _, err := h.Services.UpdateWebhook(r.Context(), hook.StoreID, hook.ID, &kassa.WebhookInput{Enabled: &enabled}); err != nil {
		h.serverError(w, r, err)
		return
	}
	done := "hookdisabled"
	if enabled {
		done = "hookenabled"
	}
	redirect(w, r, currentStore(r.Context()), "/webhooks/"+hook.ID, done)
}

func (h *Dashboard) deleteWebhook(w http.ResponseWriter, r *http.Request) {
	hook := h.webhookOf(w, r)
	if hook == nil {
		return
	}
	if err := h.Services.DeleteWebhook(r.Context(), hook.StoreID, hook.ID); err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, currentStore(r.Context()), "/webhooks", "hookdeleted")
}

func (h *Dashboard) redeliver(w http.ResponseWriter, r *http.Request) {
	hook := h.webhookOf(w, r)
	if hook == nil {
		return
	}
	id := chi.URLParam(r, "deliveryId")
	d, err := h.Reader.Delivery(r.Context(), id)
	if err == nil && d.WebhookID != hook.ID {
		err = kassa.Errorf(kassa.NotFound, "delivery not found")
	}
	if err == nil {
		_, err = h.Services.Redeliver(r.Context(), hook.StoreID, hook.ID, id)
	}
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.renderWebhook(w, r, http.StatusUnprocessableEntity, hook, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, currentStore(r.Context()), "/webhooks/"+hook.ID, "redelivered")
}
