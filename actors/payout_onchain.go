package actors

import (
	"context"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/crashpoint"
)

// OnchainWallet pays on-chain payouts from the service's wallet
// (lightning/lnd's Node, lnd's wallet; chain/sim's Chain in
// simulation). A transaction is funded and signed first, recorded on
// the payout, and only then published; after a restart the recorded
// transaction is published again, never a new one (docs/decisions.md,
// "Payouts through lnd").
type OnchainWallet interface {
	// FundTx funds and signs, without publishing, a transaction paying
	// amount to address for the payout key; its inputs stay reserved
	// for it. The inputs an earlier FundTx of key reserved (a crash
	// before it was recorded) are given back first. An error of kind
	// Unavailable says to try again later; any other that the wallet
	// cannot make it (too little money, a bad address).
	FundTx(ctx context.Context, key, address string, amount kassa.Sats) (kassa.OnchainTx, error)
	// ReleaseTx gives back the inputs of a funded transaction that was
	// not recorded, so never published.
	ReleaseTx(ctx context.Context, tx kassa.OnchainTx) error
	// PublishTx publishes the recorded transaction rawTx whose id is
	// txid. One published or mined before is no error. ErrTxConflict
	// (wrapped) says that other transactions spent its inputs: it can
	// never be mined, nothing was paid.
	PublishTx(ctx context.Context, rawTx, txid string) error
}

// ErrTxConflict is what PublishTx wraps when the transaction's inputs
// were spent by another: it will never be mined.
var ErrTxConflict = kassa.Errorf(kassa.Conflict, "the transaction's inputs were spent by another transaction")

// stepOnchainPayout moves the store's on-chain payout p one step on: a
// recorded transaction is published (again); an approved payout's
// transaction is funded, recorded, then published. A published
// transaction completes the payout with its fee: the wallet spent its
// own coins on it, and lnd rebroadcasts it until it is mined.
func (a *forwardActor) stepOnchainPayout(ctx actor.Context, payouts RefundPayouts, p *kassa.Payout) {
	c := a.ctx()
	w := a.f.cfg.Wallet
	if w == nil {
		a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: "this server has no wallet to pay on-chain payouts from", At: a.now()})
		return
	}
	if p.State == kassa.PayoutApproved {
		tx, err := w.FundTx(c, p.ID, p.Destination.Address, p.Amount)
		if kassa.ErrorCode(err) == kassa.Unavailable {
			a.f.log.Warn("fund payout transaction; retrying", "payout", p.ID, "err", err)
			a.wakeIn(ctx, a.f.cfg.TrackEvery)
			return
		}
		if err != nil {
			a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: "the wallet cannot pay it: " + kassa.ErrorMessage(err), At: a.now()})
			return
		}
		if tx.Fee > p.FeeLimit {
			a.release(c, w, p, tx)
			a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: "network fees rose above the payout's fee limit", At: a.now()})
			return
		}
		// Durable before it is published: after a crash this same
		// transaction is published again, and no other is made.
		recorded, err := payouts.Record(c, p.StoreID, p.ID, kassa.PayoutAttempt{RawTx: tx.Raw, TxID: tx.TxID, Fee: tx.Fee, At: a.now()})
		if err != nil {
			a.f.log.Error("record payout transaction; not publishing it", "payout", p.ID, "err", err)
			a.release(c, w, p, tx)
			a.retryLater(ctx)
			return
		}
		p = recorded
		crashpoint.Hit(crashpoint.PayoutAttemptRecorded)
	}
	err := w.PublishTx(c, p.RawTx, p.TxID)
	if err == nil {
		crashpoint.Hit(crashpoint.PaymentSent)
	}
	switch {
	case err == nil:
		a.recordPayout(ctx, payouts, p, kassa.PayoutSucceeded{NetworkFee: p.NetworkFee, At: a.now()})
	case kassa.ErrorCode(err) == kassa.Conflict:
		a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: "the transaction can never be mined: " + kassa.ErrorMessage(err), At: a.now()})
	default:
		a.f.log.Warn("publish payout transaction; retrying", "payout", p.ID, "txid", p.TxID, "err", err)
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
	}
}

// release gives back the inputs of tx, which p will not publish; a
// failure only logs (lnd's reservation runs out by itself).
func (a *forwardActor) release(c context.Context, w OnchainWallet, p *kassa.Payout, tx kassa.OnchainTx) {
	if err := w.ReleaseTx(c, tx); err != nil {
		a.f.log.Warn("release the inputs of an unpublished payout transaction", "payout", p.ID, "txid", tx.TxID, "err", err)
	}
}
