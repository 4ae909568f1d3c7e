package actors

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// faultyJournal is a Journal whose Commit fails while commitErr is set.
// It injects the failure only; the real journal does the rest.
type faultyJournal struct {
	kassa.Journal
	commitErr func() error
}

func (j *faultyJournal) Commit(ctx context.Context, b kassa.Batch) error {
	if j.commitErr != nil {
		if err := j.commitErr(); err != nil {
			return err
		}
	}
	return j.Journal.Commit(ctx, b)
}

var errDiskFull = errors.New("injected: no space left on device")

// TestUnsavedEventIsNotAcknowledged checks that a chain or Lightning event
// whose commit fails is reported as an error to its source and changes
// nothing, and that delivering it again once the fault is gone settles
// the invoice once; a third delivery changes nothing.
func TestUnsavedEventIsNotAcknowledged(t *testing.T) {
	for _, method := range []kassa.PaymentMethod{kassa.MethodLightning, kassa.MethodOnchain} {
		t.Run(method.String(), func(t *testing.T) {
			db := openMem(t)
			journal := &faultyJournal{Journal: db}
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) { c.Journal = journal })
			h.createStore("1", "0")
			inv := h.invoice("1000", kassa.SATS)
			deliver := func() error {
				if method == kassa.MethodLightning {
					return h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000})
				}
				return h.sys.Service.HandleChainEvent(context.Background(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: kassa.Payment{
					ID: "aa:0", TxID: "aa", Amount: 1000, Destination: inv.OnchainAddress, Confirmations: 1,
				}})
			}

			journal.commitErr = func() error { return errDiskFull }
			if err := deliver(); err == nil {
				t.Fatal("an event that was not saved was acknowledged")
			}
			if got := h.get(inv.ID); got.Status != kassa.InvoiceNew || len(got.Payments) != 0 {
				t.Fatalf("after a failed commit: %s with %d payments", got.Status, len(got.Payments))
			}
			if txs, _ := h.db.TransactionsByInvoice(context.Background(), inv.ID); len(txs) != 0 {
				t.Fatalf("after a failed commit: %d ledger lines", len(txs))
			}

			journal.commitErr = nil
			for i := range 2 {
				if err := deliver(); err != nil {
					t.Fatalf("delivery %d after the fault: %v", i+2, err)
				}
			}
			if got := h.get(inv.ID); got.Status != kassa.InvoiceSettled || len(got.Payments) != 1 || got.TotalPaid() != 1000 {
				t.Fatalf("after redelivery: %s with %d payments, %d sat", got.Status, len(got.Payments), got.TotalPaid())
			}
			if txs, _ := h.db.TransactionsByInvoice(context.Background(), inv.ID); len(txs) != 2 {
				t.Fatalf("after redelivery: %d ledger lines, want a transfer and a fee", len(txs))
			}
			if ev := h.sink.of(inv.ID); fmt.Sprint(ev) != "[New:None Processing:None Settled:None]" {
				t.Fatalf("events = %v", ev)
			}
		})
	}
}
