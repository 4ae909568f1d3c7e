package persistence

import (
	"bytes"
	"context"
	"fmt"

	"github.com/kassapay/kassa"
)

func webhookKey(id string) []byte               { return key("wh/", str(id)) }
func webhookByStoreKey(store, id string) []byte { return key("whs/", str(store), sepb, str(id)) }
func webhookByStorePrefix(store string) []byte  { return key("whs/", str(store), sepb) }
func deliveryKey(id string) []byte              { return key("dl/", str(id)) }
func deliveryByWebhookKey(d *kassa.Delivery) []byte {
	return key("dlw/", str(d.WebhookID), sepb, ms(d.CreatedAt), str(d.ID))
}
func deliveryByWebhookPrefix(webhook string) []byte { return key("dlw/", str(webhook), sepb) }
func outboxKey(webhook, delivery string) []byte {
	return key("obx/", str(webhook), sepb, str(delivery))
}

var (
	errWebhookNotFound  = kassa.Errorf(kassa.NotFound, "webhook not found")
	errDeliveryNotFound = kassa.Errorf(kassa.NotFound, "delivery not found")
)

// PutWebhook writes a webhook and indexes it under its store.
func (b *Batch) PutWebhook(w *kassa.Webhook) {
	b.setJSON(webhookKey(w.ID), nil, w)
	b.set(webhookByStoreKey(w.StoreID, w.ID), nil)
}

// DeleteWebhook removes a webhook; its deliveries stay readable.
func (b *Batch) DeleteWebhook(w *kassa.Webhook) {
	b.del(webhookKey(w.ID))
	b.del(webhookByStoreKey(w.StoreID, w.ID))
}

// PutDelivery writes a delivery and keeps it in the outbox while pending.
func (b *Batch) PutDelivery(d *kassa.Delivery, pending bool) {
	b.setJSON(deliveryKey(d.ID), nil, d)
	b.set(deliveryByWebhookKey(d), nil)
	if pending {
		b.set(outboxKey(d.WebhookID, d.ID), nil)
	} else {
		b.del(outboxKey(d.WebhookID, d.ID))
	}
}

// Webhook returns a webhook.
func (d *DB) Webhook(ctx context.Context, id string) (*kassa.Webhook, error) {
	return getJSON[kassa.Webhook](d, webhookKey(id), errWebhookNotFound)
}

// Webhooks calls fn for each webhook of the store.
func (d *DB) Webhooks(ctx context.Context, storeID string, fn func(*kassa.Webhook) error) error {
	return d.scanPrefix(ctx, webhookByStorePrefix(storeID), func(id, _ []byte) error {
		w, err := d.Webhook(ctx, string(id))
		if err != nil {
			return err
		}
		return fn(w)
	})
}

// Delivery returns a delivery.
func (d *DB) Delivery(ctx context.Context, id string) (*kassa.Delivery, error) {
	return getJSON[kassa.Delivery](d, deliveryKey(id), errDeliveryNotFound)
}

// Deliveries lists a webhook's deliveries, newest first.
func (d *DB) Deliveries(ctx context.Context, webhookID string, q kassa.ListQuery, fn func(*kassa.Delivery) error) (string, error) {
	return d.scanRange(ctx, deliveryByWebhookPrefix(webhookID), q, func(suffix []byte) error {
		dl, err := d.Delivery(ctx, string(suffix[8:]))
		if err != nil {
			return err
		}
		return fn(dl)
	})
}

// PendingDeliveries calls fn for each delivery in the outbox.
func (d *DB) PendingDeliveries(ctx context.Context, fn func(webhookID, deliveryID string) error) error {
	return d.scanPrefix(ctx, []byte("obx/"), func(k, _ []byte) error {
		webhook, delivery, ok := bytes.Cut(k, sepb)
		if !ok {
			return fmt.Errorf("malformed outbox key %q", k)
		}
		return fn(string(webhook), string(delivery))
	})
}
