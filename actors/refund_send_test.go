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

func newPayoutHarness(t *testing.T) *payoutHarness {
	t.Helper()
	shop, customer := newMerchant(t), newMerchant(t)
	payer := lnsim.NewPayer(shop.node, customer.node)
	fh := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), shop, payer)
	fh.createStore()
	h := &payoutHarness{forwardHarness: fh, customer: customer}
	h.refunds = h.refundService(fh.fwd)
	fh.fwd.PayPayouts(h.refunds)
	if _, err := fh.sys.TopUp(context.Background(), fh.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	return h
}

// refundService is the refund service of h's actors; sender (nil: none)
// is told of approvals.
func (h *payoutHarness) refundService(sender refund.Sender) *refund.Service {
	return refund.New(refund.Config{Reader: h.db, Payouts: h.db, Ledger: h.sys, Rates: fixedRates{}, Clock: h.clock,
		Net: &chaincfg.RegressionNetParams, Sender: sender})
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
	if got := h.balance(); got != before-20_000 {
		t.Fatalf("balance = %d, want %d", got, before-20_000)
	}
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
	if got := h.balance(); got != before {
		t.Fatalf("balance = %d, want %d: the debit credited back", got, before)
	}
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
