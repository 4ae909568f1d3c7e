package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest/apitest"
	"github.com/kassapay/kassa/webhook"
)

// End-to-end tests of webhooks (docs/api.md, Webhooks) against
// the real binary, with real local HTTP receivers. Every server runs with
// --dev, which allows the loopback URLs of httptest servers.

// hookRequest is one request that a receiver got.
type hookRequest struct {
	Method string
	Path   string
	Header http.Header
	Body   []byte
	At     time.Time // when the handler was entered
	// Open is how many requests to each path were unanswered when this
	// one arrived.
	Open map[string]int
}

// validation reports whether h is a URL validation request rather than
// an event.
func (h hookRequest) validation() bool {
	var v struct {
		Purpose string `json:"purpose"`
	}
	return json.Unmarshal(h.Body, &v) == nil && v.Purpose == "webhook_url_validation"
}

// event decodes the body as an event; a body that is not one decodes to
// the zero Event.
func (h hookRequest) event() webhook.Event {
	var e webhook.Event
	json.Unmarshal(h.Body, &e)
	return e
}

// answer is how a receiver answers the requests to one path.
type answer struct {
	status int           // 0 means 200
	delay  time.Duration // wait this long before answering
	hang   bool          // never answer: wait until the client gives up or the test ends
	hangOn string        // with hang: hang only on events of this type
}

// receiver is a merchant's webhook endpoint: it records every request and
// answers as told per path.
type receiver struct {
	srv     *httptest.Server
	release chan struct{} // closed at the end of the test: frees hanging handlers

	mu      sync.Mutex
	reqs    []hookRequest
	answers map[string]answer
	open    map[string]int // path → requests whose handler has not returned
}

func newReceiver(t *testing.T) *receiver {
	r := &receiver{release: make(chan struct{}), answers: map[string]answer{}, open: map[string]int{}}
	r.srv = httptest.NewServer(apitest.WebhookReceiver(t, http.HandlerFunc(r.serve))) // checked against the OpenAPI document
	t.Cleanup(func() {
		close(r.release)
		r.srv.Close()
	})
	return r
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	at := time.Now()
	body, _ := io.ReadAll(req.Body)
	h := hookRequest{Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body, At: at}
	r.mu.Lock()
	h.Open = maps.Clone(r.open)
	r.reqs = append(r.reqs, h)
	a := r.answers[h.Path]
	r.open[h.Path]++
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		r.open[h.Path]--
		r.mu.Unlock()
	}()
	if a.hang && (a.hangOn == "" || h.event().Type == a.hangOn) {
		select {
		case <-req.Context().Done():
		case <-r.release:
		}
		return
	}
	if a.delay > 0 {
		select {
		case <-time.After(a.delay):
		case <-req.Context().Done():
			return
		case <-r.release:
		}
	}
	status := a.status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	io.WriteString(w, "received")
}

func (r *receiver) url(path string) string { return r.srv.URL + path }

// inFlight returns how many requests to path are still unanswered.
func (r *receiver) inFlight(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.open[path]
}

func (r *receiver) set(path string, a answer) {
	r.mu.Lock()
	r.answers[path] = a
	r.mu.Unlock()
}

// requests returns every request to path, in order of arrival.
func (r *receiver) requests(path string) []hookRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []hookRequest
	for _, h := range r.reqs {
		if h.Path == path {
			out = append(out, h)
		}
	}
	return out
}

// events returns the event deliveries to path (everything but URL
// validation), in order of arrival.
func (r *receiver) events(path string) []hookRequest {
	var out []hookRequest
	for _, h := range r.requests(path) {
		if !h.validation() {
			out = append(out, h)
		}
	}
	return out
}

// eventsFor returns the deliveries to path about one invoice.
func (r *receiver) eventsFor(path, invoiceID string) []hookRequest {
	var out []hookRequest
	for _, h := range r.events(path) {
		if h.event().InvoiceID == invoiceID {
			out = append(out, h)
		}
	}
	return out
}

// summary lists the deliveries to path about an invoice as
// "Type:AdditionalStatus".
func (r *receiver) summary(path, invoiceID string) string {
	var out []string
	for _, h := range r.eventsFor(path, invoiceID) {
		e := h.event()
		out = append(out, e.Type+":"+e.AdditionalStatus)
	}
	return fmt.Sprint(out)
}

// wait waits until path has received n deliveries of type typ about the
// invoice and returns the nth.
func (r *receiver) wait(t *testing.T, path, invoiceID, typ string, n int) hookRequest {
	t.Helper()
	var found hookRequest
	waitFor(t, 20*time.Second, fmt.Sprintf("delivery %d of %s for %s at %s", n, typ, invoiceID, path), func() bool {
		seen := 0
		for _, h := range r.eventsFor(path, invoiceID) {
			if h.event().Type == typ {
				if seen++; seen == n {
					found = h
					return true
				}
			}
		}
		return false
	})
	return found
}

// verify checks one delivery as a merchant would: POST, JSON, both
// signature headers valid for the raw body with secret, X-Service-Signature
// within the 300 s tolerance. It returns the event.
func verify(t *testing.T, h hookRequest, secret string) webhook.Event {
	t.Helper()
	if h.Method != http.MethodPost || !strings.HasPrefix(h.Header.Get("Content-Type"), "application/json") {
		t.Errorf("delivery to %s: %s with Content-Type %q", h.Path, h.Method, h.Header.Get("Content-Type"))
	}
	if err := webhook.Verify(secret, h.Body, h.Header.Get(webhook.SignatureHeader), time.Now(), 300*time.Second); err != nil {
		t.Errorf("delivery to %s: X-Service-Signature: %v\n%s", h.Path, err, h.Body)
	}
	if err := webhook.VerifySig(secret, h.Body, h.Header.Get(webhook.SigHeader)); err != nil {
		t.Errorf("delivery to %s: X-Service-Sig: %v\n%s", h.Path, err, h.Body)
	}
	if err := webhook.Verify(secret+"x", h.Body, h.Header.Get(webhook.SignatureHeader), time.Now(), 300*time.Second); err == nil {
		t.Errorf("delivery to %s verifies with a wrong secret", h.Path)
	}
	var e webhook.Event
	if err := json.Unmarshal(h.Body, &e); err != nil {
		t.Fatalf("delivery to %s is not an event: %v: %s", h.Path, err, h.Body)
	}
	return e
}

// signedAt returns the t of a delivery's X-Service-Signature.
func signedAt(t *testing.T, h hookRequest) int64 {
	t.Helper()
	sig, err := webhook.ParseSignature(h.Header.Get(webhook.SignatureHeader))
	if err != nil {
		t.Fatalf("delivery to %s: %v", h.Path, err)
	}
	return sig.Timestamp
}

// apiCall sends an API request for t, which may be a parallel subtest
// (the harness's helpers fail the test that started the server).
func apiCall(t *testing.T, s *server, method, path, key string, body any) (int, []byte) {
	t.Helper()
	var r io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("x-api-key", key)
	res, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode, data
}

// addWebhook registers a webhook, which must succeed, and returns the
// create response.
func addWebhook(t *testing.T, s *server, c storeCreds, body map[string]any) map[string]any {
	t.Helper()
	status, data := apiCall(t, s, "POST", "/api/v1/stores/"+c.StoreID+"/webhooks", c.APIKey, body)
	if status != 200 {
		t.Fatalf("create webhook %v = %d: %s", body, status, data)
	}
	var wh map[string]any
	if err := json.Unmarshal(data, &wh); err != nil {
		t.Fatal(err)
	}
	requireFields(t, "webhook", wh, "id", "secret", "url", "events")
	if wh["url"] != body["url"] || wh["id"] == "" || wh["secret"] == "" {
		t.Fatalf("create webhook %v answered %v", body, wh)
	}
	return wh
}

// deliveryLog lists a webhook's delivery attempts.
func deliveryLog(t *testing.T, s *server, c storeCreds, webhookID string) []map[string]any {
	t.Helper()
	path := "/api/v1/stores/" + c.StoreID + "/webhooks/" + webhookID + "/deliveries"
	status, data := apiCall(t, s, "GET", path, c.APIKey, nil)
	if status != 200 {
		t.Fatalf("GET %s = %d: %s", path, status, data)
	}
	var out []map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("GET %s: %v: %s", path, err, data)
	}
	return out
}

// logEntries returns the delivery log entries of an invoice's event type.
func logEntries(log []map[string]any, invoiceID, typ string) []map[string]any {
	var out []map[string]any
	for _, d := range log {
		if d["invoiceId"] == invoiceID && d["type"] == typ {
			out = append(out, d)
		}
	}
	return out
}

func createInvoice(t *testing.T, s *server, c storeCreds, body map[string]any) string {
	t.Helper()
	status, data := apiCall(t, s, "POST", "/api/v1/stores/"+c.StoreID+"/invoices", c.APIKey, body)
	if status != 200 {
		t.Fatalf("create invoice = %d: %s", status, data)
	}
	var inv struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(data, &inv); err != nil || inv.ID == "" {
		t.Fatalf("create invoice: %v: %s", err, data)
	}
	return inv.ID
}

// TestWebhookRegistration checks the URL check of a registration: one unsigned
// POST before saving; 2xx, 401 and 403 pass; 404, 500, a timeout and a
// DNS failure refuse the registration with a 400 that says why, and save
// nothing.
func TestWebhookRegistration(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "--dev")
	c := s.createStore("--name", "Hooks")
	rcv := newReceiver(t)
	rcv.set("/unauthorized", answer{status: 401})
	rcv.set("/forbidden", answer{status: 403})
	rcv.set("/missing", answer{status: 404})
	rcv.set("/broken", answer{status: 500})
	rcv.set("/slow", answer{delay: 6 * time.Second})

	cases := []struct {
		name, url string
		accept    bool
		says      string // the refusal message must contain this
	}{
		{"200", rcv.url("/ok"), true, ""},
		{"401", rcv.url("/unauthorized"), true, ""},
		{"403", rcv.url("/forbidden"), true, ""},
		{"404", rcv.url("/missing"), false, "404"},
		{"500", rcv.url("/broken"), false, "500"},
		{"timeout", rcv.url("/slow"), false, "5s"},
		{"dns failure", "http://does-not-exist.invalid/hook", false, ""},
	}
	t.Run("validate", func(t *testing.T) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				t.Parallel()
				body := map[string]any{"url": tc.url, "events": []string{"Settled"}}
				start := time.Now()
				status, data := apiCall(t, s, "POST", "/api/v1/stores/"+c.StoreID+"/webhooks", c.APIKey, body)
				took := time.Since(start)
				t.Logf("%s: %d in %v: %s", tc.name, status, took.Round(time.Millisecond), data)
				if tc.accept {
					if status != 200 {
						t.Fatalf("registration of a URL answering %s = %d: %s", tc.name, status, data)
					}
					var wh map[string]any
					json.Unmarshal(data, &wh)
					requireFields(t, "webhook", wh, "id", "secret", "url", "events")
					if wh["url"] != tc.url || wh["secret"] == "" || fmt.Sprint(wh["events"]) != "[Settled]" {
						t.Fatalf("created = %v", wh)
					}
					return
				}
				var e struct {
					Message string `json:"message"`
				}
				json.Unmarshal(data, &e)
				if status != 400 || e.Message == "" || !strings.Contains(e.Message, tc.says) {
					t.Fatalf("registration of a URL that %s = %d %s, want 400 with a message that says %q", tc.name, status, data, tc.says)
				}
				if tc.name == "timeout" && took < 5*time.Second {
					t.Fatalf("refused after %v, before the 5 s timeout", took)
				}
			})
		}
	})

	// Exactly one unsigned validation POST reached each receiving path.
	for _, path := range []string{"/ok", "/unauthorized", "/forbidden", "/missing", "/broken", "/slow"} {
		reqs := rcv.requests(path)
		if len(reqs) != 1 {
			t.Fatalf("%s got %d requests, want one validation POST", path, len(reqs))
		}
		h := reqs[0]
		if h.Method != "POST" || !strings.HasPrefix(h.Header.Get("Content-Type"), "application/json") {
			t.Errorf("%s: %s with Content-Type %q", path, h.Method, h.Header.Get("Content-Type"))
		}
		for _, name := range []string{webhook.SignatureHeader, webhook.SigHeader} {
			if v := h.Header.Values(name); len(v) != 0 {
				t.Errorf("%s: validation request is signed: %s: %v", path, name, v)
			}
		}
		var v map[string]any
		if err := json.Unmarshal(h.Body, &v); err != nil {
			t.Fatalf("%s: validation body is not JSON: %v: %s", path, err, h.Body)
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if fmt.Sprint(keys) != "[app message purpose timestamp]" {
			t.Errorf("%s: validation body has fields %v, want app, message, purpose, timestamp: %s", path, keys, h.Body)
		}
		app, _ := v["app"].(string)
		msg, _ := v["message"].(string)
		ts, _ := v["timestamp"].(string)
		when, err := time.Parse(time.RFC3339, ts)
		if app == "" || msg == "" || v["purpose"] != "webhook_url_validation" || err != nil || when.Sub(h.At).Abs() > time.Minute {
			t.Errorf("%s: validation body %s (timestamp: %v)", path, h.Body, err)
		}
	}

	// Only the accepted ones were saved.
	var urls []string
	for _, wh := range s.list("/api/v1/stores/"+c.StoreID+"/webhooks", c.APIKey) {
		requireFields(t, "listed webhook", wh, "id", "enabled", "secret", "events")
		urls = append(urls, wh["url"].(string))
	}
	sort.Strings(urls)
	want := []string{rcv.url("/forbidden"), rcv.url("/ok"), rcv.url("/unauthorized")}
	sort.Strings(want)
	if !slices.Equal(urls, want) {
		t.Fatalf("saved webhooks %v, want %v", urls, want)
	}
}

// TestWebhookEvents drives every event kind through the sim CLI and checks
// what three webhooks receive: one registered without events (all four),
// one with only Processing, one with an empty list (nothing). The
// invoices: three meant to expire (nothing paid, underpaid, paid after
// expiry), Lightning, on-chain and overpaid. Every delivery verifies
// with both signatures.
func TestWebhookEvents(t *testing.T) {
	t.Parallel()
	// Every invoice must be paid within the expiry of its creation but
	// those meant to expire: 10 s leaves a loaded machine room for the
	// CLI calls, and the three meant to expire are created first, so
	// that their expiry runs out while the others are paid.
	s := startServer(t, t.TempDir(), "--dev", "--invoice-expiry", "10s")
	w := &webhookEvents{t: t, s: s, c: s.createStore("--name", "Events"), rcv: newReceiver(t), orders: map[string]string{}}

	step(t, "three webhooks: all events, only Processing, none", w.register)
	step(t, "three invoices meant to expire, one underpaid at once", w.createExpiring)
	step(t, "Lightning: Processing and Settled back to back", w.lightning)
	step(t, "on-chain and overpaid: Processing in the mempool, Settled after a block", w.onchain)
	step(t, "the three expire; one is paid after expiry", w.expiry)
	step(t, "the webhook with all events: each invoice's events in order, signed, with its order", w.checkAllEvents)
	step(t, "the webhook with only Processing gets only those; the empty selection nothing", w.checkFiltered)
}

// webhookEvents is TestWebhookEvents' server, store, receiver and
// webhooks, and the invoices its steps create.
type webhookEvents struct {
	t   *testing.T
	s   *server
	c   storeCreds
	rcv *receiver

	proc, none map[string]any    // the webhooks with only Processing and with no event
	secrets    map[string]string // each receiver path's signing secret
	orders     map[string]string // each invoice's orderId

	under, empty, late string // meant to expire: underpaid, nothing paid, paid after expiry
	ln, oc, over       string // Lightning, on-chain, overpaid on-chain
}

// create creates an invoice with orderId order-name and waits for its
// New event.
func (w *webhookEvents) create(name string, body map[string]any) string {
	w.t.Helper()
	body["orderId"] = "order-" + name
	id := createInvoice(w.t, w.s, w.c, body)
	w.orders[id] = "order-" + name
	w.rcv.wait(w.t, "/all", id, "New", 1)
	return id
}

// register adds the three webhooks and checks the events each was
// created with.
func (w *webhookEvents) register() {
	t, s, c, rcv := w.t, w.s, w.c, w.rcv
	all := addWebhook(t, s, c, map[string]any{"url": rcv.url("/all")})
	if fmt.Sprint(all["events"]) != "[New Processing Settled Expired]" {
		t.Fatalf("events left out must mean all four: %v", all["events"])
	}
	w.proc = addWebhook(t, s, c, map[string]any{"url": rcv.url("/processing"), "events": []string{"Processing"}, "secret": "processing-secret"})
	if w.proc["secret"] != "processing-secret" || fmt.Sprint(w.proc["events"]) != "[Processing]" {
		t.Fatalf("created = %v", w.proc)
	}
	w.none = addWebhook(t, s, c, map[string]any{"url": rcv.url("/none"), "events": []string{}})
	if fmt.Sprint(w.none["events"]) != "[]" {
		t.Fatalf("an empty list must select nothing: %v", w.none["events"])
	}
	w.secrets = map[string]string{"/all": all["secret"].(string), "/processing": "processing-secret", "/none": w.none["secret"].(string)}
}

// createExpiring creates the invoices meant to expire: with nothing,
// with a partial payment (made at once), and one to be paid after
// expiry.
func (w *webhookEvents) createExpiring() {
	w.under = w.create("under", map[string]any{"amount": 10000, "currency": "SATS"})
	w.s.mustCLI("sim", "pay", w.under, "--method", "onchain", "--amount", "5000")
	w.s.mustCLI("sim", "mine")
	w.empty = w.create("empty", map[string]any{"amount": 1000, "currency": "SATS"})
	w.late = w.create("late", map[string]any{"amount": 5000, "currency": "SATS"})
}

func (w *webhookEvents) lightning() {
	w.ln = w.create("ln", map[string]any{"amount": 5000, "currency": "SATS", "metadata": map[string]any{"sku": "A1"}})
	w.s.mustCLI("sim", "pay", w.ln, "--method", "lightning")
	w.rcv.wait(w.t, "/all", w.ln, "Settled", 1)
}

// onchain pays an invoice and overpays another on-chain: Processing in
// the mempool, Settled only after a block.
func (w *webhookEvents) onchain() {
	t, s, rcv := w.t, w.s, w.rcv
	w.oc = w.create("oc", map[string]any{"amount": 20000, "currency": "SATS"})
	s.mustCLI("sim", "pay", w.oc, "--method", "onchain")
	rcv.wait(t, "/all", w.oc, "Processing", 1)
	w.over = w.create("over", map[string]any{"amount": 10000, "currency": "SATS"})
	s.mustCLI("sim", "pay", w.over, "--method", "onchain", "--amount", "12000")
	rcv.wait(t, "/all", w.over, "Processing", 1)
	if got := rcv.summary("/all", w.oc); got != "[New:None Processing:None]" {
		t.Fatalf("on-chain before a block: %s", got)
	}
	s.mustCLI("sim", "mine", "1")
	rcv.wait(t, "/all", w.oc, "Settled", 1)
	rcv.wait(t, "/all", w.over, "Settled", 1)
}

// expiry waits for the three Expired events, pays the late invoice, and
// waits for its Settled and for the Processing webhook's three
// deliveries.
func (w *webhookEvents) expiry() {
	t, s, rcv := w.t, w.s, w.rcv
	for _, id := range []string{w.empty, w.under, w.late} {
		rcv.wait(t, "/all", id, "Expired", 1)
	}
	s.mustCLI("sim", "pay", w.late, "--method", "onchain")
	s.mustCLI("sim", "mine")
	rcv.wait(t, "/all", w.late, "Settled", 1)
	waitFor(t, 20*time.Second, "the Processing webhook's three deliveries", func() bool {
		return len(rcv.events("/processing")) >= 3
	})
}

// checkAllEvents checks what the webhook with all events saw, per
// invoice, in order; that the Lightning pair arrived back to back; and
// that every delivery verifies, carries its invoice's orderId and
// metadata, and has isUnderpaid exactly on Expired.
func (w *webhookEvents) checkAllEvents() {
	t, rcv, ln, orders := w.t, w.rcv, w.ln, w.orders
	want := map[string]string{
		ln:      "[New:None Processing:None Settled:None]",
		w.oc:    "[New:None Processing:None Settled:None]",
		w.over:  "[New:None Processing:None Settled:Overpaid]",
		w.empty: "[New:None Expired:None]",
		w.under: "[New:None Expired:Underpaid]",
		w.late:  "[New:None Expired:None Settled:PaidAfterExpiration]",
	}
	for id, wt := range want {
		if got := rcv.summary("/all", id); got != wt {
			t.Errorf("%s (%s): webhook with all events got %s, want %s", orders[id], id, got, wt)
		}
	}
	// The Lightning pair arrived back to back: nothing between them.
	allEvents := rcv.events("/all")
	for i, h := range allEvents {
		if e := h.event(); e.InvoiceID == ln && e.Type == "Processing" {
			if i+1 >= len(allEvents) || allEvents[i+1].event().InvoiceID != ln || allEvents[i+1].event().Type != "Settled" {
				t.Errorf("the Lightning Processing is not followed at once by its Settled")
			}
		}
	}
	kinds := map[string]bool{}
	for _, h := range allEvents {
		e := verify(t, h, w.secrets["/all"])
		kinds[e.Type] = true
		if got := e.OrderID(); got != orders[e.InvoiceID] {
			t.Errorf("%s %s: metadata.orderId = %q, want %q: %s", e.Type, e.InvoiceID, got, orders[e.InvoiceID], h.Body)
		}
		if e.InvoiceID == ln && !bytes.Contains(e.Metadata, []byte(`"sku":"A1"`)) {
			t.Errorf("metadata not echoed: %s", h.Body)
		}
		switch {
		case e.Type == "Expired" && e.IsUnderpaid == nil:
			t.Errorf("Expired without isUnderpaid: %s", h.Body)
		case e.Type == "Expired" && *e.IsUnderpaid != (e.InvoiceID == w.under):
			t.Errorf("Expired of %s with isUnderpaid %v: %s", orders[e.InvoiceID], *e.IsUnderpaid, h.Body)
		case e.Type != "Expired" && e.IsUnderpaid != nil:
			t.Errorf("%s with isUnderpaid: %s", e.Type, h.Body)
		}
	}
	if len(kinds) != 4 {
		t.Errorf("webhook without events got kinds %v, want all four", kinds)
	}
}

// checkFiltered checks the filtering: only Processing, so only the
// first of the Lightning pair; the empty selection gets nothing. The
// outbox is written with the event, so the delivery logs are complete.
func (w *webhookEvents) checkFiltered() {
	t, s, c, rcv := w.t, w.s, w.c, w.rcv
	for _, h := range rcv.events("/processing") {
		verify(t, h, w.secrets["/processing"])
	}
	for id, wt := range map[string]string{w.ln: "[Processing:None]", w.oc: "[Processing:None]", w.over: "[Processing:None]",
		w.empty: "[]", w.under: "[]", w.late: "[]"} {
		if got := rcv.summary("/processing", id); got != wt {
			t.Errorf("%s: webhook with only Processing got %s, want %s", w.orders[id], got, wt)
		}
	}
	for _, d := range deliveryLog(t, s, c, w.proc["id"].(string)) {
		if d["type"] != "Processing" {
			t.Errorf("webhook with only Processing has a %v delivery: %v", d["type"], d)
		}
	}
	if got := rcv.events("/none"); len(got) != 0 {
		t.Errorf("webhook with no event selected got %d deliveries, first %s", len(got), got[0].Body)
	}
	if got := deliveryLog(t, s, c, w.none["id"].(string)); len(got) != 0 {
		t.Errorf("webhook with no event selected has %d deliveries: %v", len(got), got)
	}
}

// TestWebhookDeliveryLogRedeliver checks the delivery log of a working
// and a failing endpoint, and a redelivery of a failed delivery: reduced
// payload, fresh signature, linked to the original.
func TestWebhookDeliveryLogRedeliver(t *testing.T) {
	t.Parallel()
	s := startServer(t, t.TempDir(), "--dev")
	r := &redeliverScenario{t: t, s: s, c: s.createStore("--name", "Log"), rcv: newReceiver(t)}

	step(t, "a working and a failing webhook", r.register)
	step(t, "a Lightning payment: three deliveries to each, all finished", r.pay)
	step(t, "each attempt is logged with what was sent and what came back", r.checkLogs)
	step(t, "redeliver the failed Settled once the endpoint works: reduced payload, fresh signature", r.redeliver)
	step(t, "the redelivery is logged, linked to the original, which is unchanged", r.redeliveryLogged)
}

// redeliverScenario is TestWebhookDeliveryLogRedeliver's server, store,
// receiver and webhooks, and what a step leaves for the next.
type redeliverScenario struct {
	t   *testing.T
	s   *server
	c   storeCreds
	rcv *receiver

	okID, badID         string // the working and the failing webhook
	okSecret, badSecret string
	id                  string                    // the invoice paid
	failed              map[string]map[string]any // the failing webhook's log, by event type
	origID              string                    // the failed Settled delivery
	res                 map[string]any            // the redeliver answer
	h                   hookRequest               // the redelivery as received
}

// register adds a webhook that answers 200 and one that answers 500.
func (r *redeliverScenario) register() {
	t, s, c, rcv := r.t, r.s, r.c, r.rcv
	ok := addWebhook(t, s, c, map[string]any{"url": rcv.url("/ok")})
	bad := addWebhook(t, s, c, map[string]any{"url": rcv.url("/fail")})
	rcv.set("/fail", answer{status: 500})
	r.okID, r.badID = ok["id"].(string), bad["id"].(string)
	r.okSecret, r.badSecret = ok["secret"].(string), bad["secret"].(string)
}

// pay pays an invoice over Lightning and waits until both endpoints
// got its Settled and both logs hold at least three finished deliveries.
func (r *redeliverScenario) pay() {
	t, s, c, rcv := r.t, r.s, r.c, r.rcv
	r.id = createInvoice(t, s, c, map[string]any{"amount": 3000, "currency": "SATS", "orderId": "log-1"})
	s.mustCLI("sim", "pay", r.id, "--method", "lightning")
	rcv.wait(t, "/ok", r.id, "Settled", 1)
	rcv.wait(t, "/fail", r.id, "Settled", 1)
	finished := func(wid string) func() bool {
		return func() bool {
			log := deliveryLog(t, s, c, wid)
			for _, d := range log {
				if d["status"] == "Pending" {
					return false
				}
			}
			return len(log) >= 3
		}
	}
	waitFor(t, 20*time.Second, "the working endpoint's log", finished(r.okID))
	waitFor(t, 20*time.Second, "the failing endpoint's log", finished(r.badID))
}

// checkLogs checks both logs, and that the failing endpoint got three
// deliveries and no automatic retry.
func (r *redeliverScenario) checkLogs() {
	r.checkLog(r.okID, "/ok", r.okSecret, "Delivered", 200)
	r.failed = r.checkLog(r.badID, "/fail", r.badSecret, "Failed", 500)
	if n := len(r.rcv.eventsFor("/fail", r.id)); n != 3 {
		r.t.Fatalf("the failing endpoint got %d deliveries, want 3", n)
	}
}

// checkLog checks that webhook wid's log lists each attempt, New,
// Processing and Settled, with what was sent to path (payload and both
// signature headers, which verify with secret) and what came back
// (status and code); it returns the entries by event type.
func (r *redeliverScenario) checkLog(wid, path, secret, status string, code int) map[string]map[string]any {
	t, id := r.t, r.id
	t.Helper()
	log := deliveryLog(t, r.s, r.c, wid)
	if len(log) != 3 {
		t.Fatalf("%s: %d deliveries, want 3 (New, Processing, Settled; no automatic retry): %v", path, len(log), log)
	}
	byType := map[string]map[string]any{}
	for _, d := range log {
		requireFields(t, "delivery", d, "id", "status", "statusCode", "payload", "headers", "durationMs", "redeliveryOf")
		typ, _ := d["type"].(string)
		byType[typ] = d
		sent := r.rcv.eventsFor(path, id)
		var h *hookRequest
		for i := range sent {
			if sent[i].event().Type == typ {
				h = &sent[i]
			}
		}
		if h == nil {
			t.Fatalf("%s: log lists %s that the receiver did not get", path, typ)
		}
		verify(t, *h, secret)
		var body any
		json.Unmarshal(h.Body, &body)
		headers, _ := d["headers"].(map[string]any)
		if d["status"] != status || num(d, "statusCode") != float64(code) || d["invoiceId"] != id ||
			!reflect.DeepEqual(d["payload"], body) || d["redeliveryOf"] != "" ||
			headers[webhook.SignatureHeader] != h.Header.Get(webhook.SignatureHeader) ||
			headers[webhook.SigHeader] != h.Header.Get(webhook.SigHeader) {
			t.Errorf("%s: log entry %v\ndoes not match the request %v %s", path, d, h.Header, h.Body)
		}
		if ms, isNum := d["durationMs"].(float64); !isNum || ms < 0 || ms > 5000 {
			t.Errorf("%s: durationMs %v", path, d["durationMs"])
		}
		if status == "Failed" && d["error"] == "" {
			t.Errorf("%s: failed delivery without an error: %v", path, d)
		}
	}
	if len(byType) != 3 || byType["New"] == nil || byType["Processing"] == nil || byType["Settled"] == nil {
		t.Fatalf("%s: log types %v", path, log)
	}
	return byType
}

// redeliver makes the failing endpoint work again and redelivers the
// failed Settled: the answer says it was resent; the body is exactly
// {type, invoiceId}, signed when it was asked for, not before.
func (r *redeliverScenario) redeliver() {
	t, s, c, rcv, id := r.t, r.s, r.c, r.rcv, r.id
	rcv.set("/fail", answer{})
	r.origID = r.failed["Settled"]["id"].(string)
	asked := time.Now()
	r.res = s.json("POST", "/api/v1/stores/"+c.StoreID+"/webhooks/"+r.badID+"/paylods/"+r.origID+"/redeliver", c.APIKey, nil, 200)
	if msg, _ := r.res["message"].(string); !strings.Contains(strings.ToLower(msg), "resent") {
		t.Errorf("redeliver answered %v, want a message that it was resent", r.res)
	}
	r.h = rcv.wait(t, "/fail", id, "Settled", 2)
	e := verify(t, r.h, r.badSecret)
	var fields map[string]any
	json.Unmarshal(r.h.Body, &fields)
	if len(fields) != 2 || fields["type"] != "Settled" || fields["invoiceId"] != id || e.Metadata != nil || e.AdditionalStatus != "" {
		t.Errorf("redelivered body %s, want exactly {type, invoiceId}", r.h.Body)
	}
	if ts := signedAt(t, r.h); ts < asked.Unix() {
		t.Errorf("redelivery signed at %d, before it was asked at %d", ts, asked.Unix())
	}
}

// redeliveryLogged waits for the redelivery's log entry, linked to the
// original: Delivered with 200, its own id, the reduced payload, and the
// id the redeliver answer gave, if any; the original stays Failed.
func (r *redeliverScenario) redeliveryLogged() {
	t, s, c, badID, origID := r.t, r.s, r.c, r.badID, r.origID
	var again map[string]any
	waitFor(t, 10*time.Second, "the redelivery in the log", func() bool {
		for _, d := range deliveryLog(t, s, c, badID) {
			if d["redeliveryOf"] == origID {
				again = d
				return d["status"] != "Pending"
			}
		}
		return false
	})
	var slim any
	json.Unmarshal(r.h.Body, &slim)
	if again["status"] != "Delivered" || num(again, "statusCode") != 200 || again["id"] == origID ||
		again["type"] != "Settled" || !reflect.DeepEqual(again["payload"], slim) {
		t.Errorf("redelivery log entry %v", again)
	}
	if r.res["deliveryId"] != nil && r.res["deliveryId"] != again["id"] {
		t.Errorf("redeliver answered deliveryId %v, log has %v", r.res["deliveryId"], again["id"])
	}
	for _, d := range deliveryLog(t, s, c, badID) {
		if d["id"] == origID && d["status"] != "Failed" {
			t.Errorf("the original delivery changed: %v", d)
		}
	}
}

// TestWebhookSlowEndpoint checks that an endpoint that never answers
// delays no other endpoint: while the slow endpoint's first delivery still
// hangs, the working endpoint gets New, Processing and Settled, in order.
// Nothing is timed: the slow endpoint's open request is the proof that the
// fast one did not wait for it. It runs alone (not parallel), so that the
// steps fit well inside the 5 s the egress client gives the slow request.
func TestWebhookSlowEndpoint(t *testing.T) {
	s := startServer(t, t.TempDir(), "--dev")
	c := s.createStore("--name", "Slow")
	rcv := newReceiver(t)
	slow := addWebhook(t, s, c, map[string]any{"url": rcv.url("/slow")})
	addWebhook(t, s, c, map[string]any{"url": rcv.url("/fast")})
	rcv.set("/slow", answer{hang: true})

	id := createInvoice(t, s, c, map[string]any{"amount": 2001, "currency": "SATS"})
	rcv.wait(t, "/slow", id, "New", 1) // the slow endpoint now hangs
	rcv.wait(t, "/fast", id, "New", 1)
	s.mustCLI("sim", "pay", id, "--method", "lightning")
	rcv.wait(t, "/fast", id, "Settled", 1)
	if got := rcv.summary("/fast", id); got != "[New:None Processing:None Settled:None]" {
		t.Errorf("fast endpoint got %s", got)
	}
	// The fast endpoint's Processing and Settled (the payment came after
	// the slow endpoint's New was seen hanging) arrived while the slow
	// one held a request open: neither waited for the slow endpoint's
	// request to end. (Every request to the slow endpoint hangs until the
	// 5 s egress timeout cuts it, and its next delivery follows at once,
	// so this holds on a machine too loaded to run the steps above in
	// 5 s too.)
	for _, h := range rcv.eventsFor("/fast", id)[1:] {
		if h.Open["/slow"] == 0 {
			t.Errorf("the fast endpoint's %s arrived when the slow endpoint had no request open (it got %d)", h.event().Type, len(rcv.events("/slow")))
		}
	}

	// The slow endpoint's first delivery is cut by the 5 s egress timeout.
	var d map[string]any
	waitFor(t, 15*time.Second, "the slow endpoint's New to fail", func() bool {
		for _, e := range logEntries(deliveryLog(t, s, c, slow["id"].(string)), id, "New") {
			d = e
			return e["status"] == "Failed"
		}
		return false
	})
	if ms := num(d, "durationMs"); ms < 5000 || !strings.Contains(fmt.Sprint(d["error"]), "5s") {
		t.Errorf("slow delivery %v: want at least 5000 ms and an error naming the 5s timeout", d)
	}
	t.Logf("slow endpoint: %v after %v ms", d["error"], d["durationMs"])
}

// TestWebhookKillInFlight kills the server while the Settled delivery is
// in flight and checks that it is sent again after the restart and logged
// Delivered.
func TestWebhookKillInFlight(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir, "--dev")
	c := s.createStore("--name", "Crash")
	rcv := newReceiver(t)
	wh := addWebhook(t, s, c, map[string]any{"url": rcv.url("/hook")})
	secret, wid := wh["secret"].(string), wh["id"].(string)
	rcv.set("/hook", answer{hang: true, hangOn: "Settled"})

	id := createInvoice(t, s, c, map[string]any{"amount": 4000, "currency": "SATS", "orderId": "crash-1"})
	s.mustCLI("sim", "pay", id, "--method", "lightning")
	first := rcv.wait(t, "/hook", id, "Settled", 1)
	s.Kill()
	killed := time.Now()
	if killed.Sub(first.At) >= 5*time.Second {
		t.Fatalf("killed %v after the Settled delivery arrived: the 5 s egress timeout may have ended it first", killed.Sub(first.At))
	}
	t.Logf("killed with the Settled delivery in flight (it arrived %v before)", killed.Sub(first.At).Round(time.Millisecond))
	rcv.set("/hook", answer{})

	s2 := startServer(t, dir, "--dev")
	again := rcv.wait(t, "/hook", id, "Settled", 2)
	if e := verify(t, again, secret); e.OrderID() != "crash-1" || e.AdditionalStatus != "None" {
		t.Errorf("Settled after the restart: %s", again.Body)
	}
	if !bytes.Equal(again.Body, first.Body) {
		t.Errorf("Settled after the restart %s differs from the one in flight %s", again.Body, first.Body)
	}
	if signedAt(t, again) < killed.Unix() {
		t.Errorf("the resent Settled is not signed anew")
	}
	var log []map[string]any
	waitFor(t, 10*time.Second, "the Settled delivery to be logged Delivered", func() bool {
		log = logEntries(deliveryLog(t, s2, c, wid), id, "Settled")
		return len(log) > 0 && log[0]["status"] == "Delivered"
	})
	if len(log) != 1 || num(log[0], "statusCode") != 200 {
		t.Errorf("Settled log entries %v, want one Delivered with 200", log)
	}
	t.Logf("receiver got %s", rcv.summary("/hook", id))
}

// TestWebhookOrderAfterKill kills the server with the New, Processing and
// Settled deliveries of several invoices still pending behind an endpoint
// that hangs, and checks that after the restart each invoice's events
// reach the endpoint in the order they happened. Repeats of one event
// are recognised by X-Service-Event-Id, as a receiver would.
func TestWebhookOrderAfterKill(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := startServer(t, dir, "--dev")
	c := s.createStore("--name", "Order")
	rcv := newReceiver(t)
	addWebhook(t, s, c, map[string]any{"url": rcv.url("/hook")})
	rcv.set("/hook", answer{hang: true})

	var ids []string
	for i := range 3 {
		id := createInvoice(t, s, c, map[string]any{"amount": 3000 + i, "currency": "SATS"})
		s.mustCLI("sim", "pay", id, "--method", "lightning")
		ids = append(ids, id)
	}
	waitFor(t, 20*time.Second, "the first delivery to hang", func() bool { return rcv.inFlight("/hook") == 1 })
	s.Kill()
	before := len(rcv.events("/hook"))
	rcv.set("/hook", answer{})

	startServer(t, dir, "--dev")
	for _, id := range ids {
		rcv.wait(t, "/hook", id, "Settled", 1)
	}
	after := rcv.events("/hook")[before:]
	seen := map[string]bool{}
	order := map[string][]string{}
	for _, h := range after {
		eventID := h.Header.Get(webhook.EventIDHeader)
		if eventID == "" {
			t.Fatalf("delivery without %s: %s", webhook.EventIDHeader, h.Body)
		}
		if seen[eventID] {
			continue
		}
		seen[eventID] = true
		e := h.event()
		order[e.InvoiceID] = append(order[e.InvoiceID], e.Type)
	}
	for _, id := range ids {
		// Whatever the endpoint got before the kill, what follows keeps
		// the order of New, Processing, Settled.
		got := fmt.Sprint(order[id])
		if got != "[New Processing Settled]" && got != "[Processing Settled]" && got != "[Settled]" {
			t.Errorf("invoice %s: after the restart the endpoint got %s", id, got)
		}
	}
	t.Logf("%d requests before the kill, %d after", before, len(after))
}
