package persistence

import (
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// testCompactAll checks that a full compaction keeps the newest snapshot
// and the merged balance, and that the store goes on after it.
func testCompactAll(t *testing.T, h *harness) {
	ctx := t.Context()
	inv := kassatest.NewInvoice("inv_1", "s1", t0)
	commit(t, h.db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 1, []byte("e1"))
		b.PutInvoice(inv, nil, 1)
		b.PutTransaction(topUp("s1", 500, t0))
	})
	next := *inv
	next.Status = kassa.InvoiceExpired
	next.UpdatedAt = t0.Add(time.Hour)
	commit(t, h.db, func(b kassa.Batch) {
		b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: inv.ID}, 2, []byte("e2"))
		b.PutInvoice(&next, inv, 2)
		b.PutTransaction(topUp("s1", 20, t0))
	})
	if err := h.db.CompactAll(ctx); err != nil {
		t.Fatalf("CompactAll: %v", err)
	}
	got, seq, err := h.db.InvoiceSnapshot(ctx, inv.ID)
	if err != nil || seq != 2 {
		t.Fatalf("InvoiceSnapshot after CompactAll = seq %d, %v; want 2", seq, err)
	}
	sameJSON(t, "invoice after CompactAll", got, &next)
	if b, err := h.db.Balance(ctx, "s1"); b != 520 || err != nil {
		t.Errorf("Balance after CompactAll = %d, %v; want 520", b, err)
	}
	h.reopen()
	if b, err := h.db.Balance(ctx, "s1"); b != 520 || err != nil {
		t.Errorf("Balance after CompactAll and reopen = %d, %v; want 520", b, err)
	}
}
