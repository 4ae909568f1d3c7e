package kassa

import (
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// DefaultPaymentRequestExpiry is how long a pay link stays payable when
// no expiryDate is given.
const DefaultPaymentRequestExpiry = 30 * 24 * time.Hour

// PaymentRequest is a pay link: a shareable page on which a customer pays
// a fixed amount.
type PaymentRequest struct {
	ID            string          `json:"id"`
	StoreID       string          `json:"storeId"`
	Amount        decimal.Decimal `json:"amount"`
	Title         string          `json:"title"`
	Currency      Currency        `json:"currency"`
	OrderID       string          `json:"orderId,omitempty"`
	Description   string          `json:"description,omitempty"`
	RedirectURL   string          `json:"redirectUrl,omitempty"`
	CustomerEmail string          `json:"customerEmail,omitempty"`
	// Discount is a percentage off the Bitcoin amount (5 means 5%); the
	// fiat amount shown is unchanged.
	Discount     decimal.Decimal `json:"discount"`
	InternalNote string          `json:"internalNote,omitempty"`
	ExpiryDate   time.Time       `json:"expiryDate"`
	Archived     bool            `json:"archived,omitempty"`
	// PaidInvoiceID is the invoice that settled the pay link, if any.
	PaidInvoiceID string    `json:"paidInvoiceId,omitempty"`
	CreatedAt     time.Time `json:"createdAt"`
	UpdatedAt     time.Time `json:"updatedAt"`
}

// Payment request statuses (docs/api.md, Pay links).
const (
	PaymentRequestPending   = "Pending"
	PaymentRequestCompleted = "Completed"
	PaymentRequestExpired   = "Expired"
	PaymentRequestArchived  = "Archived"
)

// PaymentRequestType is the only type of pay link: a fixed amount.
const PaymentRequestType = "Fixed"

// Status returns the pay link's status at now.
func (p *PaymentRequest) Status(now time.Time) string {
	switch {
	case p.Archived:
		return PaymentRequestArchived
	case p.PaidInvoiceID != "":
		return PaymentRequestCompleted
	case !now.Before(p.ExpiryDate):
		return PaymentRequestExpired
	}
	return PaymentRequestPending
}

// PaymentRequestInput is a create or update request for a pay link.
type PaymentRequestInput struct {
	Amount        decimal.Decimal
	HasAmount     bool
	Title         string
	Currency      Currency
	OrderID       string
	Description   string
	RedirectURL   string
	CustomerEmail string
	Discount      decimal.Decimal
	InternalNote  string
	ExpiryDate    time.Time
}

// Validate checks a pay link request. Currency may stay empty: the store
// currency is used.
func (in *PaymentRequestInput) Validate() error {
	var fields []FieldError
	add := func(field, msg string) { fields = append(fields, FieldError{field, msg}) }
	var currencyErr error
	if in.Currency != "" {
		var c Currency
		if c, currencyErr = ParseCurrency(string(in.Currency)); currencyErr == nil {
			in.Currency = c
		}
	}
	if !in.HasAmount {
		add("amount", "is required")
	} else {
		// Without a currency the store's is used; Update checks the
		// amount against it.
		c := in.Currency
		if currencyErr != nil {
			c = ""
		}
		if msg := amountProblem(in.Amount, c); msg != "" {
			add("amount", msg)
		}
	}
	if in.Title == "" {
		add("title", "is required")
	} else if utf8.RuneCountInString(in.Title) > MaxShortText {
		add("title", "must be at most 255 characters")
	}
	if currencyErr != nil {
		add("currency", ErrorMessage(currencyErr))
	}
	if in.Discount.IsNegative() || in.Discount.GreaterThanOrEqual(decHundred) {
		add("discount", "must be at least 0 and less than 100")
	}
	if utf8.RuneCountInString(in.Description) > 4096 {
		add("description", "must be at most 4096 characters")
	}
	if utf8.RuneCountInString(in.InternalNote) > 4096 {
		add("internalNote", "must be at most 4096 characters")
	}
	if len(in.OrderID) > MaxShortText {
		add("orderId", "must be at most 255 characters")
	}
	if in.RedirectURL != "" && !validURL(in.RedirectURL) {
		add("redirectUrl", "must be an absolute http or https URL")
	}
	if len(in.CustomerEmail) > MaxShortText {
		add("customerEmail", "must be at most 255 characters")
	} else if in.CustomerEmail != "" && !validEmail(in.CustomerEmail) {
		add("customerEmail", "is not an e-mail address")
	}
	if in.ExpiryDate.Year() > MaxYear {
		// Dates are written as ISO 8601, which has four digits for the
		// year.
		add("expiryDate", "must be before the year 10000")
	}
	if len(fields) > 0 {
		return InvalidFields(fields)
	}
	return nil
}

// MaxYear is the last year a date may fall in: ISO 8601 writes years with
// four digits.
const MaxYear = 9999

// ErrPaymentRequestArchived is returned for a change to an archived pay
// link, which can no longer change.
var ErrPaymentRequestArchived = Errorf(Conflict, "payment request is archived")

// ErrPaymentRequestPaid is returned for a change to a paid pay link,
// which is read-only: what it showed is what the customer paid.
var ErrPaymentRequestPaid = Errorf(Conflict, "payment request is paid and can no longer change: create a new one")

// NewPaymentRequest returns a pay link of store from a validated input:
// the store's currency when the input names none, and an expiry of
// DefaultPaymentRequestExpiry when it gives none.
func NewPaymentRequest(id string, store *Store, in *PaymentRequestInput, now time.Time) (*PaymentRequest, error) {
	p := &PaymentRequest{
		ID:         id,
		StoreID:    store.ID,
		Currency:   store.Currency,
		ExpiryDate: now.Add(DefaultPaymentRequestExpiry),
		CreatedAt:  now,
	}
	if err := p.Update(in, now); err != nil {
		return nil, err
	}
	return p, nil
}

// Update applies a validated input to the pay link, as a PUT does: the
// input is the new pay link. amount and title are required (Validate);
// orderId, description, redirectUrl, customerEmail, internalNote and
// discount take the input's value, so a field not sent is cleared;
// currency and expiryDate, which have no empty value, keep theirs when
// not sent. The amount is checked against the resulting currency. On an
// error the pay link is unchanged.
func (p *PaymentRequest) Update(in *PaymentRequestInput, now time.Time) error {
	if p.Archived {
		return ErrPaymentRequestArchived
	}
	if p.PaidInvoiceID != "" {
		return ErrPaymentRequestPaid
	}
	// Validate again with the currency the pay link will have, so that
	// the amount's decimals are checked with every other field.
	checked := *in
	if checked.Currency == "" {
		checked.Currency = p.Currency
	}
	if err := checked.ValidateAt(now); err != nil {
		return err
	}
	currency := checked.Currency
	p.Amount, p.Title, p.Currency = in.Amount, in.Title, currency
	p.OrderID, p.Description, p.InternalNote = in.OrderID, in.Description, in.InternalNote
	p.RedirectURL, p.CustomerEmail, p.Discount = in.RedirectURL, in.CustomerEmail, in.Discount
	if !in.ExpiryDate.IsZero() {
		p.ExpiryDate = in.ExpiryDate
	}
	p.UpdatedAt = now
	return nil
}

// ValidateAt is Validate at the time now: a given expiry must also lie
// after now, since a pay link that expired as it was saved could never be
// paid. Every bad field is reported.
func (in *PaymentRequestInput) ValidateAt(now time.Time) error {
	return withPastExpiry(in.Validate(), in.ExpiryDate, now)
}

// withPastExpiry adds to err (an Invalid error or nil) that expiry, when
// given, is not after now: a pay link that expired as it was saved could
// never be paid.
func withPastExpiry(err error, expiry, now time.Time) error {
	var fields []FieldError
	if e, ok := err.(*Error); ok {
		fields = e.Fields
	} else if err != nil {
		return err
	}
	if !expiry.IsZero() && !expiry.After(now) && expiry.Year() <= MaxYear {
		fields = append(fields, FieldError{"expiryDate", "must be in the future"})
	}
	if len(fields) == 0 {
		return err
	}
	return InvalidFields(fields)
}

// PayAmount is what paying the pay link asks for in currency c: the
// amount less the Bitcoin discount, rounded up to c's minor unit so that
// the merchant never receives less than the discounted price.
func (p *PaymentRequest) PayAmount(c Currency) decimal.Decimal {
	if !p.Discount.IsPositive() {
		return p.Amount
	}
	return p.Amount.Mul(decHundred.Sub(p.Discount)).Div(decHundred).RoundCeil(c.Decimals())
}

// InvoiceRequest returns the request of an invoice that pays the pay
// link; storeCurrency stands in for a pay link stored without a currency.
func (p *PaymentRequest) InvoiceRequest(storeCurrency Currency) *InvoiceRequest {
	c := p.Currency
	if c == "" {
		c = storeCurrency
	}
	redirect := p.RedirectURL != ""
	return &InvoiceRequest{
		Amount:                p.PayAmount(c),
		HasAmount:             true,
		Currency:              c,
		OrderID:               p.OrderID,
		BuyerEmail:            p.CustomerEmail,
		RedirectURL:           p.RedirectURL,
		RedirectAutomatically: &redirect,
		PaymentLinkID:         p.ID,
	}
}

// ParseDate reads a date filter or expiry date: ISO 8601 (a date, or a
// date-time with a zone) or Unix seconds.
func ParseDate(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, Errorf(Invalid, "date is empty")
	}
	allDigits := len(s) <= 12
	for i := 0; i < len(s) && allDigits; i++ {
		allDigits = s[i] >= '0' && s[i] <= '9'
	}
	if allDigits {
		var n int64
		for i := 0; i < len(s); i++ {
			n = n*10 + int64(s[i]-'0')
		}
		return time.Unix(n, 0).UTC(), nil
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05Z0700", "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), nil
		}
	}
	return time.Time{}, Errorf(Invalid, "%q is neither an ISO 8601 date nor a Unix timestamp", s)
}
