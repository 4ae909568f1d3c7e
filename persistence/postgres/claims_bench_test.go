package postgres

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// BenchmarkDrainBacklog drains one endpoint's backlog of b.N pending
// deliveries as a webhook actor does: claim the next, record its
// attempt under the claim. ns/op is the store's cost per delivery with
// a backlog of that size.
func BenchmarkDrainBacklog(b *testing.B) {
	ctx := context.Background()
	clock := kassatest.NewTestClock(time.Now())
	db, _ := openClocked(b, clock)
	const wh = "wh_1"
	for i := range b.N {
		d := &kassa.Delivery{ID: fmt.Sprintf("dl_%06d", i), WebhookID: wh, StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventExpired,
			Payload: []byte(`{}`), Status: kassa.DeliveryPending, CreatedAt: kassatest.Epoch}
		kassatest.Commit(b, db, func(bt kassa.Batch) { bt.PutDelivery(d, true) })
	}
	b.ResetTimer()
	for i := range b.N {
		c, ok, err := db.ClaimDelivery(ctx, wh, "node-a", 8*time.Second)
		if err != nil || !ok {
			b.Fatalf("claim %d: %v, %v", i, ok, err)
		}
		d, err := db.Delivery(ctx, c.DeliveryID)
		if err != nil {
			b.Fatal(err)
		}
		d.Status = kassa.DeliveryDelivered
		bt := db.NewBatch()
		bt.PutDelivery(d, false)
		if err := db.CommitClaimed(ctx, c, bt); err != nil {
			b.Fatal(err)
		}
	}
}
