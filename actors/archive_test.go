package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestArchiveAndOwnTermsSurviveARestart: an invoice made with its own
// confirmations and expiry, then archived, keeps all three after the
// process restarts, and its payment settles it by its own
// confirmations.
func TestArchiveAndOwnTermsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0") // 1 confirmation
	ctx := context.Background()
	three := int32(3)
	inv, err := h.sys.Service.CreateInvoice(ctx, h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS,
		ConfirmationsRequired: &three, Expiry: 2 * time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	if inv.ConfirmationsRequired != 3 || !inv.ExpiresAt.Equal(inv.CreatedAt.Add(2*time.Hour)) {
		t.Fatalf("created with %d confirmations, expiring %s", inv.ConfirmationsRequired, inv.ExpiresAt)
	}
	if _, err := h.sys.Service.ArchiveInvoice(ctx, "another_store", inv.ID); kassa.ErrorCode(err) != kassa.NotFound {
		t.Errorf("archived through another store: %v", err)
	}
	out, err := h.sys.Service.ArchiveInvoice(ctx, h.store.ID, inv.ID)
	if err != nil || !out.Archived {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	if again, err := h.sys.Service.ArchiveInvoice(ctx, h.store.ID, inv.ID); err != nil || !again.Archived {
		t.Fatalf("archive again: %v", err)
	}

	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	if _, err := h2.sys.Runtime.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	h2.pay(inv, 1000, 2, "tx1")
	if got := h2.get(inv.ID); got.Status != kassa.InvoiceProcessing || !got.Archived {
		t.Fatalf("at 2 of its 3 confirmations: %s, archived %v", got.Status, got.Archived)
	}
	h2.pay(inv, 1000, 3, "tx1")
	if got := h2.get(inv.ID); got.Status != kassa.InvoiceSettled || !got.Archived || !got.ExpiresAt.Equal(inv.ExpiresAt) {
		t.Errorf("at its 3 confirmations: %s, archived %v, expires %s", got.Status, got.Archived, got.ExpiresAt)
	}
}
