package actors

import (
	"context"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/crashpoint"
)

// The one way money leaves the service's Lightning node, for forwards
// and refund payouts alike (docs/decisions.md, "Forwarding" and
// "Refunds: pull payments and payouts"): the invoice to pay and its
// payment hash are recorded durably first; then send pays it; a recorded
// attempt whose outcome is not known (after a restart, or a send whose
// answer was lost) is looked up by its hash before anything is sent
// again, and sent only when the node never saw it. lnd pays a hash
// once, so a recorded invoice is paid at most once.

// send pays the recorded invoice pr (hash) spending at most feeLimit on
// routing. ok is false when its outcome is unknown: the caller looks it
// up later (lookUp) rather than pay again. kind and id name the payment
// in the log.
func (f *Forwarder) send(c context.Context, kind, id, pr, hash string, feeLimit kassa.MSat) (p kassa.LightningPayment, ok bool) {
	p, err := f.cfg.Payer.PayInvoice(c, pr, feeLimit, f.cfg.PayTimeout)
	if err != nil {
		f.log.Warn(kind+" payment outcome unknown; tracking it", kind, id, "payment_hash", hash, "err", err)
		return p, false
	}
	crashpoint.Hit(crashpoint.PaymentSent)
	return p, true
}

// lookUp learns the outcome of the recorded attempt hash from the node,
// and sends pr when the node never sent it (a crash between the record
// and the send). ok is false when the outcome is still unknown.
func (f *Forwarder) lookUp(c context.Context, kind, id, pr, hash string, feeLimit kassa.MSat) (p kassa.LightningPayment, ok bool) {
	p, err := f.cfg.Payer.TrackPayment(c, hash)
	if err != nil {
		f.log.Warn("track "+kind+" payment", kind, id, "payment_hash", hash, "err", err)
		return p, false
	}
	if p.Status == kassa.PaymentUnknown {
		return f.send(c, kind, id, pr, hash, feeLimit)
	}
	return p, true
}
