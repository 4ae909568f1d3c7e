package kassa

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/mail"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"
)

// Limits of invoice requests.
const (
	MaxWalletMessage = 255
	MaxMetadataBytes = 16 << 10
	// MaxMetadataDepth bounds how deep objects and arrays nest in
	// metadata: 16 KiB of brackets nest 8,000 deep, which every reader
	// (pages, webhooks, exports) would have to walk.
	MaxMetadataDepth = 32
	MaxShortText     = 255
	MaxURL           = 2048
)

// DefaultInvoiceExpiry is how long an invoice waits for its payment.
const DefaultInvoiceExpiry = 15 * time.Minute

// DefaultMonitoring is how long an expired invoice's address is watched.
const DefaultMonitoring = 24 * time.Hour

// Bounds of the terms a request may set for its own invoice.
const (
	// MaxConfirmationsRequired bounds the confirmations an on-chain
	// payment may be made to wait for, a store's and an invoice's.
	MaxConfirmationsRequired = 100
	// MinInvoiceExpiry and MaxInvoiceExpiry bound an invoice's own
	// expiry: a customer needs some time to pay, and the rate an invoice
	// locks must not be held for long (30 days, a payment request's
	// default life).
	MinInvoiceExpiry = 30 * time.Second
	MaxInvoiceExpiry = 30 * 24 * time.Hour
)

// InvoiceRequest is a request to create an invoice, as the API takes it.
type InvoiceRequest struct {
	// Amount is in Currency; zero with HasAmount false makes a top-up
	// invoice that accepts any amount.
	Amount         decimal.Decimal
	HasAmount      bool
	Currency       Currency
	EnabledMethods []PaymentMethod
	BuyerEmail     string
	RedirectURL    string
	// RedirectAutomatically, when not nil, is whether the checkout sends
	// the customer to the redirect URL by itself once paid; nil takes
	// the store's default.
	RedirectAutomatically *bool
	OrderID               string
	WalletMessage         string
	Metadata              json.RawMessage
	ReferralCode          string
	PaymentLinkID         string
	// Language is the customer pages' language, a BCP 47 tag
	// (Invoice.Language).
	Language string
	// ConfirmationsRequired, when not nil, is how many confirmations an
	// on-chain payment of the invoice needs (0 to
	// MaxConfirmationsRequired); nil takes the store's.
	ConfirmationsRequired *int32
	// Expiry, when not zero, is how long the invoice waits for its
	// payment (MinInvoiceExpiry to MaxInvoiceExpiry); zero takes the
	// service's (InvoiceTerms.Expiry).
	Expiry time.Duration
}

// Validate checks the request and fills its defaults (currency EUR, both
// payment methods).
func (r *InvoiceRequest) Validate() error {
	var fields []FieldError
	add := func(field, msg string) { fields = append(fields, FieldError{field, msg}) }
	if r.Currency == "" {
		r.Currency = EUR
	} else if c, err := ParseCurrency(string(r.Currency)); err != nil {
		add("currency", ErrorMessage(err))
	} else {
		r.Currency = c
	}
	if r.HasAmount {
		if msg := amountProblem(r.Amount, r.Currency); msg != "" {
			add("amount", msg)
		}
	}
	if len(r.EnabledMethods) == 0 {
		r.EnabledMethods = []PaymentMethod{MethodOnchain, MethodLightning}
	}
	if utf8.RuneCountInString(r.WalletMessage) > MaxWalletMessage {
		add("walletMessage", "must be at most 255 characters")
	}
	if r.BuyerEmail != "" && (len(r.BuyerEmail) > MaxShortText || !validEmail(r.BuyerEmail)) {
		add("buyerEmail", "is not an e-mail address")
	}
	if r.Language != "" && !ValidLanguageTag(r.Language) {
		add("language", "must be a language tag such as en, de-CH or pt-BR")
	}
	if r.RedirectURL != "" && !validURL(r.RedirectURL) {
		add("redirectUrl", "must be an absolute http or https URL")
	}
	if len(r.OrderID) > MaxShortText {
		add("orderId", "must be at most 255 characters")
	}
	if len(r.ReferralCode) > MaxShortText {
		add("referralCode", "must be at most 255 characters")
	}
	if c := r.ConfirmationsRequired; c != nil && (*c < 0 || *c > MaxConfirmationsRequired) {
		add("confirmationsRequired", fmt.Sprintf("must be from 0 to %d confirmations", MaxConfirmationsRequired))
	}
	if r.Expiry != 0 && (r.Expiry < MinInvoiceExpiry || r.Expiry > MaxInvoiceExpiry) {
		add("expiry", fmt.Sprintf("must be from %s to %s", MinInvoiceExpiry, MaxInvoiceExpiry))
	}
	if len(r.Metadata) > 0 {
		if len(r.Metadata) > MaxMetadataBytes {
			add("metadata", "must be at most 16 KiB")
		} else if r.Metadata[0] != '{' || !json.Valid(r.Metadata) {
			add("metadata", "must be a JSON object")
		} else if jsonDepth(r.Metadata) > MaxMetadataDepth {
			add("metadata", fmt.Sprintf("must nest objects and arrays at most %d levels deep", MaxMetadataDepth))
		}
	}
	if len(fields) > 0 {
		return InvalidFields(fields)
	}
	return nil
}

// amountProblem says what is wrong with a requested amount in currency c
// (empty: not known yet), or "" when nothing is: it must be positive,
// have no more decimal places than c, and for BTC and SATS be no more
// than every bitcoin there will be. A fiat amount is bounded once
// converted (NewInvoice).
func amountProblem(amount decimal.Decimal, c Currency) string {
	switch {
	case !amount.IsPositive():
		return "must be greater than 0"
	case c == "":
		return ""
	case amount.Exponent() < -c.Decimals() && !amount.Equal(amount.Round(c.Decimals())):
		return fmt.Sprintf("has more decimal places than %s allows", c)
	case c == BTC && amount.GreaterThan(decimal.NewFromInt(int64(MaxSats/SatsPerBTC))),
		c == SATS && amount.GreaterThan(decimal.NewFromInt(int64(MaxSats))):
		return "is more than 21 million bitcoin"
	}
	return ""
}

// validEmail reports whether s is one e-mail address.
func validEmail(s string) bool {
	_, err := mail.ParseAddress(s)
	return err == nil
}

func validURL(s string) bool {
	if len(s) > MaxURL {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// InvoiceTerms are what the service fixes when it creates an invoice: the
// locked rates, the default expiry, the monitoring and the clock.
type InvoiceTerms struct {
	// RequestRate is the price of one bitcoin in the request currency.
	RequestRate decimal.Decimal
	// StoreRate is the price of one bitcoin in the store currency.
	StoreRate  decimal.Decimal
	Now        time.Time
	Expiry     time.Duration
	Monitoring time.Duration
}

// NewInvoice returns a new invoice for store from a validated request. The
// on-chain address and Lightning invoice are attached by the caller.
func NewInvoice(id string, store *Store, r *InvoiceRequest, t InvoiceTerms) (Invoice, []Effect, error) {
	var sats Sats
	methods := r.EnabledMethods
	var onchainReason string
	if r.HasAmount {
		var err error
		if sats, err = ToSats(r.Amount, r.Currency, t.RequestRate); err != nil {
			if ErrorCode(err) == Invalid {
				return Invoice{}, nil, InvalidFields([]FieldError{{"amount", ErrorMessage(err)}})
			}
			return Invoice{}, nil, err
		}
		if sats < 1 {
			return Invoice{}, nil, InvalidFields([]FieldError{{"amount", "is less than one satoshi"}})
		}
		if max := store.MaxInvoice(); sats > max {
			return Invoice{}, nil, InvalidFields([]FieldError{{"amount", fmt.Sprintf("is %d sat, more than the store's maximum of %d sat per invoice", sats, max)}})
		}
		if min := store.OnchainMin(); sats < min && slices.Contains(methods, MethodOnchain) {
			methods = slices.DeleteFunc(slices.Clone(methods), func(m PaymentMethod) bool { return m == MethodOnchain })
			if len(methods) == 0 {
				return Invoice{}, nil, InvalidFields([]FieldError{{"amount", fmt.Sprintf(
					"is %d sat, below the store's on-chain minimum of %d sat, and Lightning is not enabled", sats, min)}})
			}
			onchainReason = fmt.Sprintf("amounts below %d sat are paid by Lightning only: on-chain, the network fee would eat too much of them", min)
		}
	}
	metadata := r.Metadata
	if r.OrderID != "" {
		metadata = withOrderID(metadata, r.OrderID)
	}
	now := t.Now.UTC().Truncate(time.Millisecond)
	expiry := t.Expiry
	if r.Expiry != 0 {
		expiry = r.Expiry
	}
	expiresAt := now.Add(expiry).Truncate(time.Millisecond)
	redirect := store.DefaultRedirectAutomatically
	if r.RedirectAutomatically != nil {
		redirect = *r.RedirectAutomatically
	}
	confirmations := store.ConfirmationsRequired
	if r.ConfirmationsRequired != nil {
		confirmations = *r.ConfirmationsRequired
	}
	inv := Invoice{
		ID:                       id,
		StoreID:                  store.ID,
		PaymentLinkID:            r.PaymentLinkID,
		TerminalName:             store.Name,
		Status:                   InvoiceNew,
		Amount:                   sats,
		InvoiceAmount:            r.Amount,
		Currency:                 r.Currency,
		StoreCurrency:            store.Currency,
		ExchangeRate:             t.StoreRate,
		RequestRate:              t.RequestRate,
		OrderID:                  r.OrderID,
		BuyerEmail:               r.BuyerEmail,
		RedirectURL:              cmp.Or(r.RedirectURL, store.DefaultRedirectURL),
		RedirectAutomatically:    redirect,
		WalletMessage:            r.WalletMessage,
		ReferralCode:             r.ReferralCode,
		Language:                 r.Language,
		Metadata:                 metadata,
		EnabledMethods:           methods,
		OnchainUnavailableReason: onchainReason,
		PercentFee:               store.PercentFee,
		Tolerance:                store.UnderpaymentTolerance,
		ConfirmationsRequired:    confirmations,
		CreatedAt:                now,
		UpdatedAt:                now,
		ExpiresAt:                expiresAt,
		MonitorUntil:             expiresAt.Add(t.Monitoring),
	}
	return inv, []Effect{Emit{Type: EventNew}, ArmTimer{At: expiresAt}}, nil
}

// withOrderID returns metadata with orderId set, so that webhooks echo it
// as metadata.orderId. An orderId already in metadata wins.
func withOrderID(metadata json.RawMessage, orderID string) json.RawMessage {
	m := map[string]json.RawMessage{}
	if len(metadata) > 0 {
		if err := json.Unmarshal(metadata, &m); err != nil {
			return metadata
		}
	}
	if _, ok := m["orderId"]; ok {
		return metadata
	}
	m["orderId"], _ = json.Marshal(orderID)
	out, err := json.Marshal(m)
	if err != nil {
		return metadata
	}
	return out
}

// Deadline is when the invoice's timer must fire next: its expiry while
// New, the end of monitoring while Processing or Expired. ok is false when
// the invoice waits for nothing.
func (inv *Invoice) Deadline() (at time.Time, ok bool) {
	switch inv.Status {
	case InvoiceNew:
		return inv.ExpiresAt, true
	case InvoiceProcessing, InvoiceExpired:
		if !inv.MonitoringDone {
			return inv.MonitorUntil, true
		}
	}
	return time.Time{}, false
}

// DeadlineInput is the input to apply when the deadline is reached.
func (inv *Invoice) DeadlineInput(at time.Time) InvoiceInput {
	if inv.Status == InvoiceNew {
		return ExpiryReached{At: at}
	}
	return MonitoringEnded{At: at}
}

// jsonDepth returns how deep objects and arrays nest in the valid JSON
// document doc: 1 for {}, 2 for {"a": []}.
func jsonDepth(doc []byte) int {
	depth, deepest := 0, 0
	inString, escaped := false, false
	for _, c := range doc {
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case inString && c == '"':
			inString = false
		case inString:
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			deepest = max(deepest, depth)
		case c == '}' || c == ']':
			depth--
		}
	}
	return deepest
}

// maxLanguageTag bounds a language tag (BCP 47's longest registered
// forms are far shorter).
const maxLanguageTag = 35

// ValidLanguageTag reports whether s has the shape of a BCP 47 language
// tag: a language subtag of 2 to 8 letters, then subtags of 1 to 8
// letters or digits, joined by hyphens ("en", "de-CH", "zh-Hant-TW").
// Whether Kassa speaks it is the pages' concern.
func ValidLanguageTag(s string) bool {
	if s == "" || len(s) > maxLanguageTag {
		return false
	}
	for i, sub := range strings.Split(s, "-") {
		if len(sub) == 0 || len(sub) > 8 || (i == 0 && len(sub) < 2) {
			return false
		}
		for _, c := range sub {
			letter := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
			if !letter && (i == 0 || c < '0' || c > '9') {
				return false
			}
		}
	}
	return true
}
