package actors

import (
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/refund"
)

// payoutHarness runs the forwarder over real actors, with the refund
// service wired to it as kassa serve wires them: the forward actors pay
// approved payouts on the store's way out, the one sender.
type payoutHarness struct {
	*forwardHarness
	customer *merchant
	refunds  *refund.Service
}

func newPayoutHarness(t *testing.T, configure ...func(*ForwarderConfig)) *payoutHarness {
	t.Helper()
	shop, customer := newMerchant(t), newMerchant(t)
	return newPayoutHarnessWith(t, kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), shop, customer, lnsim.NewPayer(shop.node, customer.node), configure...)
}

// newPayoutHarnessWith is a payout harness over in-memory Pebble whose
// forwarder pays with payer (configure may change its config), with the
// shop's store made and topped up by 100,000 sat.
func newPayoutHarnessWith(t *testing.T, clock *kassatest.TestClock, shop, customer *merchant, payer *lnsim.Payer, configure ...func(*ForwarderConfig)) *payoutHarness {
	t.Helper()
	fh := newForwardHarness(t, openMem(t), clock, shop, payer, configure...)
	fh.createStore()
	if _, err := fh.sys.Service.TopUp(context.Background(), fh.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	return payoutsOf(fh, customer)
}

// payoutsOf is the payout harness over fh: its refund service tells
// fh's forwarder of approvals, which pays them.
func payoutsOf(fh *forwardHarness, customer *merchant) *payoutHarness {
	h := &payoutHarness{forwardHarness: fh, customer: customer}
	h.refunds = h.refundService(fh.fwd)
	fh.fwd.PayPayouts(h.refunds)
	return h
}

// newSimNodePayoutHarness is a payout harness whose forwarder pays with
// the simulated service node (kassa serve --lightning sim), returned
// too.
func newSimNodePayoutHarness(t *testing.T) (*payoutHarness, *lnsim.Node) {
	t.Helper()
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	node, err := lnsim.New(clock)
	if err != nil {
		t.Fatal(err)
	}
	shop, customer := newMerchant(t), newMerchant(t)
	return newPayoutHarnessWith(t, clock, shop, customer, lnsim.NewPayer(), func(c *ForwarderConfig) { c.Payer = node }), node
}

// retried lets the forwarder try its payouts n times more, each time
// on the retry it arms.
func (h *payoutHarness) retried(n int) {
	h.t.Helper()
	for range n {
		kassatest.WaitFor(h.t, 5*time.Second, "a retry armed", func() bool { return h.clock.Pending() > 0 })
		h.clock.AdvanceToNext()
	}
}

// paidOnceOnRetry is payout id once its next retry is due: completed,
// the customer paid once.
func (h *payoutHarness) paidOnceOnRetry(id string) {
	h.t.Helper()
	h.clock.Advance(time.Hour)
	done := h.waitFinal(id)
	if done.State != kassa.PayoutCompleted || len(h.customer.paid()) != 1 {
		h.t.Fatalf("payout %+v, customer paid %v", done, h.customer.paid())
	}
}

// refundService is the refund service of h's actors; sender (nil: none)
// is told of approvals.
func (h *payoutHarness) refundService(sender refund.Sender) *refund.Service {
	return refund.New(refund.Config{Reader: h.db, Payouts: h.db, Ledger: h.sys.Service, Rates: fixedRates{}, Clock: h.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}, Sender: sender})
}

func (h *payoutHarness) balance() kassa.Sats {
	h.t.Helper()
	b, err := h.db.Balance(context.Background(), h.store.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return b
}

// approved claims amount sats of a new pull payment for dest and has
// svc approve it.
func (h *payoutHarness) approved(svc *refund.Service, dest string, amount int64) *kassa.Payout {
	h.t.Helper()
	ctx := context.Background()
	pp, err := svc.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(amount), Currency: kassa.SATS})
	if err != nil {
		h.t.Fatal(err)
	}
	p, err := svc.Claim(ctx, pp.ID, dest, decimal.Zero)
	if err != nil {
		h.t.Fatal(err)
	}
	if p, err = svc.Approve(ctx, h.store.ID, p.ID); err != nil {
		h.t.Fatal(err)
	}
	return p
}

// eventuallyBalance waits for the store's balance to be want: a payout
// is seen final as soon as its batch is written, and the balance the
// batch changes a moment later, once the commit returns.
func (h *payoutHarness) eventuallyBalance(want kassa.Sats) {
	h.t.Helper()
	var got kassa.Sats
	kassatest.WaitFor(h.t, 5*time.Second, "the balance to settle", func() bool {
		got = h.balance()
		return got == want
	})
}

func (h *payoutHarness) waitFinal(id string) *kassa.Payout {
	h.t.Helper()
	var p *kassa.Payout
	eventually(h.t, "payout "+id+" to end", func() bool {
		var err error
		p, err = h.db.Payout(context.Background(), id)
		return err == nil && p.State.Final()
	})
	return p
}

// TestPayoutToLightningAddressIsPaidOnce: an approved payout to a
// Lightning address is paid by the forwarder's sender: the customer's
// invoice is paid once, the payout completes with its payment hash, and
// the balance is debited by the payout alone (the simulated route costs
// nothing: the fee limit comes back).
func TestPayoutToLightningAddressIsPaidOnce(t *testing.T) {
	h := newPayoutHarness(t)
	before := h.balance()
	p := h.approved(h.refunds, h.customer.address(), 20_000)
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted || done.PaymentHash == "" || done.MarkedPaid {
		t.Fatalf("payout %+v", done)
	}
	paid := h.customer.paid()
	if len(paid) != 1 || paid[0] != done.PaymentHash {
		t.Fatalf("customer invoices paid %v, payout hash %s", paid, done.PaymentHash)
	}
	h.eventuallyBalance(before - 20_000)
	if h.payer.Sent() != 1 {
		t.Fatalf("%d payments sent, want 1", h.payer.Sent())
	}
}

// TestPayoutToBOLT11IsPaid: a payout to the customer's own invoice pays
// that invoice.
func TestPayoutToBOLT11IsPaid(t *testing.T) {
	h := newPayoutHarness(t)
	li, err := h.customer.node.CreateInvoice(context.Background(), 7_000_000, "refund", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p := h.approved(h.refunds, li.PaymentRequest, 10_000)
	if p.Amount != 7000 {
		t.Fatalf("payout of %d sat, want the invoice's 7000", p.Amount)
	}
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted || done.PaymentHash != li.PaymentHash {
		t.Fatalf("payout %+v", done)
	}
	if _, ok := h.customer.node.Preimage(li.PaymentHash); !ok {
		t.Fatal("the customer's invoice is not paid")
	}
}

// TestPayoutWithoutRouteFailsWithTheMoneyBack: a payment that finds no
// route within the fee limit ends the payout Failed, says why, and
// gives the balance and the pull payment back.
func TestPayoutWithoutRouteFailsWithTheMoneyBack(t *testing.T) {
	h := newPayoutHarness(t)
	h.payer.Fee = func(amount kassa.MSat) kassa.MSat { return amount } // dearer than any limit
	before := h.balance()
	p := h.approved(h.refunds, h.customer.address(), 20_000)
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutFailed || done.LastError == "" {
		t.Fatalf("payout %+v", done)
	}
	h.eventuallyBalance(before) // the debit credited back
	pp, err := h.db.PullPayment(context.Background(), p.PullPaymentID)
	if err != nil || !pp.Claimed.IsZero() {
		t.Fatalf("pull payment after the failure: %+v, %v", pp, err)
	}
	if len(h.customer.paid()) != 0 {
		t.Fatal("the customer was paid")
	}
}

// TestRecordedPayoutIsLookedUpBeforeItIsSent: after a restart, a payout
// whose attempt was recorded is looked up first: one the node paid
// before the crash completes without a second payment; one the node
// never sent is sent, once.
func TestRecordedPayoutIsLookedUpBeforeItIsSent(t *testing.T) {
	h := newPayoutHarness(t)
	ctx := context.Background()
	quiet := h.refundService(nil) // approves without telling the sender, as before a crash
	for _, sentBeforeCrash := range []bool{true, false} {
		li, err := h.customer.node.CreateInvoice(ctx, 3_000_000, "refund", time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p := h.approved(quiet, li.PaymentRequest, 3000)
		if _, err := quiet.Record(ctx, h.store.ID, p.ID, kassa.PayoutAttempt{PaymentRequest: li.PaymentRequest, PaymentHash: li.PaymentHash, At: h.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		sent := h.payer.Sent()
		if sentBeforeCrash {
			if _, err := h.payer.PayInvoice(ctx, li.PaymentRequest, 0, time.Second); err != nil {
				t.Fatal(err)
			}
			sent++
		}
		if _, err := h.fwd.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		done := h.waitFinal(p.ID)
		if done.State != kassa.PayoutCompleted {
			t.Fatalf("sent before the crash %v: payout %+v", sentBeforeCrash, done)
		}
		want := sent
		if !sentBeforeCrash {
			want++
		}
		if h.payer.Sent() != want {
			t.Fatalf("sent before the crash %v: %d payments, want %d", sentBeforeCrash, h.payer.Sent(), want)
		}
	}
}

// TestApprovedPayoutSurvivesARestart: the process stops right after an
// approval and right after an attempt was recorded (before its answer
// was recorded); on the next start the forwarder pays the one and looks
// up the other, and each payout is paid once with the balance debited
// once.
func TestApprovedPayoutSurvivesARestart(t *testing.T) {
	dir := t.TempDir()
	shop, customer := newMerchant(t), newMerchant(t)
	payer := lnsim.NewPayer(shop.node, customer.node)
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	db := openDir(t, dir)
	fh := newForwardHarness(t, db, clock, shop, payer)
	fh.createStore()
	h := &payoutHarness{forwardHarness: fh, customer: customer}
	ctx := context.Background()
	if _, err := fh.sys.Service.TopUp(ctx, fh.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	quiet := h.refundService(nil) // no sender: the process dies before it pays
	approved := h.approved(quiet, customer.address(), 10_000)
	li, err := customer.node.CreateInvoice(ctx, 4_000_000, "refund", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	sent := h.approved(quiet, li.PaymentRequest, 4000)
	if _, err := quiet.Record(ctx, fh.store.ID, sent.ID, kassa.PayoutAttempt{PaymentRequest: li.PaymentRequest, PaymentHash: li.PaymentHash, At: clock.Now()}); err != nil {
		t.Fatal(err)
	}
	if _, err := payer.PayInvoice(ctx, li.PaymentRequest, 0, time.Second); err != nil { // sent; its answer is lost
		t.Fatal(err)
	}
	before := h.balance()
	fh.fwd.Shutdown()
	db = reopen(t, fh.harness, db, dir)
	t.Cleanup(func() { db.Close() })

	again := newForwardHarness(t, db, clock, shop, payer)
	again.store = fh.store
	h2 := payoutsOf(again, customer)
	if _, err := again.fwd.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{approved.ID, sent.ID} {
		if p := h2.waitFinal(id); p.State != kassa.PayoutCompleted {
			t.Fatalf("payout %s after the restart: %+v", id, p)
		}
	}
	if n := payer.Sent(); n != 2 {
		t.Fatalf("%d payments sent, want 2: one per payout", n)
	}
	if paid := customer.paid(); len(paid) != 1 { // the Lightning address's invoices
		t.Fatalf("customer's address invoices paid: %v", paid)
	}
	if _, ok := customer.node.Preimage(li.PaymentHash); !ok {
		t.Fatal("the customer's own invoice is not paid")
	}
	// Both fee limits come back (the simulated routes cost nothing); the
	// amounts stay debited, once.
	want := before + approved.FeeLimit + sent.FeeLimit
	h2.eventuallyBalance(want)
}
