package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence/postgres"
	"github.com/kassapay/kassa/webhook"
)

// receipts is a webhook receiver shared by the nodes of a test: it
// records each delivery it takes, with the node that sent it, in the
// order it takes them.
type receipts struct {
	mu  sync.Mutex
	got []receipt
}

type receipt struct{ node, delivery string }

func (r *receipts) add(node, delivery string) {
	r.mu.Lock()
	r.got = append(r.got, receipt{node, delivery})
	r.mu.Unlock()
}

func (r *receipts) all() []receipt {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// sentBy reports whether node completed a delivery of id.
func (r *receipts) sentBy(node, id string) bool {
	return slices.Contains(r.all(), receipt{node, id})
}

// nodeClient is one node's webhook client in front of a shared
// receiver; before is called with each delivery's id before the
// receiver takes it (a test holds a delivery in flight there).
type nodeClient struct {
	node   string
	rcv    *receipts
	before func(deliveryID string)
}

func (c *nodeClient) CheckURL(string) error                  { return nil }
func (c *nodeClient) Validate(context.Context, string) error { return nil }

func (c *nodeClient) Deliver(_ context.Context, _ string, h http.Header, _ []byte) kassa.WebhookAttempt {
	id := h.Get(webhook.DeliveryIDHeader)
	if c.before != nil {
		c.before(id)
	}
	c.rcv.add(c.node, id)
	return kassa.WebhookAttempt{StatusCode: 200, OK: true}
}

// claimSpy is the store's outbox claims, telling refused reports each claim
// that found nothing to take.
type claimSpy struct {
	kassa.OutboxClaims
	refused func()
}

// withClaims makes cfg claim outbox deliveries on db as holder, trying
// again after retry; refused, when set, is told of each claim that
// found nothing to take.
func withClaims(cfg *Config, db *postgres.DB, holder string, retry time.Duration, refused func()) {
	cfg.Claims, cfg.ClaimHolder, cfg.ClaimRetry = claimSpy{db, refused}, holder, retry
}

func (s claimSpy) ClaimDelivery(ctx context.Context, webhookID, holder string, ttl time.Duration) (kassa.DeliveryClaim, bool, error) {
	c, ok, err := s.OutboxClaims.ClaimDelivery(ctx, webhookID, holder, ttl)
	if err == nil && !ok && s.refused != nil {
		s.refused()
	}
	return c, ok, err
}

func (s claimSpy) ClaimRun(ctx context.Context, webhookID, holder string, ttl time.Duration, max int) (kassa.DeliveryClaim, bool, error) {
	c, ok, err := s.OutboxClaims.ClaimRun(ctx, webhookID, holder, ttl, max)
	if err == nil && !ok && s.refused != nil {
		s.refused()
	}
	return c, ok, err
}

// pgNode starts a System over db, one node of a cluster sharing db, that
// sends webhooks through client and claims deliveries as holder, trying
// again after retry; refused is told of each claim that found nothing to
// take.
func pgNode(t *testing.T, db *postgres.DB, clock kassa.Clock, client kassa.WebhookClient, holder string, retry time.Duration, refused func()) *System {
	t.Helper()
	cfg := Config{
		Journal: db, Reader: db, Chain: &fakeChain{}, Lightning: fakeLightning{}, Rates: fixedRates{},
		Webhooks: client, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InvoiceExpiry: 15 * time.Minute, Monitoring: time.Hour,
	}
	withClaims(&cfg, db, holder, retry, refused)
	sys := NewSystem(cfg)
	t.Cleanup(sys.Runtime.Shutdown)
	return sys
}

// queueDeliveries puts n pending deliveries of one endpoint in the
// outbox, as invoice events do, and returns their ids in outbox order.
func queueDeliveries(t *testing.T, db *postgres.DB, w *kassa.Webhook, n int, now time.Time) []string {
	t.Helper()
	var ids []string
	for i := range n {
		d := &kassa.Delivery{
			ID: fmt.Sprintf("dl_%02d", i), WebhookID: w.ID, StoreID: w.StoreID, InvoiceID: fmt.Sprintf("inv_%d", i/2),
			EventID: fmt.Sprintf("ev_%02d", i), Type: kassa.EventNew, Payload: []byte(`{"type":"New"}`),
			Status: kassa.DeliveryPending, CreatedAt: now,
		}
		b := db.NewBatch()
		b.PutDelivery(d, true)
		if err := db.Commit(t.Context(), b); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, d.ID)
	}
	return ids
}

// inOutboxOrder checks that the receiver took every delivery, and never
// one after a later one: a repeat is allowed only right after itself.
func inOutboxOrder(t *testing.T, got []receipt, want []string) {
	t.Helper()
	pos := map[string]int{}
	for i, id := range want {
		pos[id] = i
	}
	last := -1
	seen := map[string]bool{}
	for _, r := range got {
		p, ok := pos[r.delivery]
		if !ok {
			t.Errorf("the receiver took %s, which was never queued", r.delivery)
			continue
		}
		if p < last {
			t.Errorf("the receiver took %s (from %s) after %s: out of outbox order; all it took: %v", r.delivery, r.node, want[last], got)
			return
		}
		last = p
		seen[r.delivery] = true
	}
	for _, id := range want {
		if !seen[id] {
			t.Errorf("delivery %s never reached the receiver; it took %v", id, got)
		}
	}
}

// TestWebhookDualActivationKeepsOrder: two nodes over one PostgreSQL
// both run the same endpoint's actor (a dual activation, as during a
// topology change or when a stalled node wakes). Node B starts sending
// the head delivery and is held in flight; node A is woken meanwhile.
// Without claims A sent the head and the next one while B's head was in
// flight, so the receiver took the head again after a later delivery.
// With claims only the holder of the endpoint's head sends: the receiver
// takes every delivery, in outbox order, and each is recorded once.
func TestWebhookDualActivationKeepsOrder(t *testing.T) {
	clock := kassa.SystemClock{}
	dbA, open := openPG(t, clock)
	dbB := open()
	rcv := &receipts{}
	aRefused := make(chan struct{}, 1)
	var bEntered, release sync.Once
	bInFlight, letBGo := make(chan struct{}), make(chan struct{})
	clientB := &nodeClient{node: "B", rcv: rcv}
	clientB.before = func(string) {
		first := false
		bEntered.Do(func() { first = true; close(bInFlight) })
		if !first {
			return
		}
		// B's first delivery waits until A has sent the second
		// delivery or was refused a claim while B holds one.
		<-letBGo
	}
	a := pgNode(t, dbA, clock, &nodeClient{node: "A", rcv: rcv}, "node-a", 10*time.Millisecond, func() {
		select {
		case aRefused <- struct{}{}:
		default:
		}
	})
	b := pgNode(t, dbB, clock, clientB, "node-b", 10*time.Millisecond, nil)
	ctx := context.Background()
	st, err := a.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	w, err := a.Service.CreateWebhook(ctx, st.ID, &kassa.WebhookInput{URL: "https://shop.example/hook"})
	if err != nil {
		t.Fatal(err)
	}
	want := queueDeliveries(t, dbA, w, 8, clock.Now())

	if _, err := b.Runtime.RecoverDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	<-bInFlight
	if _, err := a.Runtime.RecoverDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	go func() {
		for !rcv.sentBy("A", want[1]) {
			select {
			case <-aRefused:
				release.Do(func() { close(letBGo) })
				return
			case <-time.After(time.Millisecond):
			}
		}
		release.Do(func() { close(letBGo) })
	}()
	eventually(t, "every delivery recorded", func() bool {
		n := 0
		_ = dbA.WebhookOutbox(ctx, w.ID, func(string) error { n++; return nil })
		return n == 0
	})
	inOutboxOrder(t, rcv.all(), want)
	if got := rcv.all(); len(got) != len(want) {
		t.Errorf("the receiver took %v, want each delivery once (one holder at a time, none failed)", got)
	}
	for _, id := range want {
		d, err := dbA.Delivery(ctx, id)
		if err != nil || d.Status != kassa.DeliveryDelivered {
			t.Errorf("delivery %s: %+v, %v; want Delivered", id, d, err)
		}
	}
}

// TestWebhookClaimOfLostNodeTakenOver: a node claimed an endpoint's next
// delivery and died. Another node's endpoint actor, woken as on a
// topology change, is refused while the lost node's claim runs, tries
// again every ClaimRetry, and sends the delivery, and those after it in
// order, once the claim has run out.
func TestWebhookClaimOfLostNodeTakenOver(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	db, _ := openPG(t, clock)
	rcv := &receipts{}
	refused := make(chan struct{}, 100)
	b := pgNode(t, db, clock, &nodeClient{node: "B", rcv: rcv}, "node-b", DefaultClaimRetry, func() { refused <- struct{}{} })
	ctx := context.Background()
	st, err := b.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	w, err := b.Service.CreateWebhook(ctx, st.ID, &kassa.WebhookInput{URL: "https://shop.example/hook"})
	if err != nil {
		t.Fatal(err)
	}
	want := queueDeliveries(t, db, w, 3, clock.Now())
	lost, ok, err := db.ClaimDelivery(ctx, w.ID, "lost-node", DefaultClaimTTL)
	if err != nil || !ok || lost.DeliveryID != want[0] {
		t.Fatalf("the lost node's claim = %+v, %v, %v", lost, ok, err)
	}

	timers := clock.Pending()
	if _, err := b.Runtime.RecoverDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	<-refused
	for range int(DefaultClaimTTL/DefaultClaimRetry) - 1 {
		eventually(t, "B's retry armed", func() bool { return clock.Pending() == timers+1 })
		clock.Advance(DefaultClaimRetry)
		<-refused // B tried again, and was refused again
		if got := rcv.all(); len(got) != 0 {
			t.Fatalf("sent %v while the lost node's claim ran", got)
		}
	}
	eventually(t, "B's retry armed", func() bool { return clock.Pending() == timers+1 })
	clock.Advance(DefaultClaimRetry) // the lost node's claim runs out
	eventually(t, "every delivery recorded", func() bool {
		n := 0
		_ = db.WebhookOutbox(ctx, w.ID, func(string) error { n++; return nil })
		return n == 0
	})
	inOutboxOrder(t, rcv.all(), want)
	if got := rcv.all(); len(got) != len(want) {
		t.Errorf("the receiver took %v, want each delivery once", got)
	}
}

// commitCounter counts the commits of claimed deliveries; it injects
// nothing.
type commitCounter struct {
	claimSpy
	commits *atomic.Int64
}

func (c commitCounter) CommitClaimed(ctx context.Context, cl kassa.DeliveryClaim, b kassa.Batch) error {
	c.commits.Add(1)
	return c.claimSpy.CommitClaimed(ctx, cl, b)
}

// TestWebhookBacklogSentInRuns: an endpoint's backlog on a shared store
// (the Expired events of many invoices due together) is claimed, sent
// and recorded a run at a time: every delivery once, in outbox order,
// with one commit per run, not one per delivery.
func TestWebhookBacklogSentInRuns(t *testing.T) {
	clock := kassa.SystemClock{}
	db, _ := openPG(t, clock)
	rcv := &receipts{}
	var commits atomic.Int64
	cfg := Config{
		Journal: db, Reader: db, Chain: &fakeChain{}, Lightning: fakeLightning{}, Rates: fixedRates{},
		Webhooks: &nodeClient{node: "A", rcv: rcv}, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InvoiceExpiry: 15 * time.Minute, Monitoring: time.Hour,
	}
	withClaims(&cfg, db, "node-a", DefaultClaimRetry, nil)
	cfg.Claims = commitCounter{claimSpy: cfg.Claims.(claimSpy), commits: &commits}
	sys := NewSystem(cfg)
	t.Cleanup(sys.Runtime.Shutdown)
	ctx := context.Background()
	st, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	w, err := sys.Service.CreateWebhook(ctx, st.ID, &kassa.WebhookInput{URL: "https://shop.example/hook"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 2*deliveryRun + 5
	want := queueDeliveries(t, db, w, n, clock.Now())
	if _, err := sys.Runtime.RecoverDeliveries(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every delivery recorded", func() bool {
		left := 0
		_ = db.WebhookOutbox(ctx, w.ID, func(string) error { left++; return nil })
		return left == 0
	})
	inOutboxOrder(t, rcv.all(), want)
	if got := rcv.all(); len(got) != n {
		t.Errorf("the receiver took %d deliveries, want each of %d once", len(got), n)
	}
	if c := commits.Load(); c > 3 {
		t.Errorf("%d deliveries recorded in %d commits, want one per run of %d (3)", n, c, deliveryRun)
	}
}
