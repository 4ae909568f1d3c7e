package actors

import (
	"context"
	"errors"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/crashpoint"
)

// RefundPayouts is what the forward actors need of refunds to pay
// approved payouts through the one sender (send, lookUp); refund.Service
// implements it.
type RefundPayouts interface {
	// ToSend returns the payouts to pay or to look up (Approved or
	// InProgress) of the store, or of every store when storeID is
	// empty, oldest first.
	ToSend(ctx context.Context, storeID string) ([]*kassa.Payout, error)
	// Record applies in to the store's payout, in the store's turn,
	// with the ledger lines of its effects, and returns the payout.
	Record(ctx context.Context, storeID, payoutID string, in kassa.PayoutInput) (*kassa.Payout, error)
}

// PayPayouts has the forward actors pay p's approved payouts, each
// store's before its forwards. Call it before Recover.
func (f *Forwarder) PayPayouts(p RefundPayouts) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.payouts = p
}

func (f *Forwarder) refundPayouts() RefundPayouts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.payouts
}

// payoutsToSend returns the payouts to send of every store, oldest
// first: none when the forward actors pay no payouts.
func (f *Forwarder) payoutsToSend(ctx context.Context) ([]*kassa.Payout, error) {
	p := f.refundPayouts()
	if p == nil {
		return nil, nil
	}
	return p.ToSend(ctx, "")
}

// payoutStores returns the stores with payouts to send.
func (f *Forwarder) payoutStores(ctx context.Context) ([]string, error) {
	todo, err := f.payoutsToSend(ctx)
	if err != nil {
		return nil, err
	}
	var stores []string
	seen := map[string]bool{}
	for _, po := range todo {
		if !seen[po.StoreID] {
			seen[po.StoreID] = true
			stores = append(stores, po.StoreID)
		}
	}
	return stores, nil
}

// stepPayout moves the store's oldest payout to send one step on and
// reports whether there was one: its recorded attempt is looked up, or
// its invoice is got, recorded and sent. The store's forwards wait for
// its payouts.
func (a *forwardActor) stepPayout(ctx actor.Context) bool {
	payouts := a.f.refundPayouts()
	if payouts == nil {
		return false
	}
	c := a.ctx()
	todo, err := payouts.ToSend(c, a.storeID)
	if err != nil {
		a.f.log.Error("read payouts to send", "store", a.storeID, "err", err)
		a.retryLater(ctx)
		return true
	}
	if len(todo) == 0 {
		return false
	}
	p := todo[0]
	if p.State == kassa.PayoutApproved {
		crashpoint.Hit(crashpoint.PayoutApproved)
	}
	if p.Destination.Kind == kassa.DestinationOnchain {
		a.stepOnchainPayout(ctx, payouts, p)
		return true
	}
	if !a.sendReady(ctx, p) {
		return true
	}
	if p.State == kassa.PayoutInProgress {
		res, ok := a.f.lookUp(c, "payout", p.ID, p.PaymentRequest, p.PaymentHash, p.FeeLimit.MSat())
		if ok && res.Status == kassa.PaymentFailed {
			// It may have failed while the node was not ready: the node,
			// ready now, pays the hash again or fails it for good.
			res, ok = a.f.send(c, "payout", p.ID, p.PaymentRequest, p.PaymentHash, p.FeeLimit.MSat())
		}
		a.payoutOutcome(ctx, payouts, p, res, ok)
		return true
	}
	pr, hash, reason, err := a.payoutInvoice(c, p)
	if err != nil {
		// The service's node, not the address, is at fault: try again.
		a.f.log.Warn("payout's Lightning address not resolved; retrying", "payout", p.ID, "err", err)
		a.retryLater(ctx)
		return true
	}
	if reason != "" {
		a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: reason, At: a.now()})
		return true
	}
	// Durable before it is sent: after a crash the hash is looked up,
	// and the invoice paid at most once.
	recorded, err := payouts.Record(c, p.StoreID, p.ID, kassa.PayoutAttempt{PaymentRequest: pr, PaymentHash: hash, At: a.now()})
	if err != nil {
		a.f.log.Error("record payout attempt; not paying", "payout", p.ID, "err", err)
		a.retryLater(ctx)
		return true
	}
	crashpoint.Hit(crashpoint.PayoutAttemptRecorded)
	res, ok := a.f.send(c, "payout", recorded.ID, pr, hash, recorded.FeeLimit.MSat())
	a.payoutOutcome(ctx, payouts, recorded, res, ok)
	return true
}

// nodeWaitMax bounds the backoff of a payout waiting for the node to be
// able to send: a restarted lnd activates its channels within a minute
// or so, and the payout should go out soon after.
const nodeWaitMax = time.Minute

// sendReady reports whether the service's node can send p's payment
// now; when it cannot (lnd restarting, its channels not active yet) p
// waits, with backoff from TrackEvery to nodeWaitMax: a payment failing
// then is no failure of p's.
func (a *forwardActor) sendReady(ctx actor.Context, p *kassa.Payout) bool {
	err := a.f.cfg.Payer.SendReady(a.ctx())
	if err == nil {
		return true
	}
	if a.delay == 0 {
		a.delay = a.f.cfg.TrackEvery
	} else {
		a.delay = min(2*a.delay, nodeWaitMax)
	}
	a.f.log.Warn("the Lightning node cannot send yet; payout waits", "payout", p.ID, "store", p.StoreID, "retry_in", a.delay, "err", err)
	a.wakeIn(ctx, a.delay)
	return false
}

// payoutInvoice returns the invoice that pays p, or why there is none:
// the claimed invoice itself, or one the Lightning address makes for
// the payout's amount. err (kassa.ErrLightningNodeUnreachable) says
// that the address could not be checked for now, through no fault of
// its own: the payout is tried again rather than failed.
func (a *forwardActor) payoutInvoice(c context.Context, p *kassa.Payout) (pr, hash, reason string, err error) {
	d := p.Destination
	switch d.Kind {
	case kassa.DestinationBOLT11:
		if !a.now().Before(d.ExpiresAt) {
			return "", "", "the Lightning invoice expired before the payout was paid", nil
		}
		if d.Amount != p.Amount.MSat() {
			return "", "", "the Lightning invoice's amount is not the payout's", nil
		}
		return d.Address, d.PaymentHash, "", nil
	case kassa.DestinationLNURL:
		req, err := a.f.cfg.Addresses.PayRequest(c, d.Address)
		if errors.Is(err, kassa.ErrLightningNodeUnreachable) {
			return "", "", "", err
		}
		if err != nil {
			return "", "", "the Lightning address gave no pay request: " + kassa.ErrorMessage(err), nil
		}
		inv, err := a.f.cfg.Addresses.Invoice(c, req, p.Amount.MSat(), "refund "+p.ID)
		if errors.Is(err, kassa.ErrLightningNodeUnreachable) {
			return "", "", "", err
		}
		if err != nil {
			return "", "", "the Lightning address gave no invoice: " + kassa.ErrorMessage(err), nil
		}
		return inv.PaymentRequest, inv.PaymentHash, "", nil
	}
	return "", "", "the destination is not a Lightning one", nil
}

// payoutOutcome records what the node says of p's payment: completed
// with its fee (rounded up to a satoshi), or failed with the money back;
// a payment in flight, or whose outcome is unknown (ok false), is looked
// up again later.
func (a *forwardActor) payoutOutcome(ctx actor.Context, payouts RefundPayouts, p *kassa.Payout, res kassa.LightningPayment, ok bool) {
	if !ok {
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
		return
	}
	switch res.Status {
	case kassa.PaymentSucceeded:
		a.recordPayout(ctx, payouts, p, kassa.PayoutSucceeded{NetworkFee: (res.FeeMSat + 999).Sats(), At: a.now()})
	case kassa.PaymentFailed:
		if !a.sendReady(ctx, p) {
			return // not a definite failure: the payment is sent again
		}
		a.recordPayout(ctx, payouts, p, kassa.PayoutPaymentFailed{Reason: "payment failed: " + res.Failure, At: a.now()})
	default:
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
	}
}

// recordPayout records in for p and goes on with the store's next
// payout or forward.
func (a *forwardActor) recordPayout(ctx actor.Context, payouts RefundPayouts, p *kassa.Payout, in kassa.PayoutInput) {
	done, err := payouts.Record(a.ctx(), p.StoreID, p.ID, in)
	if err != nil {
		a.f.log.Error("record payout outcome", "payout", p.ID, "err", err)
		a.wakeIn(ctx, a.f.cfg.TrackEvery)
		return
	}
	crashpoint.Hit(crashpoint.PayoutRecorded)
	if done.State == kassa.PayoutFailed {
		a.f.log.Warn("payout failed; its amount is back on the store's balance", "payout", p.ID, "store", p.StoreID, "reason", done.LastError)
	} else {
		a.f.log.Info("payout paid", "payout", p.ID, "store", p.StoreID, "payment_hash", done.PaymentHash, "fee_sat", done.NetworkFee)
	}
	a.delay = 0
	ctx.Send(ctx.Self(), wakeForward{})
}
