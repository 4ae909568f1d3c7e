package sim

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/bolt11"
)

// Payer is the paying side of the simulated service node: it pays the
// invoices of other simulated nodes (a merchant's, say) by settling them
// there, with no routing fee. It remembers every payment it made, so
// TrackPayment answers as lnd's TrackPaymentV2 does.
type Payer struct {
	// Before, when set, is called before each payment and may refuse it:
	// tests use it to take the payee offline.
	Before func(paymentRequest string) error
	// Estimate, when set, answers EstimateFee: tests use it to give a
	// route a fee, or find none.
	Estimate func(payee kassa.Payee, amount, feeLimit kassa.MSat) (kassa.MSat, error)
	// Fee, when set, is the routing fee of a payment of amount: a
	// payment whose fee is above its fee limit fails as lnd's does (no
	// route), and EstimateFee answers it unless Estimate is set.
	Fee func(amount kassa.MSat) kassa.MSat
	// Ready, when set, answers SendReady: tests use it to say that the
	// node cannot send yet (lnd just restarted, its channels inactive).
	Ready func() error

	mu       sync.Mutex
	payees   []*Node
	payments map[string]kassa.LightningPayment // by payment hash
	sent     int
	// estimates counts EstimateFee calls.
	estimates int
}

// NewPayer returns a Payer that can reach payees.
func NewPayer(payees ...*Node) *Payer {
	return &Payer{payees: payees, payments: make(map[string]kassa.LightningPayment)}
}

// Sent returns how many payments were asked for (failed and refused
// ones included).
func (p *Payer) Sent() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// PayInvoice pays paymentRequest by settling it at its node. A payment
// hash already paid is not paid again: like lnd, the payer refuses it.
func (p *Payer) PayInvoice(ctx context.Context, paymentRequest string, feeLimit kassa.MSat, timeout time.Duration) (kassa.LightningPayment, error) {
	decoded, err := bolt11.Decode(strings.TrimSpace(paymentRequest), Params)
	if err != nil {
		return kassa.LightningPayment{}, refuse(ErrBadPaymentRequest, "%s (%v)", ErrBadPaymentRequest.Message, err)
	}
	hash := hex.EncodeToString(decoded.PaymentHash[:])
	p.mu.Lock()
	p.sent++
	if prev, ok := p.payments[hash]; ok && prev.Status == kassa.PaymentSucceeded {
		p.mu.Unlock()
		return kassa.LightningPayment{}, kassa.Errorf(kassa.Conflict, "invoice is already paid")
	}
	p.mu.Unlock()

	result := kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentSucceeded}
	if p.Fee != nil && decoded.MilliSat != nil {
		result.FeeMSat = p.Fee(kassa.MSat(*decoded.MilliSat))
		if result.FeeMSat > feeLimit {
			result = kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentFailed, Failure: "no_route"}
		}
	}
	if result.Status == kassa.PaymentSucceeded && p.Before != nil {
		if err := p.Before(paymentRequest); err != nil {
			result = kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentFailed, Failure: err.Error()}
		}
	}
	if result.Status == kassa.PaymentSucceeded {
		node := p.payee(decoded)
		if node == nil {
			result = kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentFailed, Failure: "no route"}
		} else if _, err := node.Pay(ctx, paymentRequest, 0); err != nil {
			result = kassa.LightningPayment{PaymentHash: hash, Status: kassa.PaymentFailed, Failure: err.Error()}
		}
	}
	if result.Status != kassa.PaymentSucceeded {
		result.FeeMSat = 0
	}
	p.mu.Lock()
	p.payments[hash] = result
	p.mu.Unlock()
	return result, nil
}

// SendReady is nil (simulated nodes are always connected) unless Ready
// says otherwise.
func (p *Payer) SendReady(context.Context) error {
	if p.Ready != nil {
		return p.Ready()
	}
	return nil
}

// TrackPayment returns what became of the payment with paymentHash.
func (p *Payer) TrackPayment(ctx context.Context, paymentHash string) (kassa.LightningPayment, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if pay, ok := p.payments[strings.ToLower(paymentHash)]; ok {
		return pay, nil
	}
	return kassa.LightningPayment{PaymentHash: paymentHash, Status: kassa.PaymentUnknown}, nil
}

// EstimateFee is zero (simulated nodes are one hop apart) unless
// Estimate or Fee says otherwise.
func (p *Payer) EstimateFee(ctx context.Context, payee kassa.Payee, amount, feeLimit kassa.MSat) (kassa.MSat, error) {
	p.mu.Lock()
	p.estimates++
	p.mu.Unlock()
	if p.Estimate != nil {
		return p.Estimate(payee, amount, feeLimit)
	}
	if p.Fee != nil {
		fee := p.Fee(amount)
		if fee > feeLimit {
			return 0, fmt.Errorf("the route costs %d msat, above the limit of %d msat", fee, feeLimit)
		}
		return fee, nil
	}
	return 0, nil
}

// Estimates returns how many route fees were estimated.
func (p *Payer) Estimates() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.estimates
}

func (p *Payer) payee(inv *bolt11.Invoice) *Node {
	if inv.Destination == nil {
		return nil
	}
	for _, n := range p.payees {
		if n.key.PubKey().IsEqual(inv.Destination) {
			return n
		}
	}
	return nil
}
