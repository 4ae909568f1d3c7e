package kassa

import (
	"encoding/json"
	"strings"
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
	if got != `{"type":"Settled","invoiceId":"inv1","metadata":{"orderId":"42"},"additionalStatus":"Overpaid","overPaid":true,"afterExpiration":false}` {
		t.Errorf("settled payload = %s", got)
	}
	got = string(EventPayload(inv, Emit{Type: EventSettled, AdditionalStatus: StatusPaidAfterExpiration}))
	if got != `{"type":"Settled","invoiceId":"inv1","metadata":{"orderId":"42"},"additionalStatus":"PaidAfterExpiration","overPaid":false,"afterExpiration":true}` {
		t.Errorf("settled after expiration payload = %s", got)
	}
	got = string(EventPayload(inv, Emit{Type: EventProcessing}))
	if got != `{"type":"Processing","invoiceId":"inv1","metadata":{"orderId":"42"},"additionalStatus":"None"}` {
		t.Errorf("processing payload = %s", got)
	}
	got = string(EventPayload(&Invoice{ID: "inv2"}, Emit{Type: EventExpired, AdditionalStatus: StatusUnderpaid, IsUnderpaid: true}))
	if got != `{"type":"Expired","invoiceId":"inv2","metadata":{},"additionalStatus":"Underpaid","isUnderpaid":true,"partiallyPaid":true,"underpaid":true}` {
		t.Errorf("expired payload = %s", got)
	}
	got = string(EventPayload(&Invoice{ID: "inv3"}, Emit{Type: EventExpired}))
	if got != `{"type":"Expired","invoiceId":"inv3","metadata":{},"additionalStatus":"None","isUnderpaid":false,"partiallyPaid":false,"underpaid":false}` {
		t.Errorf("expired, nothing paid = %s", got)
	}
	if got := string(RedeliveryPayload(EventNew, "inv1")); got != `{"type":"New","invoiceId":"inv1"}` {
		t.Errorf("redelivery payload = %s", got)
	}
	if DeliveryPending != 1 || DeliveryDelivered != 2 || DeliveryFailed != 3 {
		t.Error("delivery statuses are on disk: their numbers must not change")
	}
}

func TestNewWebhook(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	no := false
	in := &WebhookInput{URL: "https://shop.example/hook"}
	if err := in.Validate(true); err != nil {
		t.Fatal(err)
	}
	w := NewWebhook("wh1", "st1", in, now)
	if w.ID != "wh1" || w.StoreID != "st1" || w.URL != in.URL || !w.Enabled || w.AutomaticRedelivery ||
		len(w.Events) != 4 || len(w.Secret) < 8 || !w.CreatedAt.Equal(now) || !w.UpdatedAt.Equal(now) {
		t.Errorf("defaults: %+v", w)
	}
	w = NewWebhook("wh2", "st1", &WebhookInput{URL: in.URL, Secret: "given-secret", Enabled: &no, EventsGiven: true}, now)
	if w.Secret != "given-secret" || w.Enabled || w.Events == nil || len(w.Events) != 0 {
		t.Errorf("given: %+v", w)
	}
}

// TestWebhookUpdate is the table of what an update (PUT) changes: what it
// leaves out stays as it was.
func TestWebhookUpdate(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := created.Add(time.Hour)
	yes, no := true, false
	base := Webhook{ID: "wh1", StoreID: "st1", URL: "https://old.example/hook", Secret: "old-secret",
		Events: []EventType{EventNew, EventSettled}, Enabled: true, CreatedAt: created, UpdatedAt: created}
	cases := []struct {
		name string
		in   WebhookInput
		want func(w *Webhook)
	}{
		{"nothing given changes nothing", WebhookInput{}, func(*Webhook) {}},
		{"url", WebhookInput{URL: "https://new.example/hook"}, func(w *Webhook) { w.URL = "https://new.example/hook" }},
		{"secret", WebhookInput{Secret: "new-secret"}, func(w *Webhook) { w.Secret = "new-secret" }},
		{"events replace the selection", WebhookInput{EventsGiven: true, Events: []EventType{EventExpired}},
			func(w *Webhook) { w.Events = []EventType{EventExpired} }},
		{"an empty event list selects none", WebhookInput{EventsGiven: true}, func(w *Webhook) { w.Events = []EventType{} }},
		{"events not given stay", WebhookInput{Events: []EventType{EventExpired}}, func(*Webhook) {}},
		{"disable", WebhookInput{Enabled: &no}, func(w *Webhook) { w.Enabled = false }},
		{"enable when enabled", WebhookInput{Enabled: &yes}, func(*Webhook) {}},
		{"automatic redelivery", WebhookInput{AutomaticRedelivery: &yes}, func(w *Webhook) { w.AutomaticRedelivery = true }},
		{"everything at once",
			WebhookInput{URL: "https://new.example/hook", Secret: "new-secret", EventsGiven: true, Events: []EventType{EventInvalid},
				Enabled: &no, AutomaticRedelivery: &yes},
			func(w *Webhook) {
				w.URL, w.Secret, w.Events, w.Enabled, w.AutomaticRedelivery = "https://new.example/hook", "new-secret", []EventType{EventInvalid}, false, true
			}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			old := base
			old.Events = append([]EventType(nil), base.Events...)
			got := old.Update(&c.in, now)
			want := base
			want.Events = append([]EventType(nil), base.Events...)
			c.want(&want)
			want.UpdatedAt = now
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(&want)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("got  %s\nwant %s", gotJSON, wantJSON)
			}
			if oldJSON, _ := json.Marshal(&old); string(oldJSON) != string(mustJSON(&base)) {
				t.Errorf("Update changed its receiver: %s", oldJSON)
			}
		})
	}
}

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return out
}

func TestInvalidEventSelectableNeverSelected(t *testing.T) {
	in := WebhookInput{URL: "https://shop.example/hook", EventsGiven: true, Events: []EventType{"Invalid", "Settled"}}
	if err := in.Validate(true); err != nil || len(in.Events) != 2 {
		t.Fatalf("Invalid in an event list: %v %v", in.Events, err)
	}
	w := NewWebhook("wh1", "st1", &in, time.Now())
	if w.Selects(EventInvalid) || !w.Selects(EventSettled) || w.Selects(EventNew) {
		t.Errorf("Selects with events %v", w.Events)
	}
}

func TestCheckSigAlias(t *testing.T) {
	for _, ok := range []string{"X-Coinsnap-Sig", "x-coinsnap-sig", "BTCPay-Sig", "X_Sig.v1~"} {
		if err := CheckSigAlias(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for _, bad := range []string{"", "X Sig", "X-Sig:", "X-Sig\r\nX-Evil: 1", "Ünicode", "x-service-sig", "X-SERVICE-SIGNATURE",
		"x-service-event-id", "X-Service-Delivery-Id", "content-type", "Host", "Content-Length", "Transfer-Encoding",
		"User-Agent", "Authorization", strings.Repeat("x", 65)} {
		if err := CheckSigAlias(bad); ErrorCode(err) != Invalid {
			t.Errorf("%q: %v, want invalid", bad, err)
		}
	}
}
