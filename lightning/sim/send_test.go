package sim_test

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
)

// TestNodeSendsPayments: the simulated service node pays as lnd does for
// the forwarder's sender: an invoice it made settles (reported to its
// handler like any payment) and is refused a second time; an invoice of
// another node finds no route; an expired one fails; every outcome is
// tracked by its hash, after a restart on the same store too.
func TestNodeSendsPayments(t *testing.T) {
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
