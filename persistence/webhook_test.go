package persistence

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
)

func newWebhook(id, store string) *kassa.Webhook {
	return &kassa.Webhook{ID: id, StoreID: store, URL: "https://example.com/" + id, Secret: "secret-" + id, Events: kassa.EventTypes, Enabled: true, CreatedAt: t0, UpdatedAt: t0}
}

func newDelivery(id, webhook string, created time.Time) *kassa.Delivery {
	return &kassa.Delivery{ID: id, WebhookID: webhook, StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventSettled,
		Payload: json.RawMessage(`{"type":"Settled","invoiceId":"inv_1"}`), Status: kassa.DeliveryPending, CreatedAt: created}
}

func webhookIDs(t *testing.T, h *harness, store string) []string {
	t.Helper()
	var ids []string
	err := h.db.Webhooks(t.Context(), store, func(w *kassa.Webhook) error {
		if w.StoreID != store {
			t.Errorf("webhook %s of %s listed for %s", w.ID, w.StoreID, store)
		}
		ids = append(ids, w.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func testWebhooks(t *testing.T, h *harness) {
	ctx := t.Context()
	w1, w2, w10 := newWebhook("wh_1", "s1"), newWebhook("wh_2", "s1"), newWebhook("wh_10", "s10")
	commit(t, h.db, func(b kassa.Batch) {
		b.PutWebhook(w1)
		b.PutWebhook(w2)
		b.PutWebhook(w10)
	})
	if got := webhookIDs(t, h, "s1"); !slices.Equal(got, []string{"wh_1", "wh_2"}) {
		t.Errorf("Webhooks(s1) = %v", got)
	}
	if got := webhookIDs(t, h, "s"); len(got) != 0 {
		t.Errorf("Webhooks(s) = %v", got)
	}
	got, err := h.db.Webhook(ctx, "wh_2")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Webhook", got, w2)

	updated := *w2
	updated.Enabled, updated.Events = false, []kassa.EventType{}
	commit(t, h.db, func(b kassa.Batch) { b.PutWebhook(&updated) })
	got, err = h.db.Webhook(ctx, "wh_2")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "updated Webhook", got, &updated)
	if ids := webhookIDs(t, h, "s1"); len(ids) != 2 {
		t.Errorf("Webhooks(s1) after update = %v", ids)
	}

	// Deleting keeps the deliveries readable.
	d := newDelivery("dl_1", "wh_1", t0)
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(d, false) })
	commit(t, h.db, func(b kassa.Batch) { b.DeleteWebhook(w1) })
	_, err = h.db.Webhook(ctx, "wh_1")
	wantCode(t, "deleted Webhook", err, kassa.NotFound)
	if got := webhookIDs(t, h, "s1"); !slices.Equal(got, []string{"wh_2"}) {
		t.Errorf("Webhooks(s1) after delete = %v", got)
	}
	if _, err := h.db.Delivery(ctx, "dl_1"); err != nil {
		t.Errorf("Delivery of deleted webhook: %v", err)
	}
	if got := webhookIDs(t, h, "s10"); !slices.Equal(got, []string{"wh_10"}) {
		t.Errorf("Webhooks(s10) = %v", got)
	}

	stop := errors.New("stop")
	calls := 0
	if err := h.db.Webhooks(ctx, "s10", func(*kassa.Webhook) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("Webhooks with failing fn: %v after %d calls", err, calls)
	}
}

func testDeliveries(t *testing.T, h *harness) {
	ctx := t.Context()
	var want []string
	commit(t, h.db, func(b kassa.Batch) {
		for i := range 25 {
			d := newDelivery(fmt.Sprintf("dl_%02d", i), "wh_2", t0.Add(time.Duration(i)*time.Second))
			b.PutDelivery(d, false)
			want = append(want, d.ID)
			b.PutDelivery(newDelivery(fmt.Sprintf("dl_20_%02d", i), "wh_20", d.CreatedAt), false)
		}
	})
	slices.Reverse(want)
	list := func(q kassa.ListQuery, fn func(string) error) (string, error) {
		return h.db.Deliveries(ctx, "wh_2", q, func(d *kassa.Delivery) error {
			if d.WebhookID != "wh_2" {
				t.Errorf("delivery %s of %s listed for wh_2", d.ID, d.WebhookID)
			}
			return fn(d.ID)
		})
	}
	for _, limit := range []int{0, 1, 4, 25, 26} {
		got, _ := pages(t, kassa.ListQuery{Limit: limit}, list)
		if !slices.Equal(got, want) {
			t.Errorf("limit %d: got %v, want %v", limit, got, want)
		}
	}
	got, _ := pages(t, kassa.ListQuery{From: t0.Add(10 * time.Second), To: t0.Add(12*time.Second + 999*time.Millisecond), Limit: 2}, list)
	if !slices.Equal(got, []string{"dl_12", "dl_11", "dl_10"}) {
		t.Errorf("seconds 10 to 12: %v", got)
	}

	// Rewriting a delivery with its result keeps one entry.
	d, err := h.db.Delivery(ctx, "dl_03")
	if err != nil {
		t.Fatal(err)
	}
	d.Status, d.StatusCode, d.SentAt = kassa.DeliveryDelivered, 200, t0.Add(time.Hour)
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(d, false) })
	if got, _ := pages(t, kassa.ListQuery{Limit: 10}, list); !slices.Equal(got, want) {
		t.Errorf("after rewrite: %v", got)
	}
	back, err := h.db.Delivery(ctx, "dl_03")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "Delivery", back, d)
}

type outboxEntry struct{ webhook, delivery string }

func outbox(t *testing.T, h *harness) []outboxEntry {
	t.Helper()
	var out []outboxEntry
	if err := h.db.PendingDeliveries(t.Context(), func(w, d string) error {
		out = append(out, outboxEntry{w, d})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

func testOutbox(t *testing.T, h *harness) {
	d1 := newDelivery("dl_1", "wh_1", t0)
	d2 := newDelivery("dl_2", "wh_1", t0.Add(time.Second))
	d10 := newDelivery("dl_10", "wh_10", t0)
	commit(t, h.db, func(b kassa.Batch) {
		b.PutDelivery(d1, true)
		b.PutDelivery(d2, true)
		b.PutDelivery(d10, true)
	})
	if got := outbox(t, h); !slices.Equal(got, []outboxEntry{{"wh_1", "dl_1"}, {"wh_1", "dl_2"}, {"wh_10", "dl_10"}}) {
		t.Errorf("outbox = %v", got)
	}

	// Sent: out of the outbox; a retry is queued in the same batch.
	d1.Status, d1.StatusCode = kassa.DeliveryFailed, 503
	retry := newDelivery("dl_3", "wh_1", t0.Add(2*time.Second))
	retry.RedeliveryOf, retry.Attempt, retry.NotBefore = "dl_1", 1, t0.Add(10*time.Second)
	commit(t, h.db, func(b kassa.Batch) {
		b.PutDelivery(d1, false)
		b.PutDelivery(retry, true)
	})
	h.reopen()
	if got := outbox(t, h); !slices.Equal(got, []outboxEntry{{"wh_1", "dl_2"}, {"wh_1", "dl_3"}, {"wh_10", "dl_10"}}) {
		t.Errorf("outbox after send = %v", got)
	}
	got, err := h.db.Delivery(t.Context(), "dl_1")
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "sent delivery", got, d1)

	commit(t, h.db, func(b kassa.Batch) {
		b.PutDelivery(d2, false)
		b.PutDelivery(retry, false)
		b.PutDelivery(d10, false)
	})
	if got := outbox(t, h); len(got) != 0 {
		t.Errorf("outbox after all sent = %v", got)
	}
	// Every delivery is still listed, newest first.
	ids, _ := pages(t, kassa.ListQuery{}, func(q kassa.ListQuery, fn func(string) error) (string, error) {
		return h.db.Deliveries(t.Context(), "wh_1", q, func(d *kassa.Delivery) error { return fn(d.ID) })
	})
	if !slices.Equal(ids, []string{"dl_3", "dl_2", "dl_1"}) {
		t.Errorf("Deliveries(wh_1) = %v", ids)
	}

	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(d1, true) })
	stop := errors.New("stop")
	calls := 0
	if err := h.db.PendingDeliveries(t.Context(), func(string, string) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("PendingDeliveries with failing fn: %v after %d calls", err, calls)
	}
}

// TestOutboxOrder checks that an endpoint's outbox is read in the order
// its deliveries were put, whatever their ids, also after a reopen, and
// that an entry of the first key format is still read and removed.
func TestOutboxOrder(t *testing.T) {
	h := newHarness(t, "kassa", Options{FS: vfs.NewMem()})
	ids := []string{"zz", "aa", "mm", "bb"}
	var ds []*kassa.Delivery
	for i, id := range ids {
		d := newDelivery(id, "wh_1", t0.Add(-time.Duration(i)*time.Second))
		ds = append(ds, d)
		commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(d, true) })
	}
	webhookOutbox := func() []string {
		var got []string
		if err := h.db.WebhookOutbox(t.Context(), "wh_1", func(id string) error { got = append(got, id); return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := webhookOutbox(); !slices.Equal(got, ids) {
		t.Fatalf("outbox = %v, want %v", got, ids)
	}
	// Sending the first keeps the others in order; a delivery put after a
	// reopen comes after them.
	ds[0].Status = kassa.DeliveryDelivered
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(ds[0], false) })
	h.reopen()
	late := newDelivery("aaa", "wh_1", t0.Add(-time.Hour))
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(late, true) })
	if got, want := webhookOutbox(), []string{"aa", "mm", "bb", "aaa"}; !slices.Equal(got, want) {
		t.Fatalf("outbox after reopen = %v, want %v", got, want)
	}
	if got := outbox(t, h); len(got) != 4 || got[3] != (outboxEntry{"wh_1", "aaa"}) {
		t.Fatalf("PendingDeliveries = %v", got)
	}

	// An entry written by an earlier version: the key ends in the id.
	old := newDelivery("old", "wh_2", t0)
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(old, false) })
	raw := h.db.db.NewBatch()
	if err := raw.Set(legacyOutboxKey("wh_2", "old"), nil, nil); err != nil {
		t.Fatal(err)
	}
	if err := raw.Commit(pebble.Sync); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := h.db.WebhookOutbox(t.Context(), "wh_2", func(id string) error { got = append(got, id); return nil }); err != nil || !slices.Equal(got, []string{"old"}) {
		t.Fatalf("legacy outbox = %v, %v", got, err)
	}
	old.Status = kassa.DeliveryDelivered
	commit(t, h.db, func(b kassa.Batch) { b.PutDelivery(old, false) })
	for _, e := range outbox(t, h) {
		if e.webhook == "wh_2" {
			t.Fatalf("legacy entry left in the outbox: %v", e)
		}
	}
}
