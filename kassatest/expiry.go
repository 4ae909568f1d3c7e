package kassatest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// RunExpiryClaims runs the contract of kassa.ExpiryClaims on one handle:
// a due invoice is claimed once while its claim runs and again after it
// ran out, or at once when its deadline changed; one not yet due, a
// settled one, an expired one (which waits for the end of its
// monitoring) and one whose deadline moved later are not. A claim taken
// before the deadline runs until ttl past the deadline, not past the
// claim. open returns a fresh store whose clock is clock; Pebble (one
// node, whose sweeper always wins its claims) and PostgreSQL run it.
func RunExpiryClaims(t *testing.T, open func(t *testing.T, clock kassa.Clock) (kassa.Journal, kassa.ExpiryClaims)) {
	ctx := t.Context()
	clock := NewTestClock(Epoch)
	j, claims := open(t, clock)
	put := func(inv, prev *kassa.Invoice, seq uint64) {
		t.Helper()
		Commit(t, j, func(b kassa.Batch) { b.PutInvoice(inv, prev, seq) })
	}
	// inv_0 … inv_5, created a second apart: due 15 min later.
	invs := make([]*kassa.Invoice, 6)
	for i := range invs {
		invs[i] = NewInvoice(fmt.Sprintf("inv_%d", i), fmt.Sprintf("s%d", i%2), Epoch.Add(time.Duration(i)*time.Second))
		put(invs[i], nil, 1)
	}
	// inv_1 settles, inv_2 expires (its next deadline is the end of its
	// monitoring, a day later), inv_3's deadline moves an hour later.
	change := func(i int, f func(inv *kassa.Invoice)) {
		next := *invs[i]
		f(&next)
		put(&next, invs[i], 2)
		invs[i] = &next
	}
	change(1, func(inv *kassa.Invoice) { inv.Status = kassa.InvoiceSettled })
	change(2, func(inv *kassa.Invoice) { inv.Status = kassa.InvoiceExpired })
	change(3, func(inv *kassa.Invoice) { inv.ExpiresAt = inv.ExpiresAt.Add(time.Hour) })

	claim := func(overdue time.Time, limit int, want ...string) {
		t.Helper()
		got, err := claims.ClaimOverdue(ctx, "node-a", overdue, 10*time.Second, limit)
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, o := range got {
			ids = append(ids, o.InvoiceID)
			i := slices.IndexFunc(invs, func(inv *kassa.Invoice) bool { return inv.ID == o.InvoiceID })
			if i < 0 || o.StoreID != invs[i].StoreID || !o.Deadline.Equal(invs[i].ExpiresAt) {
				t.Errorf("claimed %+v, want store %s and deadline %v", o, invs[i].StoreID, invs[i].ExpiresAt)
			}
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("ClaimOverdue(%v, limit %d) = %v, want %v", overdue.Sub(Epoch), limit, ids, want)
		}
	}
	due := Epoch.Add(15 * time.Minute)
	claim(due, 10) // inv_0's deadline is not before due
	clock.Advance(due.Add(10 * time.Second).Sub(clock.Now()))
	overdue := clock.Now().Add(-5 * time.Second) // inv_0 … inv_4 are overdue, inv_5 is not
	claim(overdue, 1, "inv_0")
	claim(overdue, 10, "inv_4")
	claim(overdue, 10) // the claims still run
	clock.Advance(10 * time.Second)
	claim(overdue, 10, "inv_0", "inv_4")
	claim(clock.Now(), 10, "inv_5")
	// A claim holds one deadline: inv_5's, moved a second earlier while
	// its claim runs, is claimed again.
	change(5, func(inv *kassa.Invoice) { inv.ExpiresAt = inv.ExpiresAt.Add(-time.Second) })
	claim(clock.Now(), 10, "inv_5")

	// inv_6, due in a minute, claimed now: its claim runs until 10 s
	// past its deadline, not 10 s past now (a node killed after the
	// early claim leaves the deadline to the others that soon).
	inv6 := NewInvoice("inv_6", "s0", clock.Now().Add(time.Minute-15*time.Minute))
	put(inv6, nil, 1)
	invs = append(invs, inv6)
	claimed6 := func(at time.Duration) bool {
		t.Helper()
		clock.Advance(inv6.ExpiresAt.Add(at).Sub(clock.Now()))
		got, err := claims.ClaimOverdue(ctx, "node-b", inv6.ExpiresAt.Add(time.Millisecond), 10*time.Second, 100)
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(got, func(o kassa.OverdueInvoice) bool { return o.InvoiceID == "inv_6" })
	}
	if !claimed6(-time.Minute) {
		t.Fatal("inv_6 not claimed a minute before its deadline")
	}
	if claimed6(10*time.Second - time.Millisecond) {
		t.Error("inv_6's early claim ran out before 10 s past its deadline")
	}
	if !claimed6(10 * time.Second) {
		t.Error("inv_6's early claim still runs 10 s past its deadline")
	}
}
