package sim_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
)

// errInjected is the failure of the node's event handler.
var errInjected = errors.New("injected: no space left on device")

// TestInvoiceSurvivesRestart checks that an invoice made before a restart
// of the node (on the same store) can be paid after it, and that a
// settlement not acknowledged before the restart is delivered after it.
func TestInvoiceSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before, err := lnsim.Open(ctx, nil, db.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	open, err := before.CreateInvoice(ctx, 5000, "open", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	unacked, err := before.CreateInvoice(ctx, 7000, "unacked", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	running, stop := context.WithCancel(ctx)
	if err := before.Start(running, func(context.Context, kassa.LightningEvent) error { return errInjected }); err != nil {
		t.Fatal(err)
	}
	if _, err := before.Pay(ctx, unacked.PaymentRequest, 0); !errors.Is(err, lnsim.ErrNotRecorded) {
		t.Fatalf("Pay with a failing handler = %v", err)
	}
	stop()

	after, err := lnsim.Open(ctx, nil, db.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	if after.PubKey() != before.PubKey() {
		t.Fatal("the node has a new key after the restart")
	}
	got := make(chan kassa.LightningEvent, 4)
	if err := after.Start(ctx, func(_ context.Context, ev kassa.LightningEvent) error { got <- ev; return nil }); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Pay(ctx, open.PaymentRequest, 0); err != nil {
		t.Fatalf("Pay of an invoice made before the restart: %v", err)
	}
	want := []string{unacked.PaymentHash, open.PaymentHash}
	for i, hash := range want {
		select {
		case ev := <-got:
			if ev.PaymentHash != hash {
				t.Errorf("settlement %d is %s, want %s", i, ev.PaymentHash, hash)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("settlement %d never delivered", i)
		}
	}
	if _, ok := after.Preimage(unacked.PaymentHash); !ok {
		t.Error("no preimage for the invoice settled before the restart")
	}
}
