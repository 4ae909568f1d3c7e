package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/persistence"
)

// TestChainSurvivesRestart checks that the height, a payment still short
// of the reported depth and an event not acknowledged before a restart of
// the chain (on the same store) are all there after it: the payment goes
// on confirming, the event is delivered, and Drop still finds the
// transaction.
func TestChainSurvivesRestart(t *testing.T) {
	ctx := t.Context()
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before, err := chainsim.Open(ctx, nil, db.State("chainsim"))
	if err != nil {
		t.Fatal(err)
	}
	addr, err := before.NewAddress(ctx, nil, "inv")
	if err != nil {
		t.Fatal(err)
	}
	running, stop := context.WithCancel(ctx)
	failing := errors.New("injected: commit failed")
	if err := before.Start(running, func(context.Context, kassa.ChainEvent) error { return failing }); err != nil {
		t.Fatal(err)
	}
	txid, err := before.Pay(ctx, addr, 2500)
	if !errors.Is(err, chainsim.ErrNotRecorded) {
		t.Fatalf("Pay with a failing handler = %v, want ErrNotRecorded", err)
	}
	stop()
	if _, err := before.Mine(ctx, 2); err != nil {
		t.Fatal(err)
	}

	after, err := chainsim.Open(ctx, nil, db.State("chainsim"))
	if err != nil {
		t.Fatal(err)
	}
	if h := after.Info(ctx).Height; h != chainsim.StartHeight+2 {
		t.Errorf("height after restart = %d, want %d", h, chainsim.StartHeight+2)
	}
	var got []int32
	if err := after.Start(ctx, func(_ context.Context, ev kassa.ChainEvent) error {
		if ev.Payment.TxID == txid {
			got = append(got, ev.Payment.Confirmations)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := after.Mine(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0] != 0 || got[1] != 2 || got[2] != 3 {
		t.Errorf("confirmations delivered after restart = %v, want [0 2 3]", got)
	}
	if err := after.Drop(ctx, txid); err != nil {
		t.Errorf("Drop after restart: %v", err)
	}
}
