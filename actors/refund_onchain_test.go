package actors

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/refund"
)

// customerAddress is the regtest address on-chain refunds go to.
const customerAddress = "bcrt1qw508d6qejxtdg4y5r3zarvary0c5xw7kygt080"

// simWallet is the simulated chain as the service's wallet, counting
// what the sender asks of it and failing a call on demand (the node
// down): the chain itself is real.
type simWallet struct {
	*chainsim.Chain
	mu        sync.Mutex
	funded    int
	published []string // txids, one a call
	down      bool     // every call is Unavailable
	noPublish bool     // PublishTx is Unavailable
	sendable  kassa.Sats
}

var errWalletDown = kassa.Errorf(kassa.Unavailable, "lnd is down")

func (w *simWallet) FundTx(ctx context.Context, key, address string, amount kassa.Sats) (kassa.OnchainTx, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.down {
		return kassa.OnchainTx{}, errWalletDown
	}
	w.funded++
	return w.Chain.FundTx(ctx, key, address, amount)
}

func (w *simWallet) PublishTx(ctx context.Context, raw, txid string) error {
	w.mu.Lock()
	if w.down || w.noPublish {
		w.mu.Unlock()
		return errWalletDown
	}
	w.published = append(w.published, txid)
	w.mu.Unlock()
	return w.Chain.PublishTx(ctx, raw, txid)
}

func (w *simWallet) setDown(down bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.down = down
}

func (w *simWallet) counts() (funded int, published []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.funded, append([]string(nil), w.published...)
}

func (w *simWallet) LightningSendable(context.Context) (kassa.Sats, error) { return w.sendable, nil }

// onchainHarness is payoutHarness with the simulated chain as wallet;
// paid collects the chain's payments to customerAddress by txid.
type onchainHarness struct {
	*payoutHarness
	wallet *simWallet
	mu     sync.Mutex
	paid   map[string]kassa.Sats
}

func newOnchainHarness(t *testing.T) *onchainHarness {
	t.Helper()
	clock := kassatest.NewTestClock(time.Unix(1_700_000_000, 0))
	h := &onchainHarness{wallet: &simWallet{Chain: chainsim.New(clock), sendable: kassa.MaxSats}, paid: map[string]kassa.Sats{}}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := h.wallet.Start(ctx, func(_ context.Context, ev kassa.ChainEvent) error {
		if ev.Address == customerAddress && ev.Payment.Confirmations == 0 {
			h.mu.Lock()
			defer h.mu.Unlock()
			if _, dup := h.paid[ev.Payment.TxID]; dup {
				t.Errorf("transaction %s reported twice", ev.Payment.TxID)
			}
			h.paid[ev.Payment.TxID] = ev.Payment.Amount
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	shop := newMerchant(t)
	fh := newForwardHarness(t, openMem(t), clock, shop, nil, func(c *ForwarderConfig) {
		c.Payer = nil
		c.Wallet = h.wallet
		c.TrackEvery = 20 * time.Millisecond
	})
	fh.createStore()
	h.payoutHarness = &payoutHarness{forwardHarness: fh}
	h.refunds = h.onchainRefunds(fh.fwd)
	fh.fwd.PayPayouts(h.refunds)
	if _, err := fh.sys.Service.TopUp(ctx, fh.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	return h
}

// onchainRefunds is the refund service over h's wallet; sender (nil:
// none) is told of approvals.
func (h *onchainHarness) onchainRefunds(sender refund.Sender) *refund.Service {
	return refund.New(refund.Config{Reader: h.db, Payouts: h.db, Ledger: h.sys.Service, Rates: fixedRates{}, Clock: h.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}, Sender: sender, Funds: h.wallet})
}

func (h *onchainHarness) payments() map[string]kassa.Sats {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]kassa.Sats{}
	for k, v := range h.paid {
		out[k] = v
	}
	return out
}

// refundLines sums the store's payout lines by type.
func (h *onchainHarness) payoutLines() map[kassa.TransactionType]kassa.Sats {
	h.t.Helper()
	sums := map[kassa.TransactionType]kassa.Sats{}
	_, err := h.db.Transactions(context.Background(), h.store.ID, kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		switch tx.Type {
		case kassa.TransactionRefund, kassa.TransactionNetworkFee, kassa.TransactionRefundReturned:
			sums[tx.Type] += tx.Amount
		}
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return sums
}

// TestOnchainPayoutIsFundedRecordedThenPublished: an approved on-chain
// payout is paid by one transaction of the wallet, recorded on the
// payout before it was published; the balance loses the amount and the
// transaction's fee, each in its line, and the unused fee limit comes
// back.
func TestOnchainPayoutIsFundedRecordedThenPublished(t *testing.T) {
	h := newOnchainHarness(t)
	before := h.balance()
	p := h.approved(h.refunds, customerAddress, 30_000)
	if p.FeeLimit != 2*chainsim.SimulatedNetworkFee {
		t.Fatalf("fee limit %d, want twice the estimate", p.FeeLimit)
	}
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted || done.TxID == "" || done.RawTx == "" || done.NetworkFee != chainsim.SimulatedNetworkFee {
		t.Fatalf("payout %+v", done)
	}
	if paid := h.payments(); len(paid) != 1 || paid[done.TxID] != 30_000 {
		t.Fatalf("the chain's payments to the customer %v, want one of 30000 in %s", paid, done.TxID)
	}
	h.eventuallyBalance(before - 30_000 - chainsim.SimulatedNetworkFee)
	lines := h.payoutLines()
	if lines[kassa.TransactionRefund] != 30_000 || lines[kassa.TransactionNetworkFee]-lines[kassa.TransactionRefundReturned] != chainsim.SimulatedNetworkFee {
		t.Fatalf("payout lines %v", lines)
	}
}

// TestRecordedTransactionIsPublishedAgainAfterARestart: a transaction
// recorded before a crash is published after it, that same one: never
// funded anew, and paid once whether or not it was published before the
// crash.
func TestRecordedTransactionIsPublishedAgainAfterARestart(t *testing.T) {
	h := newOnchainHarness(t)
	ctx := context.Background()
	quiet := h.onchainRefunds(nil) // approves without telling the sender: the process dies
	for _, publishedBeforeCrash := range []bool{false, true} {
		p := h.approved(quiet, customerAddress, 5_000)
		tx, err := h.wallet.Chain.FundTx(ctx, p.ID, customerAddress, p.Amount)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := quiet.Record(ctx, h.store.ID, p.ID, kassa.PayoutAttempt{RawTx: tx.Raw, TxID: tx.TxID, Fee: tx.Fee, At: h.clock.Now()}); err != nil {
			t.Fatal(err)
		}
		if publishedBeforeCrash {
			if err := h.wallet.Chain.PublishTx(ctx, tx.Raw, tx.TxID); err != nil {
				t.Fatal(err)
			}
		}
		fundedBefore, _ := h.wallet.counts()
		if _, err := h.fwd.Recover(ctx); err != nil {
			t.Fatal(err)
		}
		done := h.waitFinal(p.ID)
		if done.State != kassa.PayoutCompleted || done.TxID != tx.TxID {
			t.Fatalf("published before the crash %v: payout %+v, want completed by %s", publishedBeforeCrash, done, tx.TxID)
		}
		if funded, _ := h.wallet.counts(); funded != fundedBefore {
			t.Fatalf("published before the crash %v: the sender funded %d new transactions", publishedBeforeCrash, funded-fundedBefore)
		}
		if amount := h.payments()[tx.TxID]; amount != 5_000 {
			t.Fatalf("published before the crash %v: the chain paid %d in %s", publishedBeforeCrash, amount, tx.TxID)
		}
	}
	if n := len(h.payments()); n != 2 {
		t.Fatalf("%d payments to the customer, want 2", n)
	}
}

// TestOnchainPayoutWaitsForTheWallet: a payout approved while lnd goes
// down is funded once lnd is back; one whose transaction was recorded
// is published, that same one, once lnd answers again.
func TestOnchainPayoutWaitsForTheWallet(t *testing.T) {
	h := newOnchainHarness(t)
	before := h.balance()
	h.wallet.setDown(true)
	p := h.approved(h.refunds, customerAddress, 7_000)
	kassatest.WaitFor(t, 5*time.Second, "a funding attempt to fail", func() bool {
		got, err := h.db.Payout(context.Background(), p.ID)
		return err == nil && got.State == kassa.PayoutApproved
	})
	h.retried(3) // a few retries while down
	if funded, published := h.wallet.counts(); funded != 0 || len(published) != 0 {
		t.Fatalf("while down: %d funded, %v published", funded, published)
	}
	h.wallet.setDown(false)
	h.clock.Advance(time.Minute)
	done := h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted {
		t.Fatalf("payout %+v", done)
	}
	if funded, published := h.wallet.counts(); funded != 1 || len(published) != 1 || published[0] != done.TxID {
		t.Fatalf("%d funded, %v published; want one transaction, %s", funded, published, done.TxID)
	}
	h.eventuallyBalance(before - 7_000 - chainsim.SimulatedNetworkFee)

	// lnd goes down between the record and the publish.
	h.wallet.mu.Lock()
	h.wallet.noPublish = true
	h.wallet.mu.Unlock()
	p = h.approved(h.refunds, customerAddress, 8_000)
	var recorded *kassa.Payout
	kassatest.WaitFor(t, 5*time.Second, "the transaction recorded", func() bool {
		var err error
		recorded, err = h.db.Payout(context.Background(), p.ID)
		return err == nil && recorded.State == kassa.PayoutInProgress
	})
	h.retried(3)
	h.wallet.mu.Lock()
	h.wallet.noPublish = false
	h.wallet.mu.Unlock()
	h.clock.Advance(time.Minute)
	done = h.waitFinal(p.ID)
	if done.State != kassa.PayoutCompleted || done.TxID != recorded.TxID {
		t.Fatalf("payout %+v, want completed by the recorded %s", done, recorded.TxID)
	}
	if funded, _ := h.wallet.counts(); funded != 2 {
		t.Fatalf("%d transactions funded, want 2: one per payout", funded)
	}
	if paid := h.payments(); len(paid) != 2 || paid[recorded.TxID] != 8_000 {
		t.Fatalf("payments %v", paid)
	}
}

// TestApprovalNeedsTheNodeToCoverThePayout: an approval the node cannot
// pay (Lightning capacity, or the wallet's confirmed balance) is 503 and
// debits nothing.
func TestApprovalNeedsTheNodeToCoverThePayout(t *testing.T) {
	h := newOnchainHarness(t)
	ctx := context.Background()
	before := h.balance()
	h.wallet.sendable = 1_000
	pp, err := h.refunds.CreatePullPayment(ctx, h.store.ID, kassa.PullPaymentInput{Amount: decimal.NewFromInt(2_000), Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := h.refunds.Claim(ctx, pp.ID, "customer@example.com", decimal.NewFromInt(1_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.refunds.Approve(ctx, h.store.ID, ln.ID); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("approval beyond the node's capacity: %v, want unavailable", err)
	}
	poor := &poorWallet{simWallet: h.wallet}
	svc := refund.New(refund.Config{Reader: h.db, Payouts: h.db, Ledger: h.sys.Service, Rates: fixedRates{}, Clock: h.clock,
		Network: refund.Fixed{Net: &chaincfg.RegressionNetParams}, Funds: poor})
	oc, err := svc.Claim(ctx, pp.ID, customerAddress, decimal.NewFromInt(1_000))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Approve(ctx, h.store.ID, oc.ID); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("approval beyond the wallet's balance: %v, want unavailable", err)
	}
	if h.balance() != before || len(h.payoutLines()) != 0 {
		t.Fatalf("refused approvals wrote: balance %d, lines %v", h.balance(), h.payoutLines())
	}
}

// poorWallet has 1,100 sat confirmed.
type poorWallet struct{ *simWallet }

func (poorWallet) OnchainSpendable(context.Context) (kassa.Sats, error) { return 1_100, nil }
