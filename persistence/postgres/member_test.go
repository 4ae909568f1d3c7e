package postgres

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestExpelFreesTheMembersClaims: a member that is expelled (it left
// the cluster: killed, stalled, cut off) holds no webhook delivery any
// more, so that the node that takes its stores over sends them at once
// rather than after the claim's TTL; the expelled member can no longer
// record the attempt it may have had in flight. Before, its claims ran
// on for their TTL (8 s) and held their endpoints back.
func TestExpelFreesTheMembersClaims(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	a, b := openClocked(t, clock)
	for _, m := range []string{"lost", "taker"} {
		if err := a.Members().Join(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i, wh := range []string{"wh_1", "wh_2"} {
		d := &kassa.Delivery{ID: "dl_" + wh, WebhookID: wh, StoreID: "s1", InvoiceID: "inv_1", Type: kassa.EventExpired,
			Payload: []byte(`{}`), Status: kassa.DeliveryPending, CreatedAt: kassatest.Epoch.Add(time.Duration(i) * time.Second)}
		kassatest.Commit(t, a, func(bt kassa.Batch) { bt.PutDelivery(d, true) })
	}
	lost, ok, err := a.ClaimDelivery(ctx, "wh_1", "lost", 8*time.Second)
	if err != nil || !ok {
		t.Fatalf("the lost member's claim: %+v, %v, %v", lost, ok, err)
	}
	// Another member's claim on another endpoint stays.
	other, ok, err := a.ClaimDelivery(ctx, "wh_2", "taker", 8*time.Second)
	if err != nil || !ok {
		t.Fatalf("the other member's claim: %+v, %v, %v", other, ok, err)
	}
	if c, ok, err := b.ClaimDelivery(ctx, "wh_1", "taker", 8*time.Second); err != nil || ok {
		t.Fatalf("a claim held by a member in the cluster was taken: %+v, %v, %v", c, ok, err)
	}
	if err := b.Members().Expel(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	c, ok, err := b.ClaimDelivery(ctx, "wh_1", "taker", 8*time.Second)
	if err != nil || !ok || c.DeliveryID != "dl_wh_1" {
		t.Fatalf("after the expel, the lost member's delivery is still held: %+v, %v, %v", c, ok, err)
	}
	if c, ok, err := a.ClaimDelivery(ctx, "wh_2", "lost", 8*time.Second); err != nil || ok {
		t.Errorf("the expel freed another member's claim: %+v, %v, %v", c, ok, err)
	}
	// The lost member, should it wake, cannot record its attempt.
	d, err := a.Delivery(ctx, lost.DeliveryID)
	if err != nil {
		t.Fatal(err)
	}
	d.Status = kassa.DeliveryDelivered
	bt := a.NewBatch()
	bt.PutDelivery(d, false)
	if err := a.CommitClaimed(ctx, lost, bt); err == nil {
		t.Error("the expelled member recorded the attempt of a claim it no longer holds")
	}
}

// TestExpelFreesTheMembersExpiryClaims: the deadlines an expelled member
// claimed (its sweeper fires invoices early, so that their timers arm on
// its node) are free at once for the others' sweepers, whose next round
// fires them: the timers died with the member. Before, they waited for
// the claims to run out, up to Grace past each deadline (2 min 5 s from
// the claim before that), so invoices due while a killed cluster came
// back expired late.
func TestExpelFreesTheMembersExpiryClaims(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	a, b := openClocked(t, clock)
	for _, m := range []string{"lost", "taker"} {
		if err := a.Members().Join(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		kassatest.Commit(t, a, func(bt kassa.Batch) { bt.PutInvoice(inv, nil, 1) })
	}
	until := kassatest.Epoch.Add(time.Hour) // all four are due before
	if got, err := a.ClaimOverdue(ctx, "lost", until, 5*time.Second, 2); err != nil || len(got) != 2 {
		t.Fatalf("the lost member's claims: %v, %v", got, err)
	}
	if got, err := a.ClaimOverdue(ctx, "taker", until, 5*time.Second, 1); err != nil || len(got) != 1 || got[0].InvoiceID != "inv_2" {
		t.Fatalf("the other member's claim: %v, %v", got, err)
	}
	if err := b.Members().Expel(ctx, "lost"); err != nil {
		t.Fatal(err)
	}
	ids := claimedIDs(t, b, "taker", until)
	// inv_0 and inv_1 were the lost member's, inv_3 nobody's; inv_2's
	// claim is the taker's own and still runs.
	if want := []string{"inv_0", "inv_1", "inv_3"}; !slices.Equal(ids, want) {
		t.Errorf("after the expel the taker claimed %v, want %v", ids, want)
	}
}

// TestFreeDeadlineClaimsExcept: a cluster killed whole comes back with
// new members only; the claims of the old ones' sweepers are freed, the
// members' own claims kept, and a claim that already ran out is left as
// it is (nothing to free).
func TestFreeDeadlineClaimsExcept(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	a, b := openClocked(t, clock)
	for i := range 4 {
		inv := kassatest.NewInvoice(fmt.Sprintf("inv_%d", i), "s1", kassatest.Epoch.Add(time.Duration(i)*time.Second))
		kassatest.Commit(t, a, func(bt kassa.Batch) { bt.PutInvoice(inv, nil, 1) })
	}
	until := kassatest.Epoch.Add(time.Hour)
	for _, c := range []struct {
		holder string
		n      int
	}{{"old-1", 1}, {"member", 1}, {"old-2", 1}} {
		if got, err := a.ClaimOverdue(ctx, c.holder, until, 5*time.Second, c.n); err != nil || len(got) != c.n {
			t.Fatalf("%s's claims: %v, %v", c.holder, got, err)
		}
	}
	n, err := b.Members().FreeDeadlineClaimsExcept(ctx, []string{"member", "other"})
	if err != nil || n != 2 {
		t.Fatalf("freed %d, %v; want the 2 claims of old-1 and old-2", n, err)
	}
	ids := claimedIDs(t, b, "other", until)
	// inv_0 was old-1's, inv_2 old-2's, inv_3 nobody's; inv_1's claim
	// is a member's and still runs.
	if want := []string{"inv_0", "inv_2", "inv_3"}; !slices.Equal(ids, want) {
		t.Errorf("after the free, another member claimed %v, want %v", ids, want)
	}
	if n, err := b.Members().FreeDeadlineClaimsExcept(ctx, []string{"member", "other"}); err != nil || n != 0 {
		t.Errorf("a second free freed %d, %v; want 0", n, err)
	}
}

// claimedIDs claims for holder every invoice due before until that no
// live claim holds, and returns their ids in order.
func claimedIDs(t *testing.T, db *DB, holder string, until time.Time) []string {
	t.Helper()
	got, err := db.ClaimOverdue(t.Context(), holder, until, 5*time.Second, 10)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, o := range got {
		ids = append(ids, o.InvoiceID)
	}
	slices.Sort(ids)
	return ids
}
