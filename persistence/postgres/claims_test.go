package postgres

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// putPending commits n pending deliveries to each of the endpoints, in
// order, and returns each endpoint's delivery IDs in that order.
func putPending(t *testing.T, db *DB, endpoints []string, n int) map[string][]string {
	t.Helper()
	want := map[string][]string{}
	for i := range n {
		for _, wh := range endpoints {
			id := fmt.Sprintf("dl_%s_%02d", wh, i)
			d := &kassa.Delivery{ID: id, WebhookID: wh, StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventNew,
				Payload: []byte(`{}`), Status: kassa.DeliveryPending, CreatedAt: kassatest.Epoch}
			kassatest.Commit(t, db, func(b kassa.Batch) { b.PutDelivery(d, true) })
			want[wh] = append(want[wh], id)
		}
	}
	return want
}

// recordSent records a claimed delivery's attempt, which takes it out
// of the outbox, as the webhook actor does.
func recordSent(t *testing.T, db *DB, c kassa.DeliveryClaim) error {
	d, err := db.Delivery(t.Context(), c.DeliveryID)
	if err != nil {
		return err
	}
	d.Status = kassa.DeliveryDelivered
	b := db.NewBatch()
	b.PutDelivery(d, false)
	return db.Commit(t.Context(), b)
}

// TestClaimDeliveriesTwoClaimers: two claimers (two nodes) drain one
// outbox side by side. Every delivery is sent once, each endpoint's in
// outbox order (two claims of one endpoint at a time would send its head
// twice).
func TestClaimDeliveriesTwoClaimers(t *testing.T) {
	dbA, dbB := openClocked(t, kassa.SystemClock{})
	endpoints := []string{"wh_1", "wh_2", "wh_3", "wh_4"}
	want := putPending(t, dbA, endpoints, 6)

	var (
		mu   sync.Mutex
		sent = map[string][]string{}
		by   = map[string]int{}
		errs []error
		wg   sync.WaitGroup
	)
	claimer := func(db *DB, holder string) {
		defer wg.Done()
		for {
			c, ok, err := db.ClaimDelivery(context.Background(), holder, time.Minute)
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			if !ok {
				// Nothing claimable: done when the outbox is empty,
				// else another claimer holds the heads.
				n := 0
				if err := db.PendingDeliveries(context.Background(), func(string, string) error { n++; return nil }); err != nil || n == 0 {
					return
				}
				time.Sleep(time.Millisecond)
				continue
			}
			mu.Lock()
			sent[c.WebhookID] = append(sent[c.WebhookID], c.DeliveryID)
			by[holder]++
			mu.Unlock()
			if err := recordSent(t, db, c); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
		}
	}
	wg.Add(2)
	go claimer(dbA, "node-a")
	go claimer(dbB, "node-b")
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

// TestClaimDeliveryExpiry: a claimer that dies holding a claim blocks
// its endpoint (nothing overtakes its delivery) until the claim expires;
// then another claimer gets the same delivery. Another endpoint is not
// held up meanwhile. A release with a retry time keeps the delivery
// until then.
func TestClaimDeliveryExpiry(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, clock)
	putPending(t, dbA, []string{"wh_1"}, 2)
	putPending(t, dbA, []string{"wh_2"}, 1)

	a, ok, err := dbA.ClaimDelivery(ctx, "node-a", 30*time.Second)
	if err != nil || !ok || a.DeliveryID != "dl_wh_1_00" {
		t.Fatalf("A's claim = %+v, %v, %v; want dl_wh_1_00", a, ok, err)
	}
	// node-a dies. node-b gets the other endpoint, never wh_1's second.
	b, ok, err := dbB.ClaimDelivery(ctx, "node-b", 30*time.Second)
	if err != nil || !ok || b.DeliveryID != "dl_wh_2_00" {
		t.Fatalf("B's first claim = %+v, %v, %v; want dl_wh_2_00", b, ok, err)
	}
	if err := recordSent(t, dbB, b); err != nil {
		t.Fatal(err)
	}
	if c, ok, err := dbB.ClaimDelivery(ctx, "node-b", 30*time.Second); ok || err != nil {
		t.Fatalf("B's claim while A's claim runs = %+v, %v, %v; want nothing", c, ok, err)
	}
	clock.Advance(30 * time.Second)
	b, ok, err = dbB.ClaimDelivery(ctx, "node-b", 30*time.Second)
	if err != nil || !ok || b.DeliveryID != "dl_wh_1_00" {
		t.Fatalf("B's claim after A's expired = %+v, %v, %v; want dl_wh_1_00", b, ok, err)
	}
	// A's release of its stale claim changes nothing.
	if err := dbA.ReleaseDelivery(ctx, a, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if c, ok, _ := dbA.ClaimDelivery(ctx, "node-a", 30*time.Second); ok {
		t.Fatalf("A claimed %s while B's claim runs", c.DeliveryID)
	}
	// B's attempt failed: retry in a minute.
	if err := dbB.ReleaseDelivery(ctx, b, clock.Now().Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	if c, ok, _ := dbA.ClaimDelivery(ctx, "node-a", 30*time.Second); ok {
		t.Fatalf("claimed %s before its retry time", c.DeliveryID)
	}
	clock.Advance(time.Minute)
	if c, ok, err := dbA.ClaimDelivery(ctx, "node-a", 30*time.Second); !ok || err != nil || c.DeliveryID != "dl_wh_1_00" {
		t.Fatalf("claim at the retry time = %+v, %v, %v", c, ok, err)
	}
}

// TestClaimOverdue: two sweepers split the overdue invoices between
// them, none twice while a claim runs; an invoice not yet overdue is
// left; an expired claim is handed out again.
func TestClaimOverdue(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	dbA, dbB := openClocked(t, clock)
	for i := range 6 {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		kassatest.Commit(t, dbA, func(b kassa.Batch) { b.PutInvoice(inv, nil, 1) })
	}
	var deadlines []time.Time
	if err := dbA.OpenInvoices(ctx, func(_, _ string, d time.Time) error { deadlines = append(deadlines, d); return nil }); err != nil || len(deadlines) != 6 {
		t.Fatalf("OpenInvoices = %v, %v", deadlines, err)
	}
	overdue := deadlines[4] // the first four are overdue
	a, err := dbA.ClaimOverdue(ctx, "node-a", overdue, 10*time.Second, 3)
	if err != nil || len(a) != 3 || a[0].InvoiceID != "inv_0" {
		t.Fatalf("A's claim = %v, %v; want inv_0..inv_2", a, err)
	}
	b, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10)
	if err != nil || len(b) != 1 || b[0].InvoiceID != "inv_3" || b[0].StoreID != "s1" {
		t.Fatalf("B's claim = %v, %v; want inv_3 only", b, err)
	}
	if c, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10); len(c) != 0 || err != nil {
		t.Fatalf("a second claim while the first run = %v, %v", c, err)
	}
	clock.Advance(10 * time.Second)
	if c, err := dbB.ClaimOverdue(ctx, "node-b", overdue, 10*time.Second, 10); len(c) != 4 || err != nil {
		t.Fatalf("claim after the claims expired = %v, %v; want all four again", c, err)
	}
}
