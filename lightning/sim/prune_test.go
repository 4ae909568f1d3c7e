package sim

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestClosedInvoicesLeaveMemory checks that a node made by New keeps in
// memory only its open invoices: settled, cancelled and expired ones
// leave, and a payment to one of them is still refused with the right
// error.
func TestClosedInvoicesLeaveMemory(t *testing.T) {
	n, _, clock := started(t)
	ctx := context.Background()
	settled := create(t, n, 1000, "settled", time.Hour)
	cancelled := create(t, n, 1000, "cancelled", time.Hour)
	expired := create(t, n, 1000, "expired", time.Minute)
	open := create(t, n, 1000, "open", 24*time.Hour)
	if _, err := n.Pay(ctx, settled.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	if err := n.CancelInvoice(ctx, cancelled.PaymentHash); err != nil {
		t.Fatal(err)
	}
	if got := n.invoiceCount(ctx); got != 2 {
		t.Errorf("%d invoices in memory after a settle and a cancel, want 2", got)
	}
	clock.Advance(2 * sweepInterval)
	create(t, n, 1000, "sweeps", time.Hour) // a create sweeps the expired
	if got := n.invoiceCount(ctx); got != 2 {
		t.Errorf("%d invoices in memory after the sweep, want 2 (the open ones)", got)
	}
	for _, c := range []struct {
		request string
		want    error
	}{
		{settled.PaymentRequest, ErrInvoiceAlreadyPaid},
		{cancelled.PaymentRequest, ErrInvoiceCancelled},
		{expired.PaymentRequest, ErrInvoiceExpired},
	} {
		if _, err := n.Pay(ctx, c.request, 0); !errors.Is(err, c.want) {
			t.Errorf("Pay of a closed invoice = %v, want %v", err, c.want)
		}
	}
	if _, ok := n.Preimage(settled.PaymentHash); !ok {
		t.Error("no preimage for the settled invoice once it left memory")
	}
	if _, err := n.Pay(ctx, open.PaymentRequest, 0); err != nil {
		t.Errorf("Pay of the open invoice: %v", err)
	}
}

func TestClosedSetIsBounded(t *testing.T) {
	s := newClosedSet()
	for i := range closedKeep + 500 {
		s.add(string(rune(i)), closedInvoice{state: closedSettled})
	}
	if len(s.byHash) != closedKeep || len(s.order) != closedKeep {
		t.Errorf("closed set holds %d (%d in order), want %d", len(s.byHash), len(s.order), closedKeep)
	}
	if _, ok := s.byHash[string(rune(0))]; ok {
		t.Error("the oldest closed invoice was kept")
	}
}

// invoiceCount is the number of invoices a node holds in its store.
func (n *Node) invoiceCount(ctx context.Context) int {
	count := 0
	_ = n.store.Scan(ctx, keyInvoicePrefix, func(string, []byte) error { count++; return nil })
	return count
}
