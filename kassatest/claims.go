package kassatest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// ClaimStorage is one node's handle on a store shared by the nodes of a
// cluster, with its outbox claims.
type ClaimStorage struct {
	Journal kassa.Journal
	Reader  kassa.Reader
	Claims  kassa.OutboxClaims
}

// RunOutboxClaims runs the contract of kassa.OutboxClaims. open returns
// two handles (two nodes) on one fresh store whose clock is clock.
// Pebble, one node's own store, has no claims; PostgreSQL runs it.
func RunOutboxClaims(t *testing.T, open func(t *testing.T, clock kassa.Clock) (a, b ClaimStorage)) {
	t.Run("TwoClaimers", func(t *testing.T) { t.Parallel(); claimsTwoClaimers(t, open) })
	t.Run("Expiry", func(t *testing.T) { t.Parallel(); claimsExpiry(t, open) })
	t.Run("RetryHoldsNothingBack", func(t *testing.T) { t.Parallel(); claimsRetryHoldsNothingBack(t, open) })
	t.Run("StaleHolderCannotRecord", func(t *testing.T) { t.Parallel(); claimsStaleHolder(t, open) })
	t.Run("Runs", func(t *testing.T) { t.Parallel(); claimsRuns(t, open) })
}

// queuePending commits n pending deliveries to each of the endpoints, in
// order, and returns each endpoint's delivery IDs in that order.
func queuePending(t *testing.T, s ClaimStorage, endpoints []string, n int) map[string][]string {
	t.Helper()
	want := map[string][]string{}
	for i := range n {
		for _, wh := range endpoints {
			id := fmt.Sprintf("dl_%s_%02d", wh, i)
			d := &kassa.Delivery{ID: id, WebhookID: wh, StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventNew,
				Payload: []byte(`{}`), Status: kassa.DeliveryPending, CreatedAt: Epoch}
			Commit(t, s.Journal, func(b kassa.Batch) { b.PutDelivery(d, true) })
			want[wh] = append(want[wh], id)
		}
	}
	return want
}

// recordClaimed records a claimed delivery's attempt, which takes it out
// of the outbox, as the webhook actor does; retry, when set, is queued in
// the same batch.
func recordClaimed(t *testing.T, s ClaimStorage, c kassa.DeliveryClaim, retry *kassa.Delivery) error {
	d, err := s.Reader.Delivery(t.Context(), c.DeliveryID)
	if err != nil {
		return err
	}
	d.Status = kassa.DeliveryDelivered
	b := s.Journal.NewBatch()
	b.PutDelivery(d, false)
	if retry != nil {
		b.PutDelivery(retry, true)
	}
	return s.Claims.CommitClaimed(t.Context(), c, b)
}

func claimOK(t *testing.T, s ClaimStorage, webhookID, holder, want string) kassa.DeliveryClaim {
	t.Helper()
	c, ok, err := s.Claims.ClaimDelivery(t.Context(), webhookID, holder, 30*time.Second)
	if err != nil || !ok || c.DeliveryID != want || c.Holder != holder || c.WebhookID != webhookID {
		t.Fatalf("%s's claim of %s = %+v, %v, %v; want %s", holder, webhookID, c, ok, err, want)
	}
	return c
}

func claimNone(t *testing.T, s ClaimStorage, webhookID, holder string) kassa.DeliveryClaim {
	t.Helper()
	c, ok, err := s.Claims.ClaimDelivery(t.Context(), webhookID, holder, 30*time.Second)
	if err != nil || ok {
		t.Fatalf("%s's claim of %s = %+v, %v, %v; want nothing", holder, webhookID, c, ok, err)
	}
	return c
}

// claimsTwoClaimers: two claimers (two nodes) drain four endpoints side
// by side. Every delivery is sent once, each endpoint's in outbox order
// (two claims of one endpoint at a time would send its head twice).
func claimsTwoClaimers(t *testing.T, open func(*testing.T, kassa.Clock) (ClaimStorage, ClaimStorage)) {
	a, b := open(t, kassa.SystemClock{})
	endpoints := []string{"wh_1", "wh_2", "wh_3", "wh_4"}
	want := queuePending(t, a, endpoints, 6)

	var (
		mu   sync.Mutex
		sent = map[string][]string{}
		by   = map[string]int{}
		errs []error
		wg   sync.WaitGroup
	)
	claimer := func(s ClaimStorage, holder string) {
		defer wg.Done()
		for {
			claimed := false
			for _, wh := range endpoints {
				c, ok, err := s.Claims.ClaimDelivery(t.Context(), wh, holder, time.Minute)
				if err == nil && ok {
					claimed = true
					mu.Lock()
					sent[c.WebhookID] = append(sent[c.WebhookID], c.DeliveryID)
					by[holder]++
					mu.Unlock()
					err = recordClaimed(t, s, c, nil)
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
			if claimed {
				continue
			}
			// Nothing claimable: done when the outbox is empty, else
			// the other claimer holds the heads.
			n := 0
			if err := s.Reader.PendingDeliveries(t.Context(), func(string, string) error { n++; return nil }); err != nil || n == 0 {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
	wg.Add(2)
	go claimer(a, "node-a")
	go claimer(b, "node-b")
	wg.Wait()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, wh := range endpoints {
		if !slices.Equal(sent[wh], want[wh]) {
			t.Errorf("endpoint %s: sent %v, want each once in outbox order %v", wh, sent[wh], want[wh])
		}
	}
	t.Logf("deliveries sent by node-a: %d, by node-b: %d", by["node-a"], by["node-b"])
}

// claimsExpiry: a claimer that dies holding a claim blocks its endpoint
// (nothing overtakes its delivery) until the claim expires, and says
// until when; then another claimer gets the same delivery. Another
// endpoint is not held up meanwhile. A release with a retry time keeps
// the delivery, and the endpoint, until then.
func claimsExpiry(t *testing.T, open func(*testing.T, kassa.Clock) (ClaimStorage, ClaimStorage)) {
	ctx := t.Context()
	clock := NewTestClock(Epoch)
	a, b := open(t, clock)
	queuePending(t, a, []string{"wh_1"}, 2)
	queuePending(t, a, []string{"wh_2"}, 1)

	ca := claimOK(t, a, "wh_1", "node-a", "dl_wh_1_00")
	// node-a dies. node-b gets the other endpoint, never wh_1's second.
	cb := claimOK(t, b, "wh_2", "node-b", "dl_wh_2_00")
	if err := recordClaimed(t, b, cb, nil); err != nil {
		t.Fatal(err)
	}
	if held := claimNone(t, b, "wh_1", "node-b"); held.Holder != "node-a" || !held.Expires.Equal(ca.Expires) {
		t.Fatalf("the refused claim names %+v, want node-a's claim until %v", held, ca.Expires)
	}
	claimNone(t, b, "wh_2", "node-b") // empty
	clock.Advance(30 * time.Second)
	cb = claimOK(t, b, "wh_1", "node-b", "dl_wh_1_00")
	// A's release of its stale claim changes nothing.
	if err := a.Claims.ReleaseDelivery(ctx, ca, time.Time{}); err != nil {
		t.Fatal(err)
	}
	claimNone(t, a, "wh_1", "node-a")
	// B's attempt failed: retry in a minute; the endpoint waits.
	if err := b.Claims.ReleaseDelivery(ctx, cb, clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if held := claimNone(t, a, "wh_1", "node-a"); held.Holder != "" || !held.Expires.Equal(clock.Now().Add(time.Minute)) {
		t.Fatalf("the refused claim names %+v, want a release until %v", held, clock.Now().Add(time.Minute))
	}
	clock.Advance(time.Minute)
	claimOK(t, a, "wh_1", "node-a", "dl_wh_1_00")
}

// claimsRetryHoldsNothingBack: an automatic retry waits in the outbox
// for its time without holding the endpoint's later deliveries back (as
// on one node); once due it is the endpoint's next, and it is not
// claimed while a later delivery claimed before is still in flight.
func claimsRetryHoldsNothingBack(t *testing.T, open func(*testing.T, kassa.Clock) (ClaimStorage, ClaimStorage)) {
	clock := NewTestClock(Epoch)
	a, b := open(t, clock)
	queuePending(t, a, []string{"wh_1"}, 1) // dl_wh_1_00
	c := claimOK(t, a, "wh_1", "node-a", "dl_wh_1_00")
	// Its attempt failed; the retry is due in 10 s.
	retry := &kassa.Delivery{ID: "dl_retry", WebhookID: "wh_1", StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventNew,
		Payload: []byte(`{}`), Status: kassa.DeliveryPending, RedeliveryOf: "dl_wh_1_00", Attempt: 1,
		NotBefore: clock.Now().Add(10 * time.Second), CreatedAt: Epoch}
	if err := recordClaimed(t, a, c, retry); err != nil {
		t.Fatal(err)
	}
	claimNone(t, b, "wh_1", "node-b") // only the retry, not due
	later := &kassa.Delivery{ID: "dl_later", WebhookID: "wh_1", StoreID: "s1", InvoiceID: "inv_2", Type: kassa.EventNew,
		Payload: []byte(`{}`), Status: kassa.DeliveryPending, CreatedAt: Epoch}
	Commit(t, a.Journal, func(bt kassa.Batch) { bt.PutDelivery(later, true) })
	cl := claimOK(t, b, "wh_1", "node-b", "dl_later")
	clock.Advance(10 * time.Second)
	// The retry is due, but node-b's delivery is in flight.
	if held := claimNone(t, a, "wh_1", "node-a"); held.Holder != "node-b" {
		t.Fatalf("the refused claim names %+v, want node-b's", held)
	}
	if err := recordClaimed(t, b, cl, nil); err != nil {
		t.Fatal(err)
	}
	claimOK(t, a, "wh_1", "node-a", "dl_retry")
}

// claimsStaleHolder: a holder that stalls past its claim's expiry and
// wakes after another took the delivery over cannot record its attempt
// (which would take the delivery out of the outbox while the new holder
// sends it, and let the next overtake it): nothing of its batch is
// stored. A claim that ran out but that nobody took is still its
// holder's to record.
func claimsStaleHolder(t *testing.T, open func(*testing.T, kassa.Clock) (ClaimStorage, ClaimStorage)) {
	clock := NewTestClock(Epoch)
	a, b := open(t, clock)
	queuePending(t, a, []string{"wh_1"}, 3)
	ca := claimOK(t, a, "wh_1", "node-a", "dl_wh_1_00")
	clock.Advance(time.Minute) // a stalls
	cb := claimOK(t, b, "wh_1", "node-b", "dl_wh_1_00")
	err := recordClaimed(t, a, ca, nil)
	if !errors.Is(err, kassa.ErrClaimLost) || kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("the stale holder's record = %v, want ErrClaimLost", err)
	}
	if d, err := a.Reader.Delivery(t.Context(), "dl_wh_1_00"); err != nil || d.Status != kassa.DeliveryPending {
		t.Fatalf("after the refused record the delivery is %+v, %v; want still pending", d, err)
	}
	claimNone(t, a, "wh_1", "node-a")
	if err := recordClaimed(t, b, cb, nil); err != nil {
		t.Fatal(err)
	}
	cb = claimOK(t, b, "wh_1", "node-b", "dl_wh_1_01")
	clock.Advance(time.Minute) // b is slow, but nobody took its claim
	if err := recordClaimed(t, b, cb, nil); err != nil {
		t.Fatalf("record of an expired claim nobody took: %v", err)
	}
	claimOK(t, a, "wh_1", "node-a", "dl_wh_1_02")
}

// claimsRuns: a run claim takes the endpoint's next delivery and the due
// ones after it, up to its size, in outbox order; the other node gets
// nothing of the endpoint while it runs; one commit records the run; a
// release until later stops the next run before it; a run whose claim ran
// out and was taken over records nothing.
func claimsRuns(t *testing.T, open func(*testing.T, kassa.Clock) (ClaimStorage, ClaimStorage)) {
	ctx := t.Context()
	clock := NewTestClock(Epoch)
	a, b := open(t, clock)
	ids := queuePending(t, a, []string{"wh_1"}, 7)["wh_1"]
	run := func(s ClaimStorage, holder string, max int, want ...string) kassa.DeliveryClaim {
		t.Helper()
		c, ok, err := s.Claims.ClaimRun(ctx, "wh_1", holder, 30*time.Second, max)
		if err != nil || !ok || !slices.Equal(c.Deliveries(), want) || c.Holder != holder {
			t.Fatalf("%s's run claim of %d = %+v, %v, %v; want %v", holder, max, c, ok, err, want)
		}
		return c
	}
	record := func(s ClaimStorage, c kassa.DeliveryClaim) error {
		bt := s.Journal.NewBatch()
		for _, id := range c.Deliveries() {
			d, err := s.Reader.Delivery(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			d.Status = kassa.DeliveryDelivered
			bt.PutDelivery(d, false)
		}
		return s.Claims.CommitClaimed(ctx, c, bt)
	}
	c := run(a, "node-a", 3, ids[:3]...)
	claimNone(t, b, "wh_1", "node-b")
	if err := record(a, c); err != nil {
		t.Fatal(err)
	}
	// The next run: one claim, released until later, stops it.
	c = claimOK(t, a, "wh_1", "node-a", ids[3])
	if err := a.Claims.ReleaseDelivery(ctx, c, clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := a.Claims.ClaimRun(ctx, "wh_1", "node-a", 30*time.Second, 5); err != nil || ok {
		t.Fatalf("a run behind a release until later = %+v, %v, %v; want nothing", c, ok, err)
	}
	clock.Advance(time.Minute)
	c = run(a, "node-a", 2, ids[3:5]...)
	// node-a stalls past its claim; node-b takes the run over.
	clock.Advance(31 * time.Second)
	cb := run(b, "node-b", 10, ids[3:]...)
	if err := record(a, c); !errors.Is(err, kassa.ErrClaimLost) {
		t.Fatalf("a taken-over run's commit = %v, want ErrClaimLost", err)
	}
	if d, err := a.Reader.Delivery(ctx, ids[3]); err != nil || d.Status != kassa.DeliveryPending {
		t.Fatalf("after the refused run commit, %s is %v, %v; want it pending", ids[3], d, err)
	}
	if err := record(b, cb); err != nil {
		t.Fatal(err)
	}
	n := 0
	if err := b.Reader.PendingDeliveries(ctx, func(string, string) error { n++; return nil }); err != nil || n != 0 {
		t.Fatalf("%d deliveries left in the outbox, %v", n, err)
	}
}
