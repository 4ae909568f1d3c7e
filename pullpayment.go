package kassa

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"
)

// Refunds (docs/decisions.md, "Refunds: pull payments and payouts"): a
// pull payment promises to pay up to an amount; whoever holds its link
// claims it by naming a destination, which makes a payout; the merchant
// approves the payout, which debits the store's prepaid balance, and the
// service pays it. The rules below are pure.

// PullPayment is a promise of a store to pay up to Amount.
type PullPayment struct {
	ID      string `json:"id"`
	StoreID string `json:"storeId"`
	// InvoiceID is the invoice refunded, when the pull payment is a
	// refund.
	InvoiceID   string `json:"invoiceId,omitempty"`
	Description string `json:"description,omitempty"`
	// Currency is the unit of Amount and Claimed: SATS for an amount fixed
	// in bitcoin, or a fiat currency, whose payouts are converted to
	// satoshis at their approval, at the rate of that moment.
	Currency Currency `json:"currency"`
	// Amount is the most the pull payment pays, in Currency (a whole
	// number of satoshis when Currency is SATS).
	Amount decimal.Decimal `json:"amount"`
	// Claimed is the part of Amount that payouts not failed or cancelled
	// hold.
	Claimed decimal.Decimal `json:"claimed"`
	// Rate is the price of one bitcoin in Currency the amount was worked
	// out at (the payment's rate, or the rate when it was made); zero for
	// SATS.
	Rate decimal.Decimal `json:"rate,omitzero"`
	// ExpiresAt, when set, ends the claims.
	ExpiresAt time.Time `json:"expiresAt,omitzero"`
	CreatedAt time.Time `json:"createdAt"`
	Archived  bool      `json:"archived,omitempty"`
	// AutoApproveClaims approves each claim in the claim's own batch,
	// whatever the store's own limit (Store.AutoApproves), when the
	// prepaid balance covers it with its fee limit, as the store's limit
	// does (package refund). Making one needs PermCreatePullPayments.
	AutoApproveClaims bool `json:"autoApproveClaims,omitempty"`
}

// Pull payment refusals.
var (
	ErrPullPaymentArchived = Errorf(Conflict, "the pull payment is archived: it takes no more claims")
	ErrPullPaymentExpired  = Errorf(Conflict, "the pull payment has expired: it takes no more claims")
	ErrPullPaymentSpent    = Errorf(Conflict, "the pull payment is fully claimed: nothing is left to claim")
	ErrInvoiceNotPaid      = Errorf(Conflict, "the invoice has received no payment: there is nothing to refund")
	ErrInvoiceNotOverpaid  = Errorf(Conflict, "the invoice was not overpaid: there is no overpaid part to refund")
)

// Left is what the pull payment can still pay, in its Currency.
func (p *PullPayment) Left() decimal.Decimal {
	left := p.Amount.Sub(p.Claimed)
	if left.IsNegative() {
		return decimal.Zero
	}
	return left
}

// Claim takes amount (in the pull payment's Currency) from what is left,
// at now. A claim above what is left, or of a pull payment that is
// archived, expired or spent, is refused and changes nothing.
func (p *PullPayment) Claim(amount decimal.Decimal, now time.Time) error {
	switch {
	case p.Archived:
		return ErrPullPaymentArchived
	case !p.ExpiresAt.IsZero() && !now.Before(p.ExpiresAt):
		return ErrPullPaymentExpired
	case !p.Left().IsPositive():
		return ErrPullPaymentSpent
	case !amount.IsPositive():
		return InvalidFields([]FieldError{{Field: "amount", Message: "must be positive"}})
	case amount.GreaterThan(p.Left()):
		return InvalidFields([]FieldError{{Field: "amount", Message: fmt.Sprintf("is more than the %s %s left on the pull payment", p.Left(), p.Currency)}})
	}
	p.Claimed = p.Claimed.Add(amount)
	return nil
}

// Release gives back amount of a payout that failed or was cancelled:
// it can be claimed again.
func (p *PullPayment) Release(amount decimal.Decimal) {
	p.Claimed = p.Claimed.Sub(amount)
	if p.Claimed.IsNegative() {
		p.Claimed = decimal.Zero
	}
}

// RefundChoice is how the amount of a refund is chosen (BTCPay's
// names).
type RefundChoice string

// Refund amount choices.
const (
	// RefundRateThen: the bitcoin the customer paid, at the rate of the
	// payment.
	RefundRateThen RefundChoice = "RateThen"
	// RefundCurrentRate: the invoice's price in its currency, paid at the
	// rate of the payout's approval.
	RefundCurrentRate RefundChoice = "CurrentRate"
	// RefundOverpaid: only what was paid beyond the invoice's amount.
	RefundOverpaid RefundChoice = "OverpaidAmount"
	// RefundCustom: an amount of the merchant's, in any currency.
	RefundCustom RefundChoice = "Custom"
)

// RefundRequest is a merchant's refund of an invoice.
type RefundRequest struct {
	Choice RefundChoice
	// CustomAmount and CustomCurrency are the amount of RefundCustom.
	CustomAmount   decimal.Decimal
	CustomCurrency Currency
	// SubtractPercentage is taken off the chosen amount (0 to 100).
	SubtractPercentage decimal.Decimal
	Description        string
	// Rate is the price of one bitcoin in CustomCurrency now, for a
	// custom refund in a fiat currency the invoice has no rate of
	// (neither its own nor the store's): what bounds it and what the
	// pull payment records. Unused otherwise.
	Rate decimal.Decimal
}

// RefundAmount is what a refund of inv pays, by r: an amount in a
// currency (SATS or fiat) and the rate it was worked out at. The
// invoice must have received final payments (settled, or paid late). The
// service fee the store paid on the invoice is not part of it
// (docs/decisions.md, "Refunds: pull payments and payouts").
func RefundAmount(inv *Invoice, r RefundRequest) (Currency, decimal.Decimal, decimal.Decimal, error) {
	paid := inv.ConfirmedPaid()
	if paid <= 0 {
		return "", decimal.Zero, decimal.Zero, ErrInvoiceNotPaid
	}
	if r.SubtractPercentage.IsNegative() || r.SubtractPercentage.GreaterThan(decHundred) {
		return "", decimal.Zero, decimal.Zero, InvalidFields([]FieldError{{Field: "subtractPercentage", Message: "must be between 0 and 100"}})
	}
	var (
		c      Currency
		amount decimal.Decimal
		rate   decimal.Decimal
	)
	switch r.Choice {
	case RefundRateThen:
		c, amount, rate = SATS, decimal.NewFromInt(int64(paid)), inv.ExchangeRate
	case RefundCurrentRate:
		c, amount, rate = inv.Currency, inv.InvoiceAmount, inv.RequestRate
	case RefundOverpaid:
		if paid <= inv.Amount || inv.Amount == 0 {
			return "", decimal.Zero, decimal.Zero, ErrInvoiceNotOverpaid
		}
		c, amount, rate = SATS, decimal.NewFromInt(int64(paid-inv.Amount)), inv.ExchangeRate
	case RefundCustom:
		cur, err := ParseCurrency(string(r.CustomCurrency))
		if err != nil {
			return "", decimal.Zero, decimal.Zero, InvalidFields([]FieldError{{Field: "customCurrency", Message: ErrorMessage(err)}})
		}
		if !r.CustomAmount.IsPositive() || r.CustomAmount.GreaterThan(maxFiatAmount) {
			return "", decimal.Zero, decimal.Zero, InvalidFields([]FieldError{{Field: "customAmount", Message: "must be a positive amount"}})
		}
		c, amount = cur, r.CustomAmount
		if cur == inv.StoreCurrency {
			rate = inv.ExchangeRate
		} else if cur == inv.Currency {
			rate = inv.RequestRate
		}
		if !rate.IsPositive() {
			rate = r.Rate
		}
	default:
		return "", decimal.Zero, decimal.Zero, InvalidFields([]FieldError{{Field: "refundVariant", Message: "must be RateThen, CurrentRate, OverpaidAmount or Custom"}})
	}
	c, amount = inSatsOrFiat(c, amount)
	if r.SubtractPercentage.IsPositive() {
		amount = amount.Mul(decHundred.Sub(r.SubtractPercentage)).Shift(-2)
	}
	// Rounded down to the unit's smallest part: a refund never pays more
	// than chosen.
	amount = amount.RoundDown(unitDecimals(c))
	if c == SATS {
		rate = decimal.Zero
	}
	if !amount.IsPositive() {
		return "", decimal.Zero, decimal.Zero, Errorf(Invalid, "the refund amount is zero")
	}
	if r.Choice == RefundCustom {
		if err := withinPaid(paid, c, amount, rate); err != nil {
			return "", decimal.Zero, decimal.Zero, err
		}
	}
	return c, amount, rate, nil
}

// withinPaid refuses a custom refund of amount in c worth more than the
// paid satoshis the invoice received, valued at rate (the price of one
// bitcoin in c the refund records): a refund never pays back more than
// was paid.
func withinPaid(paid Sats, c Currency, amount, rate decimal.Decimal) error {
	most := decimal.NewFromInt(int64(paid))
	if c != SATS {
		if !rate.IsPositive() {
			return Errorf(Unavailable, "no exchange rate for %s to check the refund against what the invoice received: try again later, or refund in BTC", c)
		}
		most = FiatValue(paid, c, rate)
	}
	if amount.GreaterThan(most) {
		return InvalidFields([]FieldError{{Field: "customAmount", Message: fmt.Sprintf("is more than the invoice received: at most %s %s", most, c)}})
	}
	return nil
}

// inSatsOrFiat returns an amount in BTC as satoshis; others unchanged.
func inSatsOrFiat(c Currency, amount decimal.Decimal) (Currency, decimal.Decimal) {
	if c == BTC {
		return SATS, amount.Mul(decSatsPerBTC)
	}
	return c, amount
}

// unitDecimals is the number of decimals of an amount in c: none for
// SATS, c's minor unit for fiat.
func unitDecimals(c Currency) int32 {
	if c == SATS {
		return 0
	}
	return c.Decimals()
}

// NewRefund returns the pull payment that refunds inv by r, at now.
func NewRefund(id string, inv *Invoice, r RefundRequest, now time.Time) (*PullPayment, error) {
	c, amount, rate, err := RefundAmount(inv, r)
	if err != nil {
		return nil, err
	}
	if len(r.Description) > MaxShortText {
		return nil, InvalidFields([]FieldError{{Field: "description", Message: "is too long"}})
	}
	return &PullPayment{
		ID: id, StoreID: inv.StoreID, InvoiceID: inv.ID, Description: r.Description,
		Currency: c, Amount: amount, Rate: rate, CreatedAt: now,
	}, nil
}

// PullPaymentInput is a merchant's pull payment that refunds no invoice.
type PullPaymentInput struct {
	Description string
	Amount      decimal.Decimal
	Currency    Currency
	ExpiresAt   time.Time
	// AutoApproveClaims is PullPayment.AutoApproveClaims.
	AutoApproveClaims bool
}

// NewPullPayment returns the pull payment in makes for store storeID.
func NewPullPayment(id, storeID string, in PullPaymentInput, now time.Time) (*PullPayment, error) {
	var fields []FieldError
	c, err := ParseCurrency(string(in.Currency))
	if err != nil {
		fields = append(fields, FieldError{Field: "currency", Message: ErrorMessage(err)})
	}
	c, amount := inSatsOrFiat(c, in.Amount)
	if !amount.IsPositive() || amount.GreaterThan(maxFiatAmount) || err == nil && !amount.Equal(amount.RoundDown(unitDecimals(c))) {
		fields = append(fields, FieldError{Field: "amount", Message: "must be a positive amount in whole units of the currency (satoshis for BTC)"})
	}
	if c == SATS && amount.GreaterThan(decimal.NewFromInt(int64(MaxSats))) {
		fields = append(fields, FieldError{Field: "amount", Message: "is more than 21 million bitcoin"})
	}
	if len(in.Description) > MaxShortText {
		fields = append(fields, FieldError{Field: "description", Message: "is too long"})
	}
	if !in.ExpiresAt.IsZero() && !in.ExpiresAt.After(now) {
		fields = append(fields, FieldError{Field: "expiresAt", Message: "must be in the future"})
	}
	if len(fields) > 0 {
		return nil, InvalidFields(fields)
	}
	return &PullPayment{ID: id, StoreID: storeID, Description: in.Description, Currency: c, Amount: amount, ExpiresAt: in.ExpiresAt,
		AutoApproveClaims: in.AutoApproveClaims, CreatedAt: now}, nil
}
