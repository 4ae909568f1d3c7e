package http

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// hookURL is the URL the webhook tests register.
const hookURL = "https://shop.example.com/kassa/hooks"

// refusedMessage is what the URL check says of a refused URL, as the
// real client words it.
const refusedMessage = "webhook URL answered 404 Not Found; it must answer with a 2xx status, 401 or 403"

// seedWebhook writes a webhook to storage, as the store actor writes
// one: Settled and Expired, enabled, created at testNow, changed by
// mods. Fixed ids and secrets keep the tests and golden files readable.
func seedWebhook(e *env, id, storeID string, mods ...func(*kassa.Webhook)) kassa.Webhook {
	e.t.Helper()
	w := kassa.Webhook{
		ID: id, StoreID: storeID, URL: "https://shop.example.com/hooks/" + id, Secret: "secret-of-" + id,
		Events:  []kassa.EventType{kassa.EventSettled, kassa.EventExpired},
		Enabled: true, CreatedAt: testNow, UpdatedAt: testNow,
	}
	for _, mod := range mods {
		mod(&w)
	}
	b := e.db.NewBatch()
	b.PutWebhook(&w)
	if err := e.db.Commit(e.t.Context(), b); err != nil {
		e.t.Fatal(err)
	}
	return w
}

// seedDelivery writes a delivered Settled event of webhookID to storage,
// created at at, changed by mods.
func seedDelivery(e *env, id, webhookID, storeID string, at time.Time, mods ...func(*kassa.Delivery)) kassa.Delivery {
	e.t.Helper()
	d := kassa.Delivery{
		ID: id, WebhookID: webhookID, StoreID: storeID, InvoiceID: "inv_0001", Type: kassa.EventSettled,
		Payload: json.RawMessage(`{"type":"Settled","invoiceId":"inv_0001","metadata":{"orderId":"1001"},"additionalStatus":"None"}`),
		Headers: map[string]string{
			"X-Service-Signature": "t=1735787046,v1=" + strings.Repeat("ab", 32),
			"X-Service-Sig":       "sha256=" + strings.Repeat("cd", 32),
		},
		Status: kassa.DeliveryDelivered, StatusCode: 200, ResponseBody: `{"ok":true}`,
		Duration: 153*time.Millisecond + 700*time.Microsecond, CreatedAt: at, SentAt: at.Add(time.Second),
	}
	for _, mod := range mods {
		mod(&d)
	}
	b := e.db.NewBatch()
	b.PutDelivery(&d, false)
	if err := e.db.Commit(e.t.Context(), b); err != nil {
		e.t.Fatal(err)
	}
	return d
}

// seedWebhooks gives store A an enabled webhook wh_a1 with five
// deliveries a minute apart (dl_a1_5 the newest, at testNow) and a
// disabled webhook wh_a2 with one; store B a webhook wh_b1 with one.
func seedWebhooks(e *env) {
	e.t.Helper()
	seedWebhook(e, "wh_a1", "store_a")
	seedWebhook(e, "wh_a2", "store_a", func(w *kassa.Webhook) {
		w.Enabled, w.Events, w.CreatedAt = false, nil, testNow.Add(time.Hour)
	})
	seedWebhook(e, "wh_b1", "store_b")
	for i := 1; i <= 5; i++ {
		seedDelivery(e, fmt.Sprintf("dl_a1_%d", i), "wh_a1", "store_a", testNow.Add(time.Duration(i-5)*time.Minute))
	}
	seedDelivery(e, "dl_a2_1", "wh_a2", "store_a", testNow)
	seedDelivery(e, "dl_b1_1", "wh_b1", "store_b", testNow)
}

// deliveryCount is the number of stored deliveries of the seeded
// webhooks.
func deliveryCount(e *env) int {
	e.t.Helper()
	n := 0
	for _, id := range []string{"wh_a1", "wh_a2", "wh_b1"} {
		if _, err := e.db.Deliveries(e.t.Context(), id, kassa.ListQuery{}, func(*kassa.Delivery) error { n++; return nil }); err != nil {
			e.t.Fatal(err)
		}
	}
	return n
}

// webhookCount is the number of stored webhooks of both stores.
func webhookCount(e *env) int {
	e.t.Helper()
	n := 0
	for _, st := range []string{"store_a", "store_b"} {
		if err := e.db.Webhooks(e.t.Context(), st, func(*kassa.Webhook) error { n++; return nil }); err != nil {
			e.t.Fatal(err)
		}
	}
	return n
}

// storedWebhook reads a webhook from the reader, failing the test when
// it is not there.
func storedWebhook(e *env, id string) *kassa.Webhook {
	e.t.Helper()
	w, err := e.reader.Webhook(e.t.Context(), id)
	if err != nil {
		e.t.Fatalf("webhook %s: %v", id, err)
	}
	return w
}

// webhookKeys are the fields of every webhook response.
var webhookKeys = []string{"authorizedEvents", "automaticRedelivery", "enabled", "events", "id", "secret", "url"}

// expectWebhookShape checks that a webhook object has exactly the
// webhook fields and that events is an array.
func expectWebhookShape(t *testing.T, obj map[string]any) {
	t.Helper()
	var keys []string
	for k := range obj {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, webhookKeys) {
		t.Errorf("webhook fields %v, want %v", keys, webhookKeys)
	}
	if _, ok := obj["events"].([]any); !ok {
		t.Errorf("events is %#v, want an array", obj["events"])
	}
}

func eventNames(events []kassa.EventType) string {
	names := make([]string, len(events))
	for i, e := range events {
		names[i] = string(e)
	}
	return strings.Join(names, ",")
}

func TestCreateWebhook(t *testing.T) {
	t.Parallel()
	const all = "New,Processing,Settled,Expired"
	tests := []struct {
		name      string
		body      string
		events    string
		enabled   bool
		automatic bool
		secret    string // empty: a generated one
	}{
		{name: "events omitted selects all four", body: `{"url": "` + hookURL + `"}`, events: all, enabled: true},
		{name: "events null selects all four", body: `{"url": "` + hookURL + `", "events": null}`, events: all, enabled: true},
		{name: "events empty selects none", body: `{"url": "` + hookURL + `", "events": []}`, events: "", enabled: true},
		{name: "events chosen, repeats dropped", body: `{"url": "` + hookURL + `", "events": ["Settled", "Expired", "Settled"]}`, events: "Settled,Expired", enabled: true},
		{name: "events as a comma-separated string", body: `{"url": "` + hookURL + `", "events": "Settled, New"}`, events: "Settled,New", enabled: true},
		{name: "every field", body: `{"url": "` + hookURL + `", "events": ["New"], "secret": "merchant-secret-1", "enabled": false, "automaticRedelivery": true}`, events: "New", enabled: false, automatic: true, secret: "merchant-secret-1"},
		{name: "null fields are absent", body: `{"url": "` + hookURL + `", "secret": null, "enabled": null, "automaticRedelivery": null}`, events: all, enabled: true},
		{name: "unknown fields are ignored", body: `{"url": "` + hookURL + `", "speed": "fast", "nested": {"a": [1]}}`, events: all, enabled: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			w := e.do("POST", "/api/v1/stores/store_a/webhooks", tt.body)
			expectStatus(t, w, http.StatusOK)
			expectWebhookShape(t, decode[map[string]any](t, w))
			got := decode[webhookRecord](t, w)
			want := webhookRecord{Enabled: tt.enabled, URL: hookURL, Secret: tt.secret, AutomaticRedelivery: tt.automatic}
			if tt.secret == "" && len(got.Secret) == 64 {
				want.Secret = got.Secret // generated: 32 random bytes in hex
			}
			if !kassa.ValidID(got.ID) || got.Enabled != want.Enabled || got.URL != want.URL || got.Secret != want.Secret ||
				got.AutomaticRedelivery != want.AutomaticRedelivery || eventNames(got.Events) != tt.events {
				t.Errorf("created %+v, want %+v with events %q", got, want, tt.events)
			}
			if stored := storedWebhook(e, got.ID); stored.StoreID != "store_a" || eventNames(stored.Events) != tt.events {
				t.Errorf("stored %+v", stored)
			}
		})
	}
}

func TestCreateWebhookGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/webhooks", `{
		"url": "`+hookURL+`?shop=1&x=<y>",
		"events": ["Settled", "Expired"],
		"secret": "merchant-secret-1",
		"automaticRedelivery": true
	}`)
	expectStatus(t, w, http.StatusOK)
	expectGolden(t, "webhook_create", w.Body.Bytes())
}

func TestCreateWebhookErrors(t *testing.T) {
	t.Parallel()
	const refusedURL = "https://shop.example.com/missing"
	tests := []struct {
		name        string
		body        string
		contentType string // "-" removes the header
		serviceErr  error
		status      int
		code        string
		message     string
		fields      []string
	}{
		{name: "unknown event", body: `{"url": "` + hookURL + `", "events": ["Settled", "Paid"]}`, status: 400, code: kassa.Invalid, message: `events: unknown event "Paid": use New, Processing, Settled or Expired`, fields: []string{"events"}},
		{name: "event names are case-sensitive", body: `{"url": "` + hookURL + `", "events": ["settled", "new"]}`, status: 400, code: kassa.Invalid, message: `unknown event "settled"`, fields: []string{"events"}},
		{name: "events a number", body: `{"url": "` + hookURL + `", "events": 5}`, status: 400, code: kassa.Invalid, message: "events: must be an array of event names", fields: []string{"events"}},
		{name: "events of numbers", body: `{"url": "` + hookURL + `", "events": [1, 2]}`, status: 400, code: kassa.Invalid, fields: []string{"events"}},
		{name: "events an object", body: `{"url": "` + hookURL + `", "events": {"New": true}}`, status: 400, code: kassa.Invalid, fields: []string{"events"}},
		{name: "no url", body: `{"events": ["New"]}`, status: 400, code: kassa.Invalid, message: "url: is required", fields: []string{"url"}},
		{name: "empty body", body: ``, status: 400, code: kassa.Invalid, fields: []string{"url"}},
		{name: "url over 2048 characters", body: `{"url": "https://shop.example.com/` + strings.Repeat("a", 2048) + `"}`, status: 400, code: kassa.Invalid, fields: []string{"url"}},
		{name: "url a number", body: `{"url": 5}`, status: 400, code: kassa.Invalid, message: "field url must be a string, not number", fields: []string{"url"}},
		{name: "secret too short", body: `{"url": "` + hookURL + `", "secret": "short"}`, status: 400, code: kassa.Invalid, fields: []string{"secret"}},
		{name: "enabled not a boolean", body: `{"url": "` + hookURL + `", "enabled": "yes"}`, status: 400, code: kassa.Invalid, message: "enabled must be true or false", fields: []string{"enabled"}},
		{name: "every field wrong at once", body: `{"events": ["Paid"], "secret": "short"}`, status: 400, code: kassa.Invalid, message: "(and 2 more)", fields: []string{"url", "events", "secret"}},
		{name: "malformed JSON", body: `{"url": "` + hookURL + `",}`, status: 400, code: kassa.Invalid, message: "malformed JSON at line 1"},
		{name: "not an object", body: `["` + hookURL + `"]`, status: 400, code: kassa.Invalid, message: "must be a JSON object"},
		{name: "text/plain", body: `{"url": "` + hookURL + `"}`, contentType: "text/plain", status: 415, code: kassa.UnsupportedMedia},
		{name: "no Content-Type", body: `{"url": "` + hookURL + `"}`, contentType: "-", status: 415, code: kassa.UnsupportedMedia},
		{name: "URL refused by validation", body: `{"url": "` + refusedURL + `"}`, status: 400, code: kassa.Invalid, message: refusedMessage},
		{name: "URL that does not answer", body: `{"url": "` + hookURL + `"}`, serviceErr: kassa.Errorf(kassa.Invalid, "webhook URL did not answer within 5s"), status: 400, code: kassa.Invalid, message: "did not answer within 5s"},
		{name: "too many webhooks", body: `{"url": "` + hookURL + `"}`, serviceErr: kassa.Errorf(kassa.Conflict, "a store can have at most 50 webhooks"), status: 409, code: kassa.Conflict, message: "at most 50"},
		{name: "internal failure", body: `{"url": "` + hookURL + `"}`, serviceErr: fmt.Errorf("commit: %w", errors.New("disk full at /data/000001.log")), status: 500, code: kassa.Internal, message: "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.hooks.validate = refuse(refusedURL)
			e.webhooks.err = tt.serviceErr
			var headers []header
			switch tt.contentType {
			case "":
			case "-":
				headers = append(headers, header{"Content-Type", ""})
			default:
				headers = append(headers, header{"Content-Type", tt.contentType})
			}
			w := e.do("POST", "/api/v1/stores/store_a/webhooks", tt.body, headers...)
			body := expectError(t, w, tt.status, tt.code, tt.message)
			var fields []string
			for _, f := range body.Errors {
				fields = append(fields, f.Field)
				if f.Message == "" {
					t.Errorf("field %s has no message", f.Field)
				}
			}
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields %v, want %v (%+v)", fields, tt.fields, body.Errors)
			}
			if strings.Contains(w.Body.String(), "disk full") {
				t.Error("internal cause leaked")
			}
			if n := webhookCount(e); n != 0 {
				t.Errorf("%d webhooks stored after a failed create", n)
			}
		})
	}
}

// refuse answers the registration check of url as a receiver that
// answers 404 does.
func refuse(url string) func(string) error {
	return func(u string) error {
		if u == url {
			return kassa.Errorf(kassa.Invalid, "%s", refusedMessage)
		}
		return nil
	}
}

func TestUpdateWebhook(t *testing.T) {
	t.Parallel()
	// The seeded webhook: events Settled,Expired, enabled, no automatic
	// redelivery.
	const (
		oldURL    = "https://shop.example.com/hooks/wh_a1"
		oldSecret = "secret-of-wh_a1"
		newURL    = "https://shop.example.com/hooks/v2"
		oldEvents = "Settled,Expired"
	)
	tests := []struct {
		name   string
		body   string
		want   webhookRecord
		events string
	}{
		{"no body changes nothing", ``, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, oldEvents},
		{"empty object changes nothing", `{}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, oldEvents},
		{"disable only", `{"enabled": false}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: false}, oldEvents},
		{"automatic redelivery only", `{"automaticRedelivery": true}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true, AutomaticRedelivery: true}, oldEvents},
		{"events emptied", `{"events": []}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, ""},
		{"events null leaves them", `{"events": null, "enabled": null}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, oldEvents},
		{"events replaced", `{"events": ["New", "Processing"]}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, "New,Processing"},
		{"new url", `{"url": "` + newURL + `"}`, webhookRecord{URL: newURL, Secret: oldSecret, Enabled: true}, oldEvents},
		{"empty url leaves it", `{"url": "", "secret": ""}`, webhookRecord{URL: oldURL, Secret: oldSecret, Enabled: true}, oldEvents},
		{"new secret", `{"secret": "rotated-secret-2"}`, webhookRecord{URL: oldURL, Secret: "rotated-secret-2", Enabled: true}, oldEvents},
		{"everything", `{"url": "` + newURL + `", "events": ["Expired"], "secret": "rotated-secret-2", "enabled": false, "automaticRedelivery": true}`,
			webhookRecord{URL: newURL, Secret: "rotated-secret-2", AutomaticRedelivery: true}, "Expired"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedWebhooks(e)
			w := e.do("PUT", "/api/v1/stores/store_a/webhooks/wh_a1", tt.body)
			expectStatus(t, w, http.StatusOK)
			expectWebhookShape(t, decode[map[string]any](t, w))
			tt.want.ID = "wh_a1"
			check := func(what string, got webhookRecord) {
				t.Helper()
				if got.ID != tt.want.ID || got.URL != tt.want.URL || got.Secret != tt.want.Secret || got.Enabled != tt.want.Enabled ||
					got.AutomaticRedelivery != tt.want.AutomaticRedelivery || eventNames(got.Events) != tt.events {
					t.Errorf("%s %+v, want %+v with events %q", what, got, tt.want, tt.events)
				}
			}
			check("response", decode[webhookRecord](t, w))
			check("stored", newWebhookRecord(storedWebhook(e, "wh_a1")))
		})
	}
}

func TestUpdateWebhookErrors(t *testing.T) {
	t.Parallel()
	const refusedURL = "https://shop.example.com/missing"
	tests := []struct {
		name, path, body string
		headers          []header
		status           int
		code, message    string
		fields           []string
	}{
		{"unknown webhook", "/api/v1/stores/store_a/webhooks/wh_zz", `{"enabled": false}`, nil, 404, kassa.NotFound, "webhook not found", nil},
		{"webhook of another store", "/api/v1/stores/store_a/webhooks/wh_b1", `{"enabled": false}`, nil, 404, kassa.NotFound, "webhook not found", nil},
		{"id that is no id", "/api/v1/stores/store_a/webhooks/wh.a1", `{"enabled": false}`, nil, 404, kassa.NotFound, "webhook not found", nil},
		{"key of another store", "/api/v1/stores/store_a/webhooks/wh_a1", `{"enabled": false}`, []header{asB}, 403, kassa.Forbidden, "", nil},
		{"unknown event", "/api/v1/stores/store_a/webhooks/wh_a1", `{"events": ["Paid"]}`, nil, 400, kassa.Invalid, `unknown event "Paid"`, []string{"events"}},
		{"secret too short", "/api/v1/stores/store_a/webhooks/wh_a1", `{"secret": "short", "enabled": false}`, nil, 400, kassa.Invalid, "secret", []string{"secret"}},
		{"enabled not a boolean", "/api/v1/stores/store_a/webhooks/wh_a1", `{"enabled": 0}`, nil, 400, kassa.Invalid, "enabled", []string{"enabled"}},
		{"new URL refused", "/api/v1/stores/store_a/webhooks/wh_a1", `{"url": "` + refusedURL + `", "enabled": false}`, nil, 400, kassa.Invalid, refusedMessage, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedWebhooks(e)
			e.hooks.validate = refuse(refusedURL)
			before := [...]kassa.Webhook{*storedWebhook(e, "wh_a1"), *storedWebhook(e, "wh_b1")}
			body := expectError(t, e.do("PUT", tt.path, tt.body, tt.headers...), tt.status, tt.code, tt.message)
			var fields []string
			for _, f := range body.Errors {
				fields = append(fields, f.Field)
			}
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields %v, want %v", fields, tt.fields)
			}
			for _, old := range before {
				if now := storedWebhook(e, old.ID); now.Enabled != old.Enabled || now.URL != old.URL || now.Secret != old.Secret {
					t.Errorf("webhook %s changed by a failed update: %+v", old.ID, now)
				}
			}
		})
	}
}

func TestGetWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1", "")
	expectStatus(t, w, http.StatusOK)
	expectWebhookShape(t, decode[map[string]any](t, w))
	expectGolden(t, "webhook", w.Body.Bytes())

	// wh_a2 is stored with no events (nil): still an array.
	w = e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a2", "")
	expectStatus(t, w, http.StatusOK)
	expectWebhookShape(t, decode[map[string]any](t, w))
	if !strings.Contains(w.Body.String(), `"events":[]`) {
		t.Errorf("events of a webhook with none: %s", w.Body.String())
	}

	tests := []struct {
		name, path string
		headers    []header
		status     int
		code       string
	}{
		{"unknown webhook", "/api/v1/stores/store_a/webhooks/wh_zz", nil, 404, kassa.NotFound},
		{"webhook of another store", "/api/v1/stores/store_a/webhooks/wh_b1", nil, 404, kassa.NotFound},
		{"webhook of another store, by its own key on our path", "/api/v1/stores/store_a/webhooks/wh_b1", []header{asB}, 403, kassa.Forbidden},
		{"id that is no id", "/api/v1/stores/store_a/webhooks/wh%20a1", nil, 404, kassa.NotFound},
		{"over-long id", "/api/v1/stores/store_a/webhooks/" + strings.Repeat("w", 65), nil, 404, kassa.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do("GET", tt.path, "", tt.headers...), tt.status, tt.code)
		})
	}
}

func TestDeleteWebhook(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)

	w := e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_a1", "")
	expectStatus(t, w, http.StatusOK)
	if got := strings.TrimSpace(w.Body.String()); got != `{"message":"webhook deleted"}` {
		t.Errorf("body %s", got)
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1", ""), 404, kassa.NotFound)
	expectError(t, e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_a1", ""), 404, kassa.NotFound, "webhook not found")

	expectError(t, e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_b1", ""), 404, kassa.NotFound, "webhook not found")
	expectError(t, e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_a2", "", asB), 403, kassa.Forbidden)
	storedWebhook(e, "wh_b1")
	storedWebhook(e, "wh_a2")

	e.webhooks.err = kassa.Errorf(kassa.Unavailable, "store is restarting")
	expectError(t, e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_a2", ""), 503, kassa.Unavailable, "restarting")
}

func TestListWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	expectStatus(t, e.do("GET", "/api/v1/stores/store_a/webhooks", ""), http.StatusOK)
	if got := strings.TrimSpace(e.do("GET", "/api/v1/stores/store_a/webhooks", "").Body.String()); got != "[]" {
		t.Errorf("empty list = %s", got)
	}

	seedWebhooks(e)
	w := e.do("GET", "/api/v1/stores/store_a/webhooks", "")
	expectStatus(t, w, http.StatusOK)
	expectGolden(t, "webhooks", w.Body.Bytes())
	list := decode[[]map[string]any](t, w)
	if len(list) != 2 {
		t.Fatalf("%d webhooks, want store A's 2", len(list))
	}
	for _, obj := range list {
		expectWebhookShape(t, obj)
	}

	w = e.do("GET", "/api/v1/stores/store_b/webhooks", "", asB)
	expectStatus(t, w, http.StatusOK)
	if got := decode[[]webhookRecord](t, w); len(got) != 1 || got[0].ID != "wh_b1" {
		t.Errorf("store B's list %+v", got)
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_b/webhooks", ""), 403, kassa.Forbidden)
}

func TestListDeliveries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	seedDelivery(e, "dl_a1_6", "wh_a1", "store_a", testNow.Add(time.Minute), func(d *kassa.Delivery) {
		d.Status, d.StatusCode, d.ResponseBody, d.Duration, d.SentAt, d.Headers = kassa.DeliveryPending, 0, "", 0, time.Time{}, nil
	})
	ids := func(w *httptest.ResponseRecorder) string {
		var out []string
		for _, rec := range decode[[]deliveryRecord](t, w) {
			out = append(out, rec.ID)
		}
		return strings.Join(out, " ")
	}

	w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries", "")
	expectStatus(t, w, http.StatusOK)
	if got, want := ids(w), "dl_a1_6 dl_a1_5 dl_a1_4 dl_a1_3 dl_a1_2 dl_a1_1"; got != want {
		t.Errorf("ids %q, want %q (newest first)", got, want)
	}
	if w.Header().Get("Next-Cursor") != "" {
		t.Error("Next-Cursor without a limit")
	}
	list := decode[[]map[string]any](t, w)
	if _, ok := list[1]["payload"].(map[string]any); !ok {
		t.Errorf("payload is %#v, want an object", list[1]["payload"])
	}
	if _, ok := list[0]["headers"].(map[string]any); !ok || list[0]["sentAt"] != nil {
		t.Errorf("pending delivery: headers %#v, sentAt %#v; want an object and null", list[0]["headers"], list[0]["sentAt"])
	}

	t.Run("pages", func(t *testing.T) {
		var got []string
		cursor := ""
		for range 5 {
			w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=4&cursor="+cursor, "")
			expectStatus(t, w, http.StatusOK)
			got = append(got, ids(w))
			if cursor = w.Header().Get("Next-Cursor"); cursor == "" {
				break
			}
		}
		want := []string{"dl_a1_6 dl_a1_5 dl_a1_4 dl_a1_3", "dl_a1_2 dl_a1_1"}
		if !slices.Equal(got, want) {
			t.Errorf("pages %q, want %q", got, want)
		}
	})

	t.Run("page shape", func(t *testing.T) {
		w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=2", "")
		expectStatus(t, w, http.StatusOK)
		next := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=1&cursor="+w.Header().Get("Next-Cursor"), "")
		if got := ids(next); got != "dl_a1_4" {
			t.Errorf("the page after Next-Cursor starts at %q, want dl_a1_4", got)
		}
		expectGolden(t, "deliveries", w.Body.Bytes())
	})

	t.Run("date filter", func(t *testing.T) {
		w := e.do("GET", fmt.Sprintf("/api/v1/stores/store_a/webhooks/wh_a1/deliveries?startDate=%d", testNow.Add(-90*time.Second).Unix()), "")
		if got := ids(w); got != "dl_a1_6 dl_a1_5 dl_a1_4" {
			t.Errorf("ids %q", got)
		}
	})

	t.Run("webhook without deliveries", func(t *testing.T) {
		seedWebhook(e, "wh_a3", "store_a")
		w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a3/deliveries", "")
		expectStatus(t, w, http.StatusOK)
		if strings.TrimSpace(w.Body.String()) != "[]" {
			t.Errorf("empty list = %s", w.Body.String())
		}
	})

	tests := []struct {
		name, path string
		headers    []header
		status     int
		code       string
		message    string
	}{
		{"webhook of another store", "/api/v1/stores/store_a/webhooks/wh_b1/deliveries", nil, 404, kassa.NotFound, "webhook not found"},
		{"unknown webhook", "/api/v1/stores/store_a/webhooks/wh_zz/deliveries", nil, 404, kassa.NotFound, "webhook not found"},
		{"id that is no id", "/api/v1/stores/store_a/webhooks/wh$1/deliveries", nil, 404, kassa.NotFound, "webhook not found"},
		{"key of another store", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries", []header{asB}, 403, kassa.Forbidden, ""},
		{"limit 0", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=0", nil, 400, kassa.Invalid, "limit"},
		{"unknown cursor", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=2&cursor=dl_zz", nil, 400, kassa.Invalid, "cursor"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do("GET", tt.path, "", tt.headers...), tt.status, tt.code, tt.message)
		})
	}
}

func TestListDeliveriesFailure(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	e.reader.listItem = failAt(0)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries", ""), 500, kassa.Internal, "internal error")
	e.reader.listItem = failAt(2)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries?limit=10", ""), 500, kassa.Internal)
}

func TestGetDelivery(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	seedDelivery(e, "dl_a1_failed", "wh_a1", "store_a", testNow, func(d *kassa.Delivery) {
		d.Status, d.StatusCode, d.ResponseBody = kassa.DeliveryFailed, 500, "<html>upstream <b>down</b></html>"
		d.Error = "webhook URL answered 500 Internal Server Error"
		d.Attempt, d.RedeliveryOf = 2, "dl_a1_1"
	})
	w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a1_failed", "")
	expectStatus(t, w, http.StatusOK)
	expectGolden(t, "delivery", w.Body.Bytes())

	seedDelivery(e, "dl_a1_pending", "wh_a1", "store_a", testNow, func(d *kassa.Delivery) {
		d.Status, d.StatusCode, d.ResponseBody, d.Duration, d.SentAt, d.Headers = kassa.DeliveryPending, 0, "", 0, time.Time{}, nil
	})
	w = e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a1_pending", "")
	expectStatus(t, w, http.StatusOK)
	for _, want := range []string{`"status":"Pending"`, `"sentAt":null`, `"headers":{}`, `"durationMs":0`} {
		if !strings.Contains(w.Body.String(), want) {
			t.Errorf("pending delivery lacks %s: %s", want, w.Body.String())
		}
	}

	tests := []struct {
		name, path string
		headers    []header
		status     int
		code       string
	}{
		{"unknown delivery", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_zz", nil, 404, kassa.NotFound},
		{"delivery of another webhook of the store", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a2_1", nil, 404, kassa.NotFound},
		{"delivery of another store, through our webhook", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_b1_1", nil, 404, kassa.NotFound},
		{"delivery of another store, through its webhook", "/api/v1/stores/store_a/webhooks/wh_b1/deliveries/dl_b1_1", nil, 404, kassa.NotFound},
		{"key of another store", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a1_1", []header{asB}, 403, kassa.Forbidden},
		{"delivery id that is no id", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl.1", nil, 404, kassa.NotFound},
		{"webhook id that is no id", "/api/v1/stores/store_a/webhooks/wh.a1/deliveries/dl_a1_1", nil, 404, kassa.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do("GET", tt.path, "", tt.headers...), tt.status, tt.code)
		})
	}

	t.Run("readable after its webhook is deleted", func(t *testing.T) {
		expectStatus(t, e.do("DELETE", "/api/v1/stores/store_a/webhooks/wh_a2", ""), http.StatusOK)
		w := e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a2/deliveries/dl_a2_1", "")
		expectStatus(t, w, http.StatusOK)
		if got := decode[deliveryRecord](t, w); got.ID != "dl_a2_1" || got.WebhookID != "wh_a2" {
			t.Errorf("delivery %+v", got)
		}
	})
}

func TestRedeliver(t *testing.T) {
	t.Parallel()
	const path = "/api/v1/stores/store_a/webhooks/wh_a1/paylods/dl_a1_3/redeliver"
	tests := []struct {
		name           string
		body           string
		headers        []header
		receiverStatus int
		status         string
		statusCode     int
		errorText      string
	}{
		{name: "no body", receiverStatus: 200, status: "Delivered", statusCode: 200},
		{name: "empty object", body: `{}`, receiverStatus: 204, status: "Delivered", statusCode: 204},
		{name: "any JSON", body: `{"reason": "customer asked", "n": [1, 2]}`, receiverStatus: 200, status: "Delivered", statusCode: 200},
		{name: "body without Content-Type", body: `{}`, headers: []header{{"Content-Type", ""}}, receiverStatus: 200, status: "Delivered", statusCode: 200},
		{name: "receiver fails again", receiverStatus: 500, status: "Failed", statusCode: 500, errorText: "webhook URL answered 500 Internal Server Error"},
		{name: "receiver unreachable", receiverStatus: 0, status: "Failed", statusCode: 0, errorText: "did not answer within 5s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedWebhooks(e)
			e.hooks.deliver = receiver(tt.receiverStatus)
			before := deliveryCount(e)
			w := e.do("POST", path, tt.body, tt.headers...)
			expectStatus(t, w, http.StatusOK)
			got := decode[redelivered](t, w)
			if got.Message != "webhook was resent" || !kassa.ValidID(got.DeliveryID) || got.Status != tt.status ||
				got.StatusCode != tt.statusCode || !strings.Contains(got.Error, tt.errorText) || (tt.errorText == "") != (got.Error == "") {
				t.Errorf("answer %+v", got)
			}
			if deliveryCount(e) != before+1 {
				t.Errorf("%d deliveries, want %d", deliveryCount(e), before+1)
			}
			w = e.do("GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/"+got.DeliveryID, "")
			expectStatus(t, w, http.StatusOK)
			d := decode[deliveryRecord](t, w)
			if d.RedeliveryOf != "dl_a1_3" || d.Status != tt.status || string(d.Payload) != `{"type":"Settled","invoiceId":"inv_0001"}` {
				t.Errorf("new delivery %+v payload %s", d, d.Payload)
			}
		})
	}
}

// receiver answers deliveries with status, as the egress client reports
// it (0: no answer).
func receiver(status int) func(string, []byte) kassa.WebhookAttempt {
	return func(string, []byte) kassa.WebhookAttempt {
		switch {
		case status == 0:
			return kassa.WebhookAttempt{Err: "webhook URL did not answer within 5s", Duration: 5 * time.Second}
		case status < 200 || status > 299:
			return kassa.WebhookAttempt{StatusCode: status, Err: fmt.Sprintf("webhook URL answered %d %s", status, http.StatusText(status))}
		}
		return kassa.WebhookAttempt{StatusCode: status, OK: true, Duration: 12 * time.Millisecond}
	}
}

func TestRedeliverErrors(t *testing.T) {
	t.Parallel()
	const base = "/api/v1/stores/store_a/webhooks/"
	tests := []struct {
		name, method, path, body string
		headers                  []header
		status                   int
		code, message            string
	}{
		{"unknown payload", "POST", base + "wh_a1/paylods/dl_zz/redeliver", "", nil, 404, kassa.NotFound, "delivery not found"},
		{"payload of another webhook", "POST", base + "wh_a1/paylods/dl_a2_1/redeliver", "", nil, 404, kassa.NotFound, "delivery not found"},
		{"payload of another store, through our webhook", "POST", base + "wh_a1/paylods/dl_b1_1/redeliver", "", nil, 404, kassa.NotFound, "delivery not found"},
		{"webhook of another store", "POST", base + "wh_b1/paylods/dl_b1_1/redeliver", "", nil, 404, kassa.NotFound, "webhook not found"},
		{"unknown webhook", "POST", base + "wh_zz/paylods/dl_a1_1/redeliver", "", nil, 404, kassa.NotFound, "webhook not found"},
		{"payload id that is no id", "POST", base + "wh_a1/paylods/dl%2F1/redeliver", "", nil, 404, kassa.NotFound, ""},
		{"disabled webhook", "POST", base + "wh_a2/paylods/dl_a2_1/redeliver", "", nil, 409, kassa.Conflict, "disabled"},
		{"path spelled payloads", "POST", base + "wh_a1/payloads/dl_a1_1/redeliver", "", nil, 404, kassa.NotFound, "no route"},
		{"GET on the redeliver path", "GET", base + "wh_a1/paylods/dl_a1_1/redeliver", "", nil, 405, kassa.MethodNotAllowed, ""},
		{"body over 1 MiB", "POST", base + "wh_a1/paylods/dl_a1_1/redeliver", `{"x": "` + strings.Repeat("a", MaxBodyBytes) + `"}`, nil, 413, kassa.TooLarge, ""},
		{"no key", "POST", base + "wh_a1/paylods/dl_a1_1/redeliver", "", []header{noKey}, 401, kassa.Unauthorized, ""},
		{"key of another store", "POST", base + "wh_a1/paylods/dl_a1_1/redeliver", "", []header{asB}, 403, kassa.Forbidden, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedWebhooks(e)
			before := deliveryCount(e)
			expectError(t, e.do(tt.method, tt.path, tt.body, tt.headers...), tt.status, tt.code, tt.message)
			if deliveryCount(e) != before {
				t.Error("a failed redelivery stored a delivery")
			}
		})
	}
}

// webhookRoutes is one request to each webhook route of store A.
var webhookRoutes = []struct{ method, path, body string }{
	{"GET", "/api/v1/stores/store_a/webhooks", ""},
	{"POST", "/api/v1/stores/store_a/webhooks", `{"url": "` + hookURL + `"}`},
	{"GET", "/api/v1/stores/store_a/webhooks/wh_a1", ""},
	{"PUT", "/api/v1/stores/store_a/webhooks/wh_a1", `{"enabled": false}`},
	{"DELETE", "/api/v1/stores/store_a/webhooks/wh_a1", ""},
	{"GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries", ""},
	{"GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a1_1", ""},
	{"POST", "/api/v1/stores/store_a/webhooks/wh_a1/paylods/dl_a1_1/redeliver", ""},
}

func TestWebhookRoutesAuthentication(t *testing.T) {
	t.Parallel()
	for _, rt := range webhookRoutes {
		t.Run(rt.method+" "+rt.path, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			seedWebhooks(e)
			expectError(t, e.do(rt.method, rt.path, rt.body, noKey), 401, kassa.Unauthorized, "missing API key")
			expectError(t, e.do(rt.method, rt.path, rt.body, header{"X-Api-Key", "not-a-key"}), 401, kassa.Unauthorized, "unknown API key")
			expectError(t, e.do(rt.method, rt.path, rt.body, asB), 403, kassa.Forbidden)
			if webhookCount(e) != 3 || deliveryCount(e) != 7 || !storedWebhook(e, "wh_a1").Enabled {
				t.Error("an unauthorised request changed something")
			}
			expectStatus(t, e.do(rt.method, rt.path, rt.body), http.StatusOK)
		})
	}
}

func TestWebhooksUnavailable(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDeps(func(d *Deps) { d.Webhooks = nil }))
	seedWebhooks(e)
	for _, rt := range webhookRoutes {
		expectError(t, e.do(rt.method, rt.path, rt.body), 404, kassa.NotFound, "webhooks are not available on this server")
		expectError(t, e.do(rt.method, rt.path, rt.body, noKey), 401, kassa.Unauthorized)
	}
}

func TestWebhookIdempotency(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	key := header{"Idempotency-Key", "register-hook-1"}
	hooks := webhookCount(e)

	first := e.do("POST", "/api/v1/stores/store_a/webhooks", `{"url": "`+hookURL+`"}`, key)
	expectStatus(t, first, http.StatusOK)
	again := e.do("POST", "/api/v1/stores/store_a/webhooks", `{"url": "`+hookURL+`"}`, key)
	expectStatus(t, again, http.StatusOK)
	if again.Body.String() != first.Body.String() || again.Header().Get("Idempotent-Replayed") != "true" {
		t.Errorf("replay %s (replayed %q), want %s", again.Body.String(), again.Header().Get("Idempotent-Replayed"), first.Body.String())
	}
	if n := webhookCount(e) - hooks; n != 1 {
		t.Errorf("%d webhooks registered, want one", n)
	}
	expectError(t, e.do("POST", "/api/v1/stores/store_a/webhooks", `{"url": "`+hookURL+`/other"}`, key), 409, kassa.Conflict, "Idempotency-Key")

	redeliver := "/api/v1/stores/store_a/webhooks/wh_a1/paylods/dl_a1_1/redeliver"
	rkey := header{"Idempotency-Key", "resend-dl_a1_1"}
	before := deliveryCount(e)
	first = e.do("POST", redeliver, "", rkey)
	expectStatus(t, first, http.StatusOK)
	again = e.do("POST", redeliver, "", rkey)
	expectStatus(t, again, http.StatusOK)
	if again.Body.String() != first.Body.String() || deliveryCount(e) != before+1 {
		t.Errorf("redelivery replay %s, want %s; %d new deliveries, want 1", again.Body.String(), first.Body.String(), deliveryCount(e)-before)
	}
}

func TestWebhookTracing(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedWebhooks(e)
	tests := []struct {
		method, path, body, name string
	}{
		{"POST", "/api/v1/stores/store_a/webhooks", `{"url": "` + hookURL + `"}`,
			"POST /api/v1/stores/{storeId}/webhooks"},
		{"GET", "/api/v1/stores/store_a/webhooks/wh_a1/deliveries/dl_a1_1", "",
			"GET /api/v1/stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}"},
		{"POST", "/api/v1/stores/store_a/webhooks/wh_a1/paylods/dl_a1_1/redeliver", "",
			"POST /api/v1/stores/{storeId}/webhooks/{webhookId}/paylods/{payloadId}/redeliver"},
	}
	for _, tt := range tests {
		traceID := newTraceID(t)
		expectStatus(t, e.do(tt.method, tt.path, tt.body, header{"Traceparent", "00-" + traceID + "-b7ad6b7169203331-01"}), http.StatusOK)
		got := spansOfTrace(traceID, tracerName)
		if len(got) != 1 || got[0].Name() != tt.name {
			var names []string
			for _, s := range got {
				names = append(names, s.Name())
			}
			t.Errorf("spans %q, want one named %q", names, tt.name)
		}
	}
}

// FuzzWebhookBodies sends arbitrary bodies to create and update a
// webhook: every answer is JSON, and nothing is a server error.
func FuzzWebhookBodies(f *testing.F) {
	for _, seed := range []string{
		`{"url": "https://shop.example.com/h", "events": ["New", "Settled"], "secret": "0123456789"}`,
		`{"url": "https://shop.example.com/h", "events": "New,Expired", "enabled": false, "automaticRedelivery": true}`,
		`{"url": "https://shop.example.com/h", "events": [], "enabled": null}`,
		`{"url": 1, "events": [null, 1, {}], "secret": []}`,
		`{"events": "\u0000,\ud800", "url": ""}`,
		`null`, `[]`, `"x"`, `{`, ``,
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, update bool) {
		e := newEnv(t)
		seedWebhooks(e)
		method, path := "POST", "/api/v1/stores/store_a/webhooks"
		if update {
			method, path = "PUT", "/api/v1/stores/store_a/webhooks/wh_a1"
		}
		w := e.do(method, path, body)
		switch w.Code {
		case 200:
			expectWebhookShape(t, decode[map[string]any](t, w))
		case 400, 413, 415:
		default:
			t.Fatalf("status %d for %q: %s", w.Code, body, w.Body.String())
		}
		if !json.Valid(w.Body.Bytes()) {
			t.Fatalf("answer is not JSON: %s", w.Body.String())
		}
	})
}

func TestDeliveryPayload(t *testing.T) {
	t.Parallel()
	tests := []struct{ stored, want string }{
		{`{"type":"New","invoiceId":"inv_1"}`, `{"type":"New","invoiceId":"inv_1"}`},
		{``, `null`},
		{`null`, `null`},
		{`{"type":`, `"{\"type\":"`}, // not JSON: shown as a string, never a broken body
	}
	for _, tt := range tests {
		got := deliveryPayload(json.RawMessage(tt.stored))
		if string(got) != tt.want {
			t.Errorf("deliveryPayload(%q) = %s, want %s", tt.stored, got, tt.want)
		}
		if _, err := json.Marshal(newDeliveryRecord(&kassa.Delivery{Payload: json.RawMessage(tt.stored)})); err != nil {
			t.Errorf("record of payload %q does not encode: %v", tt.stored, err)
		}
	}
}

// TestWebhookAuthorizedEventsReadBack: a webhook read back carries the
// authorizedEvents form it can be created with, beside events.
func TestWebhookAuthorizedEventsReadBack(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tt := range []struct{ body, want string }{
		{`{"url": "` + hookURL + `", "authorizedEvents": {"everything": false, "specificEvents": ["Settled"]}}`, `{"everything":false,"specificEvents":["Settled"]}`},
		{`{"url": "` + hookURL + `", "authorizedEvents": {"everything": true}}`, `{"everything":true,"specificEvents":["New","Processing","Settled","Expired"]}`},
		{`{"url": "` + hookURL + `", "events": []}`, `{"everything":false,"specificEvents":[]}`},
	} {
		w := e.do("POST", "/api/v1/stores/store_a/webhooks", tt.body)
		expectStatus(t, w, http.StatusOK)
		id := decode[webhookRecord](t, w).ID
		got := decode[map[string]json.RawMessage](t, e.do("GET", "/api/v1/stores/store_a/webhooks/"+id, ""))
		if string(got["authorizedEvents"]) != tt.want {
			t.Errorf("%s: authorizedEvents read back = %s, want %s", tt.body, got["authorizedEvents"], tt.want)
		}
	}
}
