package actors

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/protos"
	"github.com/kassapay/kassa/webhook"
)

// sent is one request the fake webhook client made.
type sent struct {
	url     string
	headers http.Header
	body    []byte
	at      time.Time
}

// fakeWebhookClient records deliveries and answers with the status set
// per URL (200 by default).
type fakeWebhookClient struct {
	mu     sync.Mutex
	sent   []sent
	status map[string][]int // URL → statuses to answer in turn; the last repeats
	// hold, when set, makes every delivery hang until it is closed, as
	// an endpoint that never answers before a crash; hang does the same
	// for the deliveries to one URL.
	hold chan struct{}
	hang map[string]chan struct{}
}

var _ kassa.WebhookClient = (*fakeWebhookClient)(nil)

func newFakeWebhookClient() *fakeWebhookClient {
	return &fakeWebhookClient{status: map[string][]int{}}
}

func (f *fakeWebhookClient) CheckURL(u string) error {
	if !strings.HasPrefix(u, "https://") {
		return kassa.Errorf(kassa.Invalid, "webhook URL must use https")
	}
	return nil
}

func (f *fakeWebhookClient) Validate(_ context.Context, u string) error {
	if strings.Contains(u, "refuse") {
		return kassa.Errorf(kassa.Invalid, "webhook URL answered 404 Not Found")
	}
	return nil
}

func (f *fakeWebhookClient) Deliver(ctx context.Context, u string, h http.Header, body []byte) kassa.WebhookAttempt {
	f.mu.Lock()
	code := 200
	if codes := f.status[u]; len(codes) > 0 {
		code = codes[0]
		if len(codes) > 1 {
			f.status[u] = codes[1:]
		}
	}
	hold := f.hold
	if h := f.hang[u]; h != nil {
		hold = h
	}
	f.mu.Unlock()
	if hold != nil {
		<-hold
	}
	f.mu.Lock()
	f.sent = append(f.sent, sent{url: u, headers: h.Clone(), body: append([]byte(nil), body...), at: time.Now()})
	f.mu.Unlock()
	a := kassa.WebhookAttempt{StatusCode: code, OK: code/100 == 2}
	if !a.OK {
		a.Err = fmt.Sprintf("webhook URL answered %d", code)
	}
	return a
}

// to returns what was sent to u, in order.
func (f *fakeWebhookClient) to(u string) []sent {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []sent
	for _, s := range f.sent {
		if s.url == u {
			out = append(out, s)
		}
	}
	return out
}

func types(ss []sent) string {
	var out []string
	for _, s := range ss {
		var e webhook.Event
		json.Unmarshal(s.body, &e)
		out = append(out, e.Type+":"+e.AdditionalStatus)
	}
	return strings.Join(out, " ")
}

func (h *harness) webhook(url string, events ...kassa.EventType) *kassa.Webhook {
	h.t.Helper()
	in := &kassa.WebhookInput{URL: url}
	if events != nil {
		in.Events, in.EventsGiven = events, true
	}
	w, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, in)
	if err != nil {
		h.t.Fatal(err)
	}
	return w
}

func TestWebhookEventsFilteredAndSigned(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	all := h.webhook("https://a.example/hook")
	processingOnly := h.webhook("https://b.example/hook", kassa.EventProcessing)
	none := h.webhook("https://c.example/hook", []kassa.EventType{}...)
	if len(none.Events) != 0 || len(all.Events) != 4 {
		t.Fatalf("events: all %v, none %v", all.Events, none.Events)
	}
	inv := h.invoice("1000", kassa.SATS)
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000})
	eventually(t, "deliveries", func() bool { return len(h.hooks.to(all.URL)) == 3 && len(h.hooks.to(processingOnly.URL)) == 1 })
	if got := types(h.hooks.to(all.URL)); got != "New:None Processing:None Settled:None" {
		t.Fatalf("all = %s", got)
	}
	if got := types(h.hooks.to(processingOnly.URL)); got != "Processing:None" {
		t.Fatalf("processing only = %s", got)
	}
	if n := len(h.hooks.to(none.URL)); n != 0 {
		t.Fatalf("a webhook with no event selected got %d", n)
	}
	for _, s := range h.hooks.to(all.URL) {
		if err := webhook.Verify(all.Secret, s.body, s.headers.Get(webhook.SignatureHeader), time.Now(), 0); err != nil {
			t.Fatalf("X-Service-Signature: %v", err)
		}
		if err := webhook.VerifySig(all.Secret, s.body, s.headers.Get(webhook.SigHeader)); err != nil {
			t.Fatalf("X-Service-Sig: %v", err)
		}
		var e webhook.Event
		json.Unmarshal(s.body, &e)
		if e.InvoiceID != inv.ID || e.OrderID() != "42" {
			t.Fatalf("payload = %s", s.body)
		}
	}
	// The delivery log holds every attempt, each recorded Delivered once
	// its answer is read: a moment after the endpoint has the body, so
	// wait for the records (reading at once saw one still Pending).
	var log []*kassa.Delivery
	eventually(t, "three deliveries recorded as sent", func() bool {
		log = log[:0]
		h.db.Deliveries(context.Background(), all.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { log = append(log, d); return nil })
		for _, d := range log {
			if d.Status == kassa.DeliveryPending {
				return false
			}
		}
		return len(log) >= 3
	})
	if len(log) != 3 {
		t.Fatalf("log has %d deliveries", len(log))
	}
	for _, d := range log {
		if d.Status != kassa.DeliveryDelivered || d.StatusCode != 200 || d.SentAt.IsZero() || d.Headers[webhook.SigHeader] == "" {
			t.Fatalf("delivery = %+v", d)
		}
	}
}

func TestWebhookExpiredUnderpaidPayload(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	h.runSweeper()
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook", kassa.EventExpired)
	empty := h.invoice("1000", kassa.SATS)
	partial := h.invoice("1000", kassa.SATS)
	h.pay(partial, 300, 1, "ee")
	clock.Advance(15 * time.Minute)
	eventually(t, "two Expired events", func() bool { return len(h.hooks.to(w.URL)) == 2 })
	got := map[string]string{}
	for _, s := range h.hooks.to(w.URL) {
		var e struct {
			InvoiceID        string `json:"invoiceId"`
			AdditionalStatus string `json:"additionalStatus"`
			IsUnderpaid      *bool  `json:"isUnderpaid"`
			PartiallyPaid    *bool  `json:"partiallyPaid"`
			Underpaid        *bool  `json:"underpaid"`
		}
		json.Unmarshal(s.body, &e)
		if e.IsUnderpaid == nil || e.PartiallyPaid == nil || e.Underpaid == nil ||
			*e.PartiallyPaid != *e.IsUnderpaid || *e.Underpaid != *e.IsUnderpaid {
			t.Fatalf("Expired without the same isUnderpaid, partiallyPaid and underpaid: %s", s.body)
		}
		got[e.InvoiceID] = fmt.Sprint(e.AdditionalStatus, " ", *e.IsUnderpaid)
	}
	if got[empty.ID] != "None false" || got[partial.ID] != "Underpaid true" {
		t.Fatalf("expired payloads = %v", got)
	}
}

func TestWebhookRefusedURLIsNotSaved(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	for _, url := range []string{"https://refuse.example/hook", "http://plain.example/hook"} {
		if _, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: url}); kassa.ErrorCode(err) != kassa.Invalid {
			t.Fatalf("%s: %v", url, err)
		}
	}
	n := 0
	h.db.Webhooks(context.Background(), h.store.ID, func(*kassa.Webhook) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d webhooks saved", n)
	}
}

func TestRedeliverSendsReducedPayloadSignedNow(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook", kassa.EventNew)
	h.hooks.status[w.URL] = []int{500, 200}
	inv := h.invoice("1000", kassa.SATS)
	eventually(t, "first attempt", func() bool { return len(h.hooks.to(w.URL)) == 1 })
	var first *kassa.Delivery
	eventually(t, "failed delivery recorded", func() bool {
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { first = d; return nil })
		return first != nil && first.Status == kassa.DeliveryFailed
	})
	if first.StatusCode != 500 {
		t.Fatalf("first = %+v", first)
	}
	clock.Advance(time.Hour)
	d, err := h.sys.Service.Redeliver(context.Background(), h.store.ID, w.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	if d.Status != kassa.DeliveryDelivered || d.RedeliveryOf != first.ID {
		t.Fatalf("redelivery = %+v", d)
	}
	re := h.hooks.to(w.URL)[1]
	if string(re.body) != fmt.Sprintf(`{"type":"New","invoiceId":%q}`, inv.ID) {
		t.Fatalf("redelivered payload = %s", re.body)
	}
	sig, err := webhook.ParseSignature(re.headers.Get(webhook.SignatureHeader))
	if err != nil || sig.Timestamp != clock.Now().Unix() {
		t.Fatalf("redelivery signed at %d, want %d (%v)", sig.Timestamp, clock.Now().Unix(), err)
	}
	if _, err := h.sys.Service.Redeliver(context.Background(), h.store.ID, "other", first.ID); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("redeliver under another webhook: %v", err)
	}
}

func TestAutomaticRedeliveryRetriesOnlyTransientFailures(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	yes := true
	flaky, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: "https://flaky.example/hook", Events: []kassa.EventType{kassa.EventNew}, EventsGiven: true, AutomaticRedelivery: &yes})
	if err != nil {
		t.Fatal(err)
	}
	gone, _ := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: "https://gone.example/hook", Events: []kassa.EventType{kassa.EventNew}, EventsGiven: true, AutomaticRedelivery: &yes})
	h.hooks.status[flaky.URL] = []int{503, 429, 200}
	h.hooks.status[gone.URL] = []int{404}
	h.invoice("1000", kassa.SATS)
	eventually(t, "first attempts", func() bool { return len(h.hooks.to(flaky.URL)) == 1 && len(h.hooks.to(gone.URL)) == 1 })
	// Move the clock a second at a time, so each retry's timer fires
	// whenever the actor armed it.
	advanceUntil := func(what string, cond func() bool) {
		deadline := time.Now().Add(10 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			clock.Advance(time.Second)
			time.Sleep(2 * time.Millisecond)
		}
	}
	advanceUntil("third attempt", func() bool { return len(h.hooks.to(flaky.URL)) == 3 })
	// A retry is a pending delivery in the outbox before it is sent: once
	// the last attempts are recorded and the outbox is empty, no retry
	// can follow.
	final := func(w *kassa.Webhook, n int) bool {
		var log []*kassa.Delivery
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { log = append(log, d); return nil })
		for _, d := range log {
			if d.Status == kassa.DeliveryPending {
				return false
			}
		}
		return len(log) == n
	}
	eventually(t, "the attempts recorded", func() bool { return final(flaky, 3) && final(gone, 1) })
	for _, w := range []*kassa.Webhook{flaky, gone} {
		if err := h.db.WebhookOutbox(context.Background(), w.ID, func(id string) error {
			t.Errorf("%s: delivery %s still pending: a retry after success or after a 404", w.URL, id)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	var log []*kassa.Delivery
	h.db.Deliveries(context.Background(), flaky.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { log = append(log, d); return nil })
	byAttempt := map[int]*kassa.Delivery{}
	for _, d := range log {
		byAttempt[d.Attempt] = d
	}
	if len(log) != 3 || byAttempt[0] == nil || byAttempt[1] == nil || byAttempt[2] == nil {
		t.Fatalf("log has %d attempts", len(log))
	}
	if byAttempt[0].StatusCode != 503 || byAttempt[1].StatusCode != 429 || byAttempt[2].Status != kassa.DeliveryDelivered ||
		byAttempt[1].RedeliveryOf != byAttempt[0].ID || byAttempt[2].RedeliveryOf != byAttempt[0].ID {
		t.Fatalf("attempts = %+v %+v %+v", byAttempt[0], byAttempt[1], byAttempt[2])
	}
}

// TestSlowEndpointDoesNotDelayOthers checks that an endpoint that hangs
// delays no other: the fast endpoint gets all three events while the slow
// one's first delivery still hangs.
func TestSlowEndpointDoesNotDelayOthers(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	slow := h.webhook("https://slow.example/hook")
	fast := h.webhook("https://fast.example/hook")
	hang := make(chan struct{})
	h.hooks.hang = map[string]chan struct{}{slow.URL: hang}
	t.Cleanup(func() { close(hang) })
	inv := h.invoice("1000", kassa.SATS)
	if err := h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "fast deliveries", func() bool { return len(h.hooks.to(fast.URL)) == 3 })
	if got := types(h.hooks.to(fast.URL)); got != "New:None Processing:None Settled:None" {
		t.Fatalf("fast = %s", got)
	}
	if n := len(h.hooks.to(slow.URL)); n != 0 {
		t.Fatalf("the slow endpoint answered %d deliveries while it hangs", n)
	}
}

func TestPendingDeliveriesSentAfterRestart(t *testing.T) {
	dir := t.TempDir()
	db := openDir(t, dir)
	h := newHarness(t, db, kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook", kassa.EventNew)
	// A delivery left in the outbox, as a crash right after the invoice
	// event committed would leave it.
	d := &kassa.Delivery{ID: "pending1", WebhookID: w.ID, StoreID: h.store.ID, InvoiceID: "inv1", Type: kassa.EventNew,
		Payload: json.RawMessage(`{"type":"New","invoiceId":"inv1"}`), Status: kassa.DeliveryPending, CreatedAt: time.Now()}
	b := db.NewBatch()
	b.PutDelivery(d, true)
	if err := db.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, kassatest.NewTestClock(time.Now()))
	if n, err := h2.sys.Runtime.RecoverDeliveries(context.Background()); err != nil || n != 1 {
		t.Fatalf("recovered %d, %v", n, err)
	}
	eventually(t, "recovered delivery", func() bool { return len(h2.hooks.to(w.URL)) == 1 })
	eventually(t, "outbox empty", func() bool {
		n := 0
		db2.PendingDeliveries(context.Background(), func(string, string) error { n++; return nil })
		return n == 0
	})
}

// TestRecoveredDeliveriesGoOutInCommitOrder crashes the process while an
// endpoint hangs, with the New, Processing and Settled deliveries of
// several invoices still in the outbox, and checks that after the
// restart each invoice's events reach the endpoint in the order they were
// committed.
func TestRecoveredDeliveriesGoOutInCommitOrder(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db, err := persistence.Open("kassa", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, db, clock)
	hold := make(chan struct{})
	h.hooks.hold = hold
	t.Cleanup(func() { close(hold) }) // before the harness shuts down
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook")
	const invoices = 8
	for range invoices {
		inv := h.invoice("1000", kassa.SATS)
		if err := h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000}); err != nil {
			t.Fatal(err)
		}
	}
	pending := func(db *persistence.DB) int {
		n := 0
		if err := db.PendingDeliveries(context.Background(), func(string, string) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := pending(db); n != 3*invoices {
		t.Fatalf("%d deliveries in the outbox, want %d", n, 3*invoices)
	}

	// The crash: what was synced survives, the hanging attempt does not.
	db2, err := persistence.Open("kassa", persistence.Options{FS: fs.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	h2 := newHarness(t, db2, clock)
	if n, err := h2.sys.Runtime.RecoverDeliveries(context.Background()); err != nil || n != 3*invoices {
		t.Fatalf("recovered %d, %v", n, err)
	}
	eventually(t, "every recovered delivery", func() bool { return len(h2.hooks.to(w.URL)) == 3*invoices })
	byInvoice := map[string][]sent{}
	for _, s := range h2.hooks.to(w.URL) {
		var e webhook.Event
		if err := json.Unmarshal(s.body, &e); err != nil {
			t.Fatal(err)
		}
		byInvoice[e.InvoiceID] = append(byInvoice[e.InvoiceID], s)
	}
	for id, ss := range byInvoice {
		if got := types(ss); got != "New:None Processing:None Settled:None" {
			t.Errorf("invoice %s: events arrived as %s", id, got)
		}
	}
	eventually(t, "outbox empty", func() bool { return pending(db2) == 0 })
}

// TestRecoveredDeliveryPrecedesEventOfRecovery crashes with an invoice's
// New delivery pending and restarts after its expiry: the Expired event
// that recovery commits and announces first still goes out after New.
func TestRecoveredDeliveryPrecedesEventOfRecovery(t *testing.T) {
	fs := vfs.NewCrashableMem()
	db, err := persistence.Open("kassa", persistence.Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, db, clock)
	hold := make(chan struct{})
	h.hooks.hold = hold
	t.Cleanup(func() { close(hold) })
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook")
	inv := h.invoice("1000", kassa.SATS)

	db2, err := persistence.Open("kassa", persistence.Options{FS: fs.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db2.Close() })
	clock.Advance(time.Hour)
	h2 := newHarness(t, db2, clock)
	if _, err := h2.sys.Runtime.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the invoice expired", func() bool {
		got, err := db2.Invoice(context.Background(), inv.ID)
		return err == nil && got.Status == kassa.InvoiceExpired
	})
	if _, err := h2.sys.Runtime.RecoverDeliveries(context.Background()); err != nil {
		t.Fatal(err)
	}
	eventually(t, "two deliveries", func() bool { return len(h2.hooks.to(w.URL)) == 2 })
	if got := types(h2.hooks.to(w.URL)); got != "New:None Expired:None" {
		t.Fatalf("events arrived as %s", got)
	}
}

// TestWebhookActorPanicResendsOutbox checks that a webhook actor restarted
// after a panic sends the deliveries left in its outbox.
func TestWebhookActorPanicResendsOutbox(t *testing.T) {
	t.Parallel() // its own harness
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	if _, err := h.sys.Runtime.RecoverDeliveries(context.Background()); err != nil {
		t.Fatal(err)
	}
	w := h.webhook("https://a.example/hook", kassa.EventNew)
	// A pending delivery that no message announces, as if the actor's
	// mailbox was lost in a crash.
	d := &kassa.Delivery{ID: "orphan", WebhookID: w.ID, StoreID: h.store.ID, InvoiceID: "inv1", Type: kassa.EventNew,
		Payload: json.RawMessage(`{"type":"New","invoiceId":"inv1"}`), Status: kassa.DeliveryPending, CreatedAt: time.Now()}
	b := h.db.NewBatch()
	b.PutDelivery(d, true)
	if err := h.db.Commit(context.Background(), b); err != nil {
		t.Fatal(err)
	}
	crashActor(t, h, h.sys.Runtime.webhook(w.ID))
	eventually(t, "the orphan delivery recorded", func() bool {
		got, err := h.db.Delivery(context.Background(), d.ID)
		return err == nil && got.Status == kassa.DeliveryDelivered
	})
	// A notice after the restart finds the outbox empty: the orphan went
	// out once.
	h.sys.Runtime.tell(h.sys.Runtime.webhook(w.ID), &protos.DeliverWebhook{DeliveryId: d.ID})
	h.sys.Runtime.tell(h.sys.Runtime.webhook(w.ID), &protos.DeliverWebhook{DeliveryId: d.ID})
	if _, err := h.sys.Runtime.askWebhook(context.Background(), w.ID, &redeliver{deliveryID: "none"}); err == nil {
		t.Fatal("redelivery of no delivery answered no error")
	}
	if n := len(h.hooks.to(w.URL)); n != 1 {
		t.Fatalf("the orphan delivery sent %d times, want once", n)
	}
}

// TestWebhookActorPanicAnswersAtOnce: a redelivery whose commit panics in
// the webhook actor's turn answers the caller the panic's error, not its
// deadline. The actor, restarted, holds what storage holds: a panic
// before the write leaves no redelivery and sends nothing; one after it
// leaves the redelivery in the outbox, which the restart sends once.
// Asking again makes one more redelivery, sent once; the original is
// never sent again.
func TestWebhookActorPanicAnswersAtOnce(t *testing.T) {
	for _, when := range []string{"before", "after"} {
		t.Run(when+" the write", func(t *testing.T) {
			db := openMem(t)
			j := &panicJournal{Journal: db, after: when == "after"}
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Now()), func(c *Config) { c.Journal = j })
			h.createStore("0", "0")
			if _, err := h.sys.Runtime.RecoverDeliveries(context.Background()); err != nil {
				t.Fatal(err)
			}
			w := h.webhook("https://a.example/hook", kassa.EventNew)
			h.invoice("1000", kassa.SATS)
			var first *kassa.Delivery
			eventually(t, "the New delivery recorded", func() bool {
				h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { first = d; return nil })
				return first != nil && first.Status == kassa.DeliveryDelivered
			})
			records := func() (all, pending int) {
				h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
					all++
					if d.Status == kassa.DeliveryPending {
						pending++
					}
					return nil
				})
				return all, pending
			}
			// A generous deadline: a caller left waiting would wait it out
			// and get its timeout, not the panic's error.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			j.armed.Store(true)
			if _, err := h.sys.Service.Redeliver(ctx, h.store.ID, w.ID, first.ID); !errors.Is(err, errActorPanicked) {
				t.Fatalf("redelivery whose commit panicked: %v, want %v", err, errActorPanicked)
			}
			sent := 1
			if j.after {
				sent = 2
				eventually(t, "the written redelivery sent by the restart", func() bool {
					all, pending := records()
					return all == 2 && pending == 0
				})
			}
			if all, pending := records(); all != sent || pending != 0 {
				t.Fatalf("%d delivery records, %d pending after the panic; want %d, none pending", all, pending, sent)
			}
			d, err := h.sys.Service.Redeliver(ctx, h.store.ID, w.ID, first.ID)
			if err != nil || d.Status != kassa.DeliveryDelivered {
				t.Fatalf("redelivery asked again: %+v, %v", d, err)
			}
			if n := len(h.hooks.to(w.URL)); n != sent+1 {
				t.Fatalf("%d requests to the endpoint, want %d: each record sent once", n, sent+1)
			}
		})
	}
}

// TestDeliveryHeadersIdentifyEventAndDelivery checks X-Service-Event-Id
// and X-Service-Delivery-Id: one event id per invoice event, kept by its
// automatic retries and its redelivery; one delivery id per attempt, the
// id of the delivery record.
func TestDeliveryHeadersIdentifyEventAndDelivery(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	yes := true
	w, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: "https://a.example/hook", AutomaticRedelivery: &yes})
	if err != nil {
		t.Fatal(err)
	}
	other := h.webhook("https://b.example/hook")
	h.hooks.status[w.URL] = []int{503, 200} // New fails once, then all pass
	inv := h.invoice("1000", kassa.SATS)
	if err := h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other endpoint's three", func() bool { return len(h.hooks.to(other.URL)) == 3 })
	for deadline := time.Now().Add(5 * time.Second); len(h.hooks.to(w.URL)) < 4; {
		if time.Now().After(deadline) {
			t.Fatalf("got %d deliveries, want 4 (a retry)", len(h.hooks.to(w.URL)))
		}
		clock.Advance(time.Second)
		time.Sleep(2 * time.Millisecond)
	}
	// Each attempt is recorded after its send returns: wait until the
	// record of every send is there.
	var log []*kassa.Delivery
	byID := map[string]*kassa.Delivery{}
	eventually(t, "every send's attempt recorded", func() bool {
		log, byID = nil, map[string]*kassa.Delivery{}
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { log = append(log, d); return nil })
		for _, d := range log {
			byID[d.ID] = d
		}
		for _, s := range h.hooks.to(w.URL) {
			if d := byID[s.headers.Get(webhook.DeliveryIDHeader)]; d == nil ||
				d.Headers[webhook.DeliveryIDHeader] == "" {
				return false
			}
		}
		return true
	})
	eventOf := map[kassa.EventType]string{}
	for _, s := range h.hooks.to(w.URL) {
		eventID, deliveryID := s.headers.Get(webhook.EventIDHeader), s.headers.Get(webhook.DeliveryIDHeader)
		d := byID[deliveryID]
		if eventID == "" || d == nil {
			t.Fatalf("delivery headers %q %q: no such delivery", eventID, deliveryID)
		}
		if d.Headers[webhook.EventIDHeader] != eventID || d.Headers[webhook.DeliveryIDHeader] != deliveryID {
			t.Errorf("delivery %s records headers %v", d.ID, d.Headers)
		}
		if prev, ok := eventOf[d.Type]; ok && prev != eventID {
			t.Errorf("%s: event id %s, then %s", d.Type, prev, eventID)
		}
		eventOf[d.Type] = eventID
	}
	if len(eventOf) != 3 || eventOf[kassa.EventNew] == eventOf[kassa.EventProcessing] || eventOf[kassa.EventProcessing] == eventOf[kassa.EventSettled] {
		t.Fatalf("event ids %v", eventOf)
	}
	// The same event has the same id at every endpoint.
	for _, s := range h.hooks.to(other.URL) {
		var e webhook.Event
		json.Unmarshal(s.body, &e)
		if got := s.headers.Get(webhook.EventIDHeader); got != eventOf[kassa.EventType(e.Type)] {
			t.Errorf("%s at the other endpoint: event id %s, want %s", e.Type, got, eventOf[kassa.EventType(e.Type)])
		}
	}
	// A redelivery by hand keeps the event id and has its own delivery id.
	first := log[len(log)-1]
	re, err := h.sys.Service.Redeliver(context.Background(), h.store.ID, w.ID, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	last := h.hooks.to(w.URL)[len(h.hooks.to(w.URL))-1]
	if last.headers.Get(webhook.EventIDHeader) != eventOf[first.Type] || last.headers.Get(webhook.DeliveryIDHeader) != re.ID || re.ID == first.ID {
		t.Errorf("redelivery headers %v for delivery %s of %s", last.headers, re.ID, first.ID)
	}
}

// TestWebhookCapHoldsUnderConcurrentCreates releases many creates at once
// on one store: exactly MaxWebhooksPerStore are stored, the rest refused.
func TestWebhookCapHoldsUnderConcurrentCreates(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	h.createStore("0", "0")
	const tries = kassa.MaxWebhooksPerStore + 20
	start := make(chan struct{})
	errs := make(chan error, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: fmt.Sprintf("https://a.example/hook/%d", i)})
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	created, refused := 0, 0
	for err := range errs {
		switch {
		case err == nil:
			created++
		case kassa.ErrorCode(err) == kassa.Conflict:
			refused++
		default:
			t.Errorf("create: %v", err)
		}
	}
	stored := 0
	h.db.Webhooks(context.Background(), h.store.ID, func(*kassa.Webhook) error { stored++; return nil })
	if created != kassa.MaxWebhooksPerStore || stored != kassa.MaxWebhooksPerStore || refused != tries-kassa.MaxWebhooksPerStore {
		t.Fatalf("%d created, %d refused, %d stored; want %d stored", created, refused, stored, kassa.MaxWebhooksPerStore)
	}
}

// TestSigAliasRepeatsSigHeader checks that a configured alias carries the
// X-Service-Sig value, recorded with the delivery, beside unchanged
// signature headers.
func TestSigAliasRepeatsSigHeader(t *testing.T) {
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Now()), func(c *Config) {
		c.WebhookSigAliases = []string{"X-Coinsnap-Sig"}
	})
	h.createStore("0", "0")
	w := h.webhook("https://a.example/hook", kassa.EventNew, kassa.EventInvalid)
	inv := h.invoice("1000", kassa.SATS)
	eventually(t, "New", func() bool { return len(h.hooks.to(w.URL)) == 1 })
	s := h.hooks.to(w.URL)[0]
	if got, want := s.headers.Get("X-Coinsnap-Sig"), s.headers.Get(webhook.SigHeader); got == "" || got != want {
		t.Fatalf("X-Coinsnap-Sig %q, X-Service-Sig %q", got, want)
	}
	if err := webhook.VerifySig(w.Secret, s.body, s.headers.Get("X-Coinsnap-Sig")); err != nil {
		t.Fatal(err)
	}
	var d *kassa.Delivery
	eventually(t, "the delivery recorded", func() bool {
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(x *kassa.Delivery) error { d = x; return nil })
		return d != nil && d.Status == kassa.DeliveryDelivered
	})
	if d.Headers["X-Coinsnap-Sig"] != s.headers.Get("X-Coinsnap-Sig") || d.InvoiceID != inv.ID {
		t.Fatalf("recorded headers %v", d.Headers)
	}
}

// countingReader counts the scans of a store's webhooks.
type countingReader struct {
	kassa.Reader
	scans atomic.Int64
}

func (r *countingReader) Webhooks(ctx context.Context, storeID string, fn func(*kassa.Webhook) error) error {
	r.scans.Add(1)
	return r.Reader.Webhooks(ctx, storeID, fn)
}

// TestInvoiceEventsReadCachedWebhookList checks that invoice events of a
// store without webhooks do not scan storage for them, and that the
// cached list follows every change at once: a webhook created, disabled,
// deleted.
func TestInvoiceEventsReadCachedWebhookList(t *testing.T) {
	db := openMem(t)
	reader := &countingReader{Reader: db}
	h := newHarnessWith(t, db, kassatest.NewTestClock(time.Now()), func(c *Config) { c.Reader = reader })
	h.createStore("0", "0")
	for range 20 {
		h.invoice("1000", kassa.SATS)
	}
	if n := reader.scans.Load(); n > 1 {
		t.Fatalf("20 invoices of a store without webhooks scanned its webhooks %d times", n)
	}
	a := h.webhook("https://a.example/hook", kassa.EventNew)
	first := h.invoice("1000", kassa.SATS)
	eventually(t, "New at the new webhook", func() bool { return len(h.hooks.to(a.URL)) == 1 })
	b := h.webhook("https://b.example/hook", kassa.EventNew)
	no := false
	if _, err := h.sys.Service.UpdateWebhook(context.Background(), h.store.ID, a.ID, &kassa.WebhookInput{Enabled: &no}); err != nil {
		t.Fatal(err)
	}
	second := h.invoice("1000", kassa.SATS)
	eventually(t, "New at the second webhook", func() bool { return len(h.hooks.to(b.URL)) == 1 })
	if err := h.sys.Service.DeleteWebhook(context.Background(), h.store.ID, b.ID); err != nil {
		t.Fatal(err)
	}
	c := h.webhook("https://c.example/hook", kassa.EventNew)
	third := h.invoice("1000", kassa.SATS)
	eventually(t, "New at the third webhook", func() bool { return len(h.hooks.to(c.URL)) == 1 })
	// Deliveries are written in the batch of their event, before the
	// create returns: the logs are final.
	logged := func(w *kassa.Webhook) []string {
		var out []string
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { out = append(out, d.InvoiceID); return nil })
		return out
	}
	for _, c := range []struct {
		name string
		w    *kassa.Webhook
		want string
	}{{"disabled", a, first.ID}, {"deleted", b, second.ID}, {"third", c, third.ID}} {
		if got := logged(c.w); fmt.Sprint(got) != "["+c.want+"]" {
			t.Errorf("%s webhook: deliveries for %v, want only %s", c.name, got, c.want)
		}
	}
	t.Logf("%d scans of the store's webhooks for 23 invoices and 5 changes", reader.scans.Load())
}
