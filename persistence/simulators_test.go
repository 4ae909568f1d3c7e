package persistence_test

// The simulated chain and Lightning node keep their state in a
// persistence.State when the service runs on Pebble: these tests run
// their contracts and restarts over it. They live in this package's test
// binary, which links Pebble anyway, so that the simulators' own test
// binaries (chain/sim, lightning/sim: their tests over memory) stay small.

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/simharness"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
)

// TestChainContractOnState runs the Chain contract on the simulated
// chain with its state in Pebble (chain/sim runs it in memory).
func TestChainContractOnState(t *testing.T) {
	kassatest.RunChain(t, func(t *testing.T) kassatest.ChainHarness {
		db, err := persistence.Open("", persistence.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		c, err := chainsim.Open(t.Context(), nil, db.State("chainsim"))
		if err != nil {
			t.Fatal(err)
		}
		return simharness.Chain(c)
	})
}

// TestLightningContractOnState runs the Lightning contract on the
// simulated node with its state in Pebble (lightning/sim runs it in
// memory).
func TestLightningContractOnState(t *testing.T) {
	kassatest.RunLightning(t, func(t *testing.T) kassatest.LightningHarness {
		db, err := persistence.Open("", persistence.Options{InMemory: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		n, err := lnsim.Open(t.Context(), nil, db.State("lnsim"))
		if err != nil {
			t.Fatal(err)
		}
		return simharness.Lightning(n)
	})
}

// TestSimulatedChainSurvivesRestart checks that the height, a payment still short
// of the reported depth and an event not acknowledged before a restart of
// the chain (on the same store) are all there after it: the payment goes
// on confirming, the event is delivered, and Drop still finds the
// transaction.
func TestSimulatedChainSurvivesRestart(t *testing.T) {
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

// errInjected is the failure of the node's event handler.
var errInjected = errors.New("injected: no space left on device")

// TestSimulatedInvoiceSurvivesRestart checks that an invoice made before a restart
// of the node (on the same store) can be paid after it, and that a
// settlement not acknowledged before the restart is delivered after it.
func TestSimulatedInvoiceSurvivesRestart(t *testing.T) {
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

// TestSimulatedNodeSendsPayments: the simulated service node pays as lnd does for
// the forwarder's sender: an invoice it made settles (reported to its
// handler like any payment) and is refused a second time; an invoice of
// another node finds no route; an expired one fails; every outcome is
// tracked by its hash, after a restart on the same store too.
func TestSimulatedNodeSendsPayments(t *testing.T) {
	ctx := t.Context()
	clock := kassatest.NewTestClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	n, err := lnsim.Open(ctx, clock, db.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	var settled []string
	if err := n.Start(ctx, func(_ context.Context, ev kassa.LightningEvent) error {
		settled = append(settled, ev.PaymentHash)
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	own, err := n.CreateInvoice(ctx, 21_000, "refund", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err := n.PayInvoice(ctx, own.PaymentRequest, 1000, time.Second)
	if err != nil || p.Status != kassa.PaymentSucceeded || p.PaymentHash != own.PaymentHash || p.FeeMSat != 0 {
		t.Fatalf("pay own invoice = %+v, %v", p, err)
	}
	if len(settled) != 1 || settled[0] != own.PaymentHash {
		t.Fatalf("settlements = %v", settled)
	}
	if _, err := n.PayInvoice(ctx, own.PaymentRequest, 1000, time.Second); kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("second payment: err = %v, want Conflict", err)
	}

	paidByAnother, err := n.CreateInvoice(ctx, 21_000, "paid", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := n.Pay(ctx, paidByAnother.PaymentRequest, 0); err != nil {
		t.Fatal(err)
	}
	if p, err := n.PayInvoice(ctx, paidByAnother.PaymentRequest, 1000, time.Second); err != nil || p.Status != kassa.PaymentFailed {
		t.Fatalf("pay an invoice someone else paid = %+v, %v", p, err)
	}

	other, err := lnsim.New(clock)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := other.CreateInvoice(ctx, 21_000, "elsewhere", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err = n.PayInvoice(ctx, foreign.PaymentRequest, 1000, time.Second)
	if err != nil || p.Status != kassa.PaymentFailed || p.Failure != "no_route" {
		t.Fatalf("pay another node's invoice = %+v, %v", p, err)
	}

	late, err := n.CreateInvoice(ctx, 21_000, "late", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(2 * time.Minute)
	p, err = n.PayInvoice(ctx, late.PaymentRequest, 1000, time.Second)
	if err != nil || p.Status != kassa.PaymentFailed {
		t.Fatalf("pay an expired invoice = %+v, %v", p, err)
	}

	if p, err := n.TrackPayment(ctx, "00"+own.PaymentHash[2:]); err != nil || p.Status != kassa.PaymentUnknown {
		t.Fatalf("track a payment never sent = %+v, %v", p, err)
	}
	if est, err := n.EstimateFee(ctx, kassa.Payee{Node: n.PubKey()}, 21_000, 1000); err != nil || est != 0 {
		t.Fatalf("estimate = %d, %v", est, err)
	}

	restarted, err := lnsim.Open(ctx, clock, db.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	for hash, want := range map[string]kassa.LightningPaymentStatus{
		own.PaymentHash: kassa.PaymentSucceeded, foreign.PaymentHash: kassa.PaymentFailed, late.PaymentHash: kassa.PaymentFailed,
	} {
		if p, err := restarted.TrackPayment(ctx, hash); err != nil || p.Status != want {
			t.Fatalf("track %s after a restart = %+v, %v; want %v", hash, p, err, want)
		}
	}
}
