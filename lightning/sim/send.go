package sim

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// keyPaymentPrefix + payment hash: the outcome of a payment the node
// sent (a kassa.LightningPayment).
const keyPaymentPrefix = "sent/"

// PayInvoice pays paymentRequest from the node itself, as lnd pays for
// the service's sender (actors.LightningPayer): the simulated node has
// no channels and reaches only itself, so an invoice it made settles
// (Pay: reported to the handler given to Start like any payment, with no
// routing fee), and an invoice of another node fails with no route, as
// lnd's does when it finds none. An expired, cancelled or amountless
// invoice fails. The outcome is kept in the node's Store, so that
// TrackPayment answers after a restart; a hash already paid is refused
// (Conflict), as lnd refuses it.
func (n *Node) PayInvoice(ctx context.Context, paymentRequest string, feeLimit kassa.MSat, timeout time.Duration) (kassa.LightningPayment, error) {
	decoded, err := bolt11.Decode(strings.TrimSpace(paymentRequest), Params)
	if err != nil {
		return kassa.LightningPayment{}, refuse(ErrBadPaymentRequest, "%s (%v)", ErrBadPaymentRequest.Message, err)
	}
	hash := hex.EncodeToString(decoded.PaymentHash[:])
	prev, err := n.TrackPayment(ctx, hash)
	if err != nil {
		return kassa.LightningPayment{}, err
	}
	if prev.Status == kassa.PaymentSucceeded {
		return kassa.LightningPayment{}, kassa.Errorf(kassa.Conflict, "invoice is already paid")
	}
	res := kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentSucceeded}
	switch {
	case decoded.Destination == nil || !decoded.Destination.IsEqual(n.key.PubKey()):
		res.Status, res.Failure = kassa.PaymentFailed, "no_route"
	case decoded.MilliSat == nil:
		res.Status, res.Failure = kassa.PaymentFailed, "the invoice has no amount"
	default:
		// In flight before it settles: a payment cut short between the
		// two is settled or not by the invoice's own record.
		if err := n.record(ctx, kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentInFlight}); err != nil {
			return kassa.LightningPayment{}, err
		}
		if _, err := n.Pay(ctx, paymentRequest, 0); err != nil && !errors.Is(err, ErrNotRecorded) {
			// ErrNotRecorded: paid; the handler gets the settlement later.
			res.Status, res.Failure = kassa.PaymentFailed, kassa.ErrorMessage(err)
		}
	}
	if err := n.record(ctx, res); err != nil {
		return kassa.LightningPayment{}, err
	}
	return res, nil
}

func (n *Node) record(ctx context.Context, p kassa.LightningPayment) error {
	v, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := n.store.Put(ctx, keyPaymentPrefix+p.PaymentHash, v); err != nil {
		return fmt.Errorf("record payment %s: %w", p.PaymentHash, err)
	}
	return nil
}

// TrackPayment returns what became of the payment the node sent with
// paymentHash: its recorded outcome; for one cut short while in flight,
// succeeded when its invoice is settled and failed otherwise; and
// PaymentUnknown when the node never sent one. An invoice of the node
// paid by someone else is not a payment it sent.
func (n *Node) TrackPayment(ctx context.Context, paymentHash string) (kassa.LightningPayment, error) {
	hash := strings.ToLower(paymentHash)
	v, ok, err := n.store.Get(ctx, keyPaymentPrefix+hash)
	if err != nil {
		return kassa.LightningPayment{}, err
	}
	if !ok {
		return kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentUnknown}, nil
	}
	var p kassa.LightningPayment
	if err := json.Unmarshal(v, &p); err != nil {
		return kassa.LightningPayment{}, fmt.Errorf("payment %s: %w", hash, err)
	}
	if p.Status != kassa.PaymentInFlight {
		return p, nil
	}
	n.mu.Lock()
	inv, err := n.load(ctx, hash)
	n.mu.Unlock()
	if err != nil {
		return kassa.LightningPayment{}, err
	}
	if inv != nil && inv.Settled {
		p.Status = kassa.PaymentSucceeded
	} else {
		p.Status, p.Failure = kassa.PaymentFailed, "the payment did not complete"
	}
	return p, nil
}

// SendReady is nil: the simulated node is always ready.
func (n *Node) SendReady(context.Context) error { return nil }

// EstimateFee is zero: the node pays only itself.
func (n *Node) EstimateFee(ctx context.Context, payee kassa.Payee, amount, feeLimit kassa.MSat) (kassa.MSat, error) {
	return 0, nil
}

// LightningSendable is what the simulated node can send: any amount (it
// pays only its own invoices, which find a route or not whatever the
// amount).
func (n *Node) LightningSendable(context.Context) (kassa.Sats, error) { return kassa.MaxSats, nil }
