package kassa

import (
	"errors"
	"time"
)

// Sentinel errors of the invoice state machine. The actor treats them as
// "nothing to do" for inputs that race with another change (a timer firing
// just after a settle) and as a conflict for requests from a person.
var (
	// ErrInvoiceAlreadySettled is returned for an input that would change
	// an invoice that is already settled.
	ErrInvoiceAlreadySettled = Errorf(Conflict, "invoice is already settled")
	// ErrInvoiceNotOpen is returned when the expiry timer fires for an
	// invoice that is no longer New.
	ErrInvoiceNotOpen = Errorf(Conflict, "invoice is no longer open")
	// ErrExpiryTooEarly is returned when an expiry input comes before the
	// invoice's expiry time.
	ErrExpiryTooEarly = Errorf(Conflict, "invoice has not reached its expiry time")
	// ErrMonitoringNotOver is returned when a monitoring-ended input comes
	// before the end of the monitoring window.
	ErrMonitoringNotOver = Errorf(Conflict, "monitoring window is not over")
	// ErrUnknownPayment is returned when a dropped payment names no
	// payment of the invoice.
	ErrUnknownPayment = Errorf(NotFound, "no such payment on this invoice")
	// ErrNothingChanged is returned for an input that repeats what the
	// invoice already knows (the same output at the same depth).
	ErrNothingChanged = errors.New("nothing changed")
)

// InvoiceInput is something that happens to an invoice: a payment, a
// confirmation, a timer. Inputs carry their own time, so that applying the
// same input to the same state always gives the same result; replay from
// the journal depends on it.
type InvoiceInput interface{ inputTime() time.Time }

// PaymentObserved says that an on-chain output paying the invoice's
// address was seen, in the mempool or in a block at a given depth. The
// same output may be observed again as it gains confirmations.
type PaymentObserved struct {
	Payment Payment
	At      time.Time
}

// PaymentDropped says that an on-chain payment was double-spent, replaced
// or reorged out of the chain.
type PaymentDropped struct {
	PaymentID string
	// ReplacedByFee says a fee bump (RBF) that still pays the invoice's
	// address replaced it.
	ReplacedByFee bool
	At            time.Time
}

// LightningPaid says that the invoice's Lightning invoice was settled.
type LightningPaid struct {
	PaymentHash string
	AmountMSat  MSat
	At          time.Time
}

// ExpiryReached says that the invoice's expiry timer fired.
type ExpiryReached struct{ At time.Time }

// MonitoringEnded says that the window in which an expired invoice's
// address is still watched is over.
type MonitoringEnded struct{ At time.Time }

// MarkedInvalid says that a person marked the invoice invalid.
type MarkedInvalid struct{ At time.Time }

// Archived is a person archiving the invoice: lists leave it out unless
// asked; nothing else of it changes.
type Archived struct{ At time.Time }

func (i PaymentObserved) inputTime() time.Time { return i.At }
func (i PaymentDropped) inputTime() time.Time  { return i.At }
func (i LightningPaid) inputTime() time.Time   { return i.At }
func (i ExpiryReached) inputTime() time.Time   { return i.At }
func (i MonitoringEnded) inputTime() time.Time { return i.At }
func (i MarkedInvalid) inputTime() time.Time   { return i.At }
func (i Archived) inputTime() time.Time        { return i.At }

// Effect is something to do after an input's event is durable.
type Effect interface{ effect() }

// Emit says to send a webhook event.
type Emit struct {
	Type             EventType
	AdditionalStatus AdditionalStatus
	IsUnderpaid      bool
}

// Settle says to record the deposit and the service fee of a settled
// invoice.
type Settle struct {
	FullAmount Sats
	Fee        Sats
	Method     PaymentMethod
	// Hash is the payment hash or transaction id of the settling payment.
	Hash string
}

// PaidAgain says to record in the ledger a payment that became final
// after the invoice settled: the customer paid again. It carries no
// webhook event, so that a shop never ships an order twice; the merchant
// sees it in the invoice (additionalStatus Overpaid, its own payment
// record) and in the ledger (docs/decisions.md, "Invoices and
// money").
type PaidAgain struct {
	Amount Sats
	Fee    Sats
	Method PaymentMethod
	// Hash is the payment hash or transaction id of the payment.
	Hash string
}

// CancelLightning says to cancel the invoice's Lightning invoice at the
// node, so that it can no longer be paid: the invoice expired, turned
// invalid, or settled on-chain.
type CancelLightning struct{ PaymentHash string }

// ArmTimer says to fire an input at At: the expiry while the invoice is
// New, the end of monitoring afterwards.
type ArmTimer struct{ At time.Time }

// StopWatching says the invoice no longer needs its timer or the watchers.
type StopWatching struct{}

// ReleaseAddress says the invoice's derived address may be handed out
// again: the invoice expired without receiving anything and its address
// is no longer watched.
type ReleaseAddress struct{ Index uint32 }

func (Emit) effect()            {}
func (Settle) effect()          {}
func (PaidAgain) effect()       {}
func (CancelLightning) effect() {}
func (ArmTimer) effect()        {}
func (StopWatching) effect()    {}
func (ReleaseAddress) effect()  {}

// Apply returns the invoice after in, and the effects to perform once the
// input is durable. An error leaves the invoice unchanged and means that
// nothing is to be stored.
func (inv Invoice) Apply(in InvoiceInput) (Invoice, []Effect, error) {
	next := inv
	next.Payments = append([]Payment(nil), inv.Payments...)
	next.UpdatedAt = in.inputTime()
	var effects []Effect
	var err error
	switch in := in.(type) {
	case PaymentObserved:
		effects, err = next.observe(in)
	case PaymentDropped:
		effects, err = next.drop(in)
	case LightningPaid:
		effects, err = next.lightning(in)
	case ExpiryReached:
		effects, err = next.expire(in)
	case MonitoringEnded:
		effects, err = next.endMonitoring(in)
	case MarkedInvalid:
		effects, err = next.markInvalid()
	case Archived:
		if next.Archived {
			err = ErrNothingChanged
		}
		next.Archived = true
	default:
		err = Errorf(Internal, "unknown invoice input %T", in)
	}
	if err != nil {
		return inv, nil, err
	}
	return next, effects, nil
}

func (inv *Invoice) observe(in PaymentObserved) ([]Effect, error) {
	p := in.Payment
	p.Method = MethodOnchain
	if p.ID == "" {
		return nil, Errorf(Invalid, "payment has no id")
	}
	if p.Amount <= 0 {
		return nil, Errorf(Invalid, "payment amount must be positive")
	}
	late := inv.afterExpiration()
	found, wasFinal := false, false
	for i := range inv.Payments {
		if inv.Payments[i].ID != p.ID {
			continue
		}
		found = true
		old := inv.Payments[i]
		if old.Confirmations == p.Confirmations && !old.Dropped {
			return nil, ErrNothingChanged
		}
		p.ReceivedAt = old.ReceivedAt
		p.Accounted = old.Accounted
		wasFinal = inv.Final(&old)
		inv.Payments[i] = p
		if p.Confirmations < old.Confirmations && !old.Dropped {
			// A reorg took the output's block away.
			if effects := inv.afterLoss(in.At); effects != nil {
				return effects, nil
			}
		}
	}
	if !found {
		p.Accounted = false
		if p.ReceivedAt.IsZero() {
			p.ReceivedAt = in.At
		}
		inv.Payments = append(inv.Payments, p)
	}
	notices := inv.paymentNotices(&p, found, wasFinal, late)
	return append(notices, inv.afterPayment(in.At, MethodOnchain, p.TxID)...), nil
}

func (inv *Invoice) drop(in PaymentDropped) ([]Effect, error) {
	for i := range inv.Payments {
		if inv.Payments[i].ID == in.PaymentID {
			if inv.Payments[i].Dropped {
				return nil, ErrNothingChanged
			}
			inv.Payments[i].Dropped = true
			inv.Payments[i].ReplaceByFee = inv.Payments[i].ReplaceByFee || in.ReplacedByFee
			return inv.afterLoss(in.At), nil
		}
	}
	return nil, ErrUnknownPayment
}

// afterLoss moves the invoice back after an on-chain payment was dropped
// or lost confirmations in a reorg. An invoice never stays Settled from
// money that is not on the best chain at the required depth: it goes back
// to Processing while what it received still covers it (or after its
// expiry, to turn Invalid when monitoring ends with nothing confirmed),
// else to New. It is marked SettlementReverted; its ledger lines stay, and
// settling again records none and sends no second Settled event.
// Lightning settlements are final.
func (inv *Invoice) afterLoss(at time.Time) []Effect {
	received, confirmed := inv.TotalPaid(), inv.ConfirmedPaid()
	switch inv.Status {
	case InvoiceSettled:
		if inv.SettledBy != MethodOnchain || Covers(inv.Amount, confirmed, inv.Tolerance) {
			return nil
		}
		inv.SettlementReverted = true
		inv.MonitoringDone = false
		if !inv.MonitorUntil.After(at) {
			inv.MonitorUntil = at.Add(DefaultMonitoring)
		}
		if !Covers(inv.Amount, received, inv.Tolerance) && at.Before(inv.ExpiresAt) {
			inv.Status = InvoiceNew
			return []Effect{ArmTimer{At: inv.ExpiresAt}}
		}
		inv.Status = InvoiceProcessing
		return []Effect{ArmTimer{At: inv.MonitorUntil}}
	case InvoiceProcessing:
		if !Covers(inv.Amount, received, inv.Tolerance) && at.Before(inv.ExpiresAt) {
			inv.Status = InvoiceNew
			return []Effect{ArmTimer{At: inv.ExpiresAt}}
		}
	}
	return nil
}

func (inv *Invoice) lightning(in LightningPaid) ([]Effect, error) {
	if in.AmountMSat <= 0 {
		return nil, Errorf(Invalid, "payment amount must be positive")
	}
	for _, p := range inv.Payments {
		if p.ID == in.PaymentHash {
			return nil, ErrNothingChanged
		}
	}
	late := inv.afterExpiration()
	inv.Payments = append(inv.Payments, Payment{
		ID:          in.PaymentHash,
		Method:      MethodLightning,
		TxID:        in.PaymentHash,
		Amount:      in.AmountMSat.Sats(),
		AmountMSat:  in.AmountMSat,
		Destination: inv.LightningInvoice,
		ReceivedAt:  in.At,
	})
	notices := inv.paymentNotices(&inv.Payments[len(inv.Payments)-1], false, false, late)
	return append(notices, inv.afterPayment(in.At, MethodLightning, in.PaymentHash)...), nil
}

// afterPayment moves the invoice on after a payment was added or gained
// confirmations.
func (inv *Invoice) afterPayment(at time.Time, method PaymentMethod, hash string) []Effect {
	received, confirmed := inv.TotalPaid(), inv.ConfirmedPaid()
	switch inv.Status {
	case InvoiceNew:
		if Covers(inv.Amount, confirmed, inv.Tolerance) {
			return append([]Effect{Emit{Type: EventProcessing}}, inv.settle(at, method, hash, StatusNone)...)
		}
		if Covers(inv.Amount, received, inv.Tolerance) {
			inv.Status = InvoiceProcessing
			return []Effect{Emit{Type: EventProcessing}, ArmTimer{At: inv.MonitorUntil}}
		}
	case InvoiceProcessing:
		if Covers(inv.Amount, confirmed, inv.Tolerance) {
			return inv.settle(at, method, hash, StatusNone)
		}
	case InvoiceExpired:
		if Covers(inv.Amount, confirmed, inv.Tolerance) {
			return inv.settle(at, method, hash, StatusPaidAfterExpiration)
		}
	case InvoiceSettled:
		return inv.paidAgain()
	}
	// Invalid invoices only record what arrives.
	return nil
}

// paidAgain accounts the payments that became final after the invoice
// settled. Each is money the customer paid on top of a settled invoice:
// it makes the invoice Overpaid and goes to the ledger on its own.
func (inv *Invoice) paidAgain() []Effect {
	inv.accountLegacySettlement()
	var effects []Effect
	for i := range inv.Payments {
		p := &inv.Payments[i]
		if p.Accounted || !inv.Final(p) {
			continue
		}
		p.Accounted = true
		inv.AdditionalStatus = StatusOverpaid
		effects = append(effects, PaidAgain{Amount: p.Amount, Fee: PercentOf(p.Amount, inv.PercentFee), Method: p.Method, Hash: p.TxID})
	}
	return effects
}

// accountLegacySettlement marks as accounted, on an invoice settled
// before payments carried the flag (none has it), the payments its
// settlement counted: those received by then. Without it, the first
// payment after the upgrade would put the settled money in the ledger a
// second time.
func (inv *Invoice) accountLegacySettlement() {
	for _, p := range inv.Payments {
		if p.Accounted {
			return
		}
	}
	for i := range inv.Payments {
		if p := &inv.Payments[i]; !p.ReceivedAt.After(inv.SettledAt) {
			p.Accounted = true
		}
	}
}

func (inv *Invoice) settle(at time.Time, method PaymentMethod, hash string, additional AdditionalStatus) []Effect {
	// Only what is final counts: an unconfirmed extra output neither makes
	// the invoice Overpaid nor enters the deposit or the fee.
	paid := inv.ConfirmedPaid()
	for i := range inv.Payments {
		if inv.Final(&inv.Payments[i]) {
			inv.Payments[i].Accounted = true
		}
	}
	if additional == StatusNone && inv.Amount > 0 && paid > inv.Amount {
		additional = StatusOverpaid
	}
	wasExpired := inv.Status == InvoiceExpired
	inv.Status = InvoiceSettled
	inv.MonitoringDone = true
	if inv.SettlementReverted {
		// Settled again after a reorg: the first settlement's event and
		// ledger lines stand; nothing is counted twice.
		return []Effect{StopWatching{}}
	}
	inv.AdditionalStatus = additional
	inv.SettledAt = at
	inv.SettledBy = method
	effects := []Effect{
		Emit{Type: EventSettled, AdditionalStatus: additional},
		Settle{FullAmount: paid, Fee: PercentOf(paid, inv.PercentFee), Method: method, Hash: hash},
		StopWatching{},
	}
	if wasExpired {
		return effects // its Lightning invoice was cancelled at expiry
	}
	return append(effects, inv.cancelLightning()...)
}

// cancelLightning returns the effect that cancels the invoice's Lightning
// invoice, unless it has none or it was paid.
func (inv *Invoice) cancelLightning() []Effect {
	if inv.PaymentHash == "" {
		return nil
	}
	for _, p := range inv.Payments {
		if p.Method == MethodLightning {
			return nil
		}
	}
	return []Effect{CancelLightning{PaymentHash: inv.PaymentHash}}
}

func (inv *Invoice) expire(in ExpiryReached) ([]Effect, error) {
	if inv.Status != InvoiceNew {
		return nil, ErrInvoiceNotOpen
	}
	if in.At.Before(inv.ExpiresAt) {
		return nil, ErrExpiryTooEarly
	}
	inv.Status = InvoiceExpired
	emit := Emit{Type: EventExpired}
	if inv.TotalPaid() > 0 {
		inv.AdditionalStatus = StatusUnderpaid
		emit.AdditionalStatus, emit.IsUnderpaid = StatusUnderpaid, true
	}
	return append([]Effect{emit, ArmTimer{At: inv.MonitorUntil}}, inv.cancelLightning()...), nil
}

func (inv *Invoice) endMonitoring(in MonitoringEnded) ([]Effect, error) {
	if in.At.Before(inv.MonitorUntil) {
		return nil, ErrMonitoringNotOver
	}
	switch inv.Status {
	case InvoiceProcessing:
		inv.Status = InvoiceInvalid
		inv.MonitoringDone = true
		return append([]Effect{Notice{Type: NoticeInvalid}, StopWatching{}}, inv.cancelLightning()...), nil
	case InvoiceExpired:
		if !inv.MonitoringDone {
			inv.MonitoringDone = true
			effects := []Effect{StopWatching{}}
			if inv.SettlementReverted {
				// It settled, then a reorg or double spend took its
				// payment back and nothing confirmed it again: Invalid
				// (the design's rule), so that the merchant looks at it
				// rather than read that the customer never paid. Its
				// Lightning invoice was cancelled at expiry.
				inv.Status = InvoiceInvalid
				return append([]Effect{Notice{Type: NoticeInvalid}}, effects...), nil
			}
			if len(inv.Payments) == 0 && inv.DerivationIndex != nil {
				effects = append(effects, ReleaseAddress{Index: *inv.DerivationIndex})
			}
			return effects, nil
		}
	}
	return nil, ErrNothingChanged
}

// CanMarkInvalid reports whether marking the invoice invalid changes it:
// every status but Settled and Invalid. Adapters offer the action by it.
func (inv *Invoice) CanMarkInvalid() bool { return inv.markInvalidRefused() == nil }

// markInvalidRefused is why marking the invoice invalid changes nothing:
// a settled invoice stays settled, an invalid one is invalid already.
func (inv *Invoice) markInvalidRefused() error {
	switch inv.Status {
	case InvoiceSettled:
		return ErrInvoiceAlreadySettled
	case InvoiceInvalid:
		return ErrNothingChanged
	}
	return nil
}

func (inv *Invoice) markInvalid() ([]Effect, error) {
	if err := inv.markInvalidRefused(); err != nil {
		return nil, err
	}
	var cancel []Effect
	if inv.Status == InvoiceNew || inv.Status == InvoiceProcessing {
		cancel = inv.cancelLightning() // Expired ones were cancelled at expiry
	}
	inv.Status = InvoiceInvalid
	inv.MonitoringDone = true
	return append([]Effect{Notice{Type: NoticeInvalid, ManuallyMarked: true}, StopWatching{}}, cancel...), nil
}
