package persistence

import (
	"bytes"
	"context"
	"encoding/binary"
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

// The outbox holds the deliveries still to send, per endpoint in the
// order of their outbox sequence number: obx/<webhook>\0<seq:8> → id.
// Keys of the first format, obx/<webhook>\0<id> with an empty value,
// are still read and removed.
const outboxRoot = "obx/"

func outboxKey(webhook string, seq uint64) []byte {
	return key(outboxRoot, str(webhook), sepb, u64(seq))
}
func outboxPrefix(webhook string) []byte { return key(outboxRoot, str(webhook), sepb) }
func legacyOutboxKey(webhook, delivery string) []byte {
	return key(outboxRoot, str(webhook), sepb, str(delivery))
}

// outboxDelivery returns the delivery id of an outbox entry: the value,
// or for a key of the first format the rest of the key.
func outboxDelivery(rest, value []byte) string {
	if len(value) > 0 {
		return string(value)
	}
	return string(rest)
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
// A delivery that enters the outbox for the first time takes the next
// outbox sequence number (d.OutboxSeq), so that an endpoint's pending
// deliveries are read back in the order their batches were built. An
// actor builds its next batch only after the last one committed, so for
// the events of one invoice that is the order they were committed.
func (b *Batch) PutDelivery(d *kassa.Delivery, pending bool) {
	if pending && d.OutboxSeq == 0 {
		d.OutboxSeq = b.db.outboxSeq.Add(1)
	}
	b.setJSON(deliveryKey(d.ID), nil, d)
	b.set(deliveryByWebhookKey(d), nil)
	switch {
	case pending:
		b.set(outboxKey(d.WebhookID, d.OutboxSeq), str(d.ID))
	case d.OutboxSeq != 0:
		b.del(outboxKey(d.WebhookID, d.OutboxSeq))
	default:
		b.del(legacyOutboxKey(d.WebhookID, d.ID))
	}
}

// lastOutboxSeq returns the greatest outbox sequence number in use, or 0.
// Only pending deliveries hold one, so numbers of sent deliveries may be
// given again; the order of what is pending is all they serve.
func (d *DB) lastOutboxSeq() (uint64, error) {
	var last uint64
	err := d.scanPrefix(context.Background(), []byte(outboxRoot), func(k, v []byte) error {
		_, seq, ok := bytes.Cut(k, sepb)
		if ok && len(v) > 0 && len(seq) == 8 {
			last = max(last, binary.BigEndian.Uint64(seq))
		}
		return nil
	})
	return last, err
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

// PendingDeliveries calls fn for each delivery in the outbox, webhook by
// webhook, each webhook's in outbox order.
func (d *DB) PendingDeliveries(ctx context.Context, fn func(webhookID, deliveryID string) error) error {
	return d.scanPrefix(ctx, []byte(outboxRoot), func(k, v []byte) error {
		webhook, rest, ok := bytes.Cut(k, sepb)
		if !ok {
			return fmt.Errorf("malformed outbox key %q", k)
		}
		return fn(string(webhook), outboxDelivery(rest, v))
	})
}

// WebhookOutbox calls fn for each pending delivery of a webhook, in
// outbox order.
func (d *DB) WebhookOutbox(ctx context.Context, webhookID string, fn func(deliveryID string) error) error {
	return d.scanPrefix(ctx, outboxPrefix(webhookID), func(rest, v []byte) error {
		return fn(outboxDelivery(rest, v))
	})
}
