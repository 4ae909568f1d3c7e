package kassa

import (
	"encoding/json"
	"testing"
	"time"
)

func TestRetryableAndDelay(t *testing.T) {
	for code, want := range map[int]bool{0: true, 408: true, 429: true, 500: true, 503: true, 599: true,
		200: false, 301: false, 400: false, 401: false, 403: false, 404: false, 410: false} {
		if got := Retryable(code); got != want {
			t.Errorf("Retryable(%d) = %v, want %v", code, got, want)
		}
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second,
		320 * time.Second, 640 * time.Second, 1280 * time.Second, 2560 * time.Second, time.Hour, time.Hour}
	for i, w := range want {
		if got := RetryDelay(i + 1); got != w {
			t.Errorf("RetryDelay(%d) = %v, want %v", i+1, got, w)
		}
	}
}

func TestWebhookInputValidate(t *testing.T) {
	omitted := WebhookInput{URL: "https://shop.example/hook"}
	if err := omitted.Validate(true); err != nil || len(omitted.Events) != 4 {
		t.Fatalf("events omitted on create: %v %v", omitted.Events, err)
	}
	empty := WebhookInput{URL: "https://shop.example/hook", EventsGiven: true}
	if err := empty.Validate(true); err != nil || empty.Events == nil || len(empty.Events) != 0 {
		t.Fatalf("explicit empty events: %#v %v", empty.Events, err)
	}
	dup := WebhookInput{URL: "https://shop.example/hook", EventsGiven: true, Events: []EventType{"Settled", "Settled", "New"}}
	if err := dup.Validate(true); err != nil || len(dup.Events) != 2 {
		t.Fatalf("duplicates: %v %v", dup.Events, err)
	}
	unchanged := WebhookInput{}
	if err := unchanged.Validate(false); err != nil || unchanged.Events != nil {
		t.Fatalf("update without events must leave them unchanged: %#v %v", unchanged.Events, err)
	}
	for _, bad := range []WebhookInput{
		{},
		{URL: "https://shop.example/hook", EventsGiven: true, Events: []EventType{"settled"}},
		{URL: "https://shop.example/hook", Secret: "short"},
	} {
		if err := bad.Validate(true); ErrorCode(err) != Invalid {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

func TestEventPayloads(t *testing.T) {
	inv := &Invoice{ID: "inv1", Metadata: json.RawMessage(`{"orderId":"42"}`)}
	got := string(EventPayload(inv, Emit{Type: EventSettled, AdditionalStatus: StatusOverpaid}))
	if got != `{"type":"Settled","invoiceId":"inv1","metadata":{"orderId":"42"},"additionalStatus":"Overpaid"}` {
		t.Errorf("settled payload = %s", got)
	}
	got = string(EventPayload(&Invoice{ID: "inv2"}, Emit{Type: EventExpired, AdditionalStatus: StatusUnderpaid, IsUnderpaid: true}))
	if got != `{"type":"Expired","invoiceId":"inv2","metadata":{},"additionalStatus":"Underpaid","isUnderpaid":true}` {
		t.Errorf("expired payload = %s", got)
	}
	got = string(EventPayload(&Invoice{ID: "inv3"}, Emit{Type: EventExpired}))
	if got != `{"type":"Expired","invoiceId":"inv3","metadata":{},"additionalStatus":"None","isUnderpaid":false}` {
		t.Errorf("expired, nothing paid = %s", got)
	}
	if got := string(RedeliveryPayload(EventNew, "inv1")); got != `{"type":"New","invoiceId":"inv1"}` {
		t.Errorf("redelivery payload = %s", got)
	}
	if DeliveryPending != 1 || DeliveryDelivered != 2 || DeliveryFailed != 3 {
		t.Error("delivery statuses are on disk: their numbers must not change")
	}
}
