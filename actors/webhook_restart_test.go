package actors

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// outboxReader counts the reads of webhook outboxes: one per delivery
// pass of a webhook actor on one node.
type outboxReader struct {
	kassa.Reader
	passes atomic.Int64
}

func (r *outboxReader) WebhookOutbox(ctx context.Context, webhookID string, fn func(string) error) error {
	r.passes.Add(1)
	return r.Reader.WebhookOutbox(ctx, webhookID, fn)
}

// settlingClock is a test clock that knows when the timers it fired
// have run: settled(at) reports that every timer due by at, not
// cancelled, has finished its call.
type settlingClock struct {
	*kassatest.TestClock
	mu     sync.Mutex
	timers []*settlingTimer
}

type settlingTimer struct {
	at             time.Time
	canceled, done bool
}

func (c *settlingClock) AfterFunc(d time.Duration, f func()) func() {
	t := &settlingTimer{at: c.Now().Add(d)}
	c.mu.Lock()
	c.timers = append(c.timers, t)
	c.mu.Unlock()
	cancel := c.TestClock.AfterFunc(d, func() {
		f()
		c.mu.Lock()
		t.done = true
		c.mu.Unlock()
	})
	return func() {
		cancel()
		c.mu.Lock()
		t.canceled = true
		c.mu.Unlock()
	}
}

func (c *settlingClock) settled(at time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.timers {
		if !t.at.After(at) && !t.canceled && !t.done {
			return false
		}
	}
	return true
}

// TestWebhookRetryTimerDiesWithCrashedActor: a webhook actor that
// crashes while a retry's timer is armed leaves that timer to its
// restarted incarnation, which arms its own for the same retry. When
// the retry falls due, the endpoint's outbox gets one delivery pass,
// not one per incarnation, and the retry is sent once.
func TestWebhookRetryTimerDiesWithCrashedActor(t *testing.T) {
	db := openMem(t)
	reader := &outboxReader{Reader: db}
	clock := &settlingClock{TestClock: kassatest.NewTestClock(time.Now())}
	h := newHarnessWith(t, db, clock.TestClock, func(c *Config) { c.Reader, c.Clock = reader, clock })
	h.createStore("0", "0")
	if _, err := h.sys.Runtime.RecoverDeliveries(context.Background()); err != nil {
		t.Fatal(err)
	}
	yes := true
	w, err := h.sys.Service.CreateWebhook(context.Background(), h.store.ID, &kassa.WebhookInput{URL: "https://flaky.example/hook", Events: []kassa.EventType{kassa.EventNew}, EventsGiven: true, AutomaticRedelivery: &yes})
	if err != nil {
		t.Fatal(err)
	}
	h.hooks.status[w.URL] = []int{503, 200}
	h.invoice("1000", kassa.SATS)
	var retry *kassa.Delivery
	eventually(t, "the retry of the failed attempt written", func() bool {
		retry = nil
		h.db.Deliveries(context.Background(), w.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
			if d.Status == kassa.DeliveryPending && d.RedeliveryOf != "" {
				retry = d
			}
			return nil
		})
		return retry != nil
	})
	if retry, err = h.db.Delivery(context.Background(), retry.ID); err != nil {
		t.Fatal(err)
	}
	// The crash is handled after the turn that wrote the retry and armed
	// its timer; crashActor returns once the restarted actor has started
	// (and made its recovery pass, which arms the retry's timer again).
	crashActor(t, h, h.sys.Runtime.webhook(w.ID))
	before := reader.passes.Load()
	due := retry.NotBefore.Add(time.Second) // past the timers' deadline
	clock.Advance(due.Sub(clock.Now()))
	eventually(t, "the timers due with the retry run", func() bool { return clock.settled(due) })
	eventually(t, "the retry sent", func() bool { return len(h.hooks.to(w.URL)) == 2 })
	// The actor answers this after every wake-up the timers sent it.
	if _, err := h.sys.Runtime.askWebhook(context.Background(), w.ID, &redeliver{deliveryID: "none"}); err == nil {
		t.Fatal("redelivery of no delivery answered no error")
	}
	if n := reader.passes.Load() - before; n != 1 {
		t.Errorf("the retry falling due made %d delivery passes, want 1: a timer of the crashed incarnation fired into the restarted one", n)
	}
	if n := len(h.hooks.to(w.URL)); n != 2 {
		t.Errorf("%d requests to the endpoint, want 2", n)
	}
}
