package kassa

import (
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"
)

// InvoiceStatus is the state of an invoice. The numbers are on disk.
type InvoiceStatus uint8

// Invoice states (docs/api.md, Invoices).
const (
	InvoiceNew        InvoiceStatus = 1
	InvoiceProcessing InvoiceStatus = 2
	InvoiceSettled    InvoiceStatus = 3
	InvoiceExpired    InvoiceStatus = 4
	InvoiceInvalid    InvoiceStatus = 5
)

func (s InvoiceStatus) String() string {
	switch s {
	case InvoiceNew:
		return "New"
	case InvoiceProcessing:
		return "Processing"
	case InvoiceSettled:
		return "Settled"
	case InvoiceExpired:
		return "Expired"
	case InvoiceInvalid:
		return "Invalid"
	}
	return "Unknown"
}

// Open reports whether the invoice still waits for its payment or its
// expiry timer.
func (s InvoiceStatus) Open() bool { return s == InvoiceNew }

// AdditionalStatus qualifies an invoice status. The numbers are on disk.
type AdditionalStatus uint8

// Additional statuses (docs/api.md, Invoices).
const (
	StatusNone                AdditionalStatus = 0
	StatusUnderpaid           AdditionalStatus = 1
	StatusOverpaid            AdditionalStatus = 2
	StatusPaidAfterExpiration AdditionalStatus = 3
)

func (s AdditionalStatus) String() string {
	switch s {
	case StatusUnderpaid:
		return "Underpaid"
	case StatusOverpaid:
		return "Overpaid"
	case StatusPaidAfterExpiration:
		return "PaidAfterExpiration"
	}
	return "None"
}

// PaymentMethod is how a customer pays. The numbers are on disk. It is
// 16 bits wide so that a list of methods encodes as JSON numbers, not as
// base64 bytes.
type PaymentMethod uint16

// Payment methods.
const (
	MethodOnchain   PaymentMethod = 1
	MethodLightning PaymentMethod = 2
)

func (m PaymentMethod) String() string {
	switch m {
	case MethodOnchain:
		return "BTC"
	case MethodLightning:
		return "Lightning"
	}
	return "Unknown"
}

// ParsePaymentMethod reads a method as the API names it ("BTC",
// "Lightning"; also "onchain", "BTC-LightningNetwork" and similar).
func ParsePaymentMethod(s string) (PaymentMethod, error) {
	switch normalizeWord(s) {
	case "btc", "onchain", "btconchain", "bitcoin":
		return MethodOnchain, nil
	case "lightning", "ln", "btclightning", "btclightningnetwork", "btcln", "lightningnetwork":
		return MethodLightning, nil
	}
	return 0, Errorf(Invalid, "unknown payment method %q: use BTC or Lightning", s)
}

func normalizeWord(s string) string {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'A' && c <= 'Z':
			out = append(out, c+'a'-'A')
		case c >= 'a' && c <= 'z' || c >= '0' && c <= '9':
			out = append(out, c)
		}
	}
	return string(out)
}

// EventType is the type of a webhook event.
type EventType string

// Webhook event types (docs/api.md, Webhooks).
const (
	EventNew        EventType = "New"
	EventProcessing EventType = "Processing"
	EventSettled    EventType = "Settled"
	EventExpired    EventType = "Expired"
)

// EventTypes lists every event type in the order of an invoice's life.
var EventTypes = []EventType{EventNew, EventProcessing, EventSettled, EventExpired}

// Payment is one payment received for an invoice: an on-chain output or a
// settled Lightning invoice.
type Payment struct {
	// ID identifies the payment within its invoice: "txid:vout" on-chain,
	// the payment hash on Lightning.
	ID          string        `json:"id"`
	Method      PaymentMethod `json:"method"`
	TxID        string        `json:"txid"`
	Vout        uint32        `json:"vout,omitempty"`
	Amount      Sats          `json:"amount"`
	AmountMSat  MSat          `json:"amountMsat,omitempty"`
	Destination string        `json:"destination"`
	// Confirmations is the depth of the output's block; 0 in the mempool.
	Confirmations int32     `json:"confirmations"`
	NetworkFee    Sats      `json:"networkFee,omitempty"`
	FeeRate       Sats      `json:"feeRate,omitempty"` // sat/vB
	ReplaceByFee  bool      `json:"rbf,omitempty"`
	Dropped       bool      `json:"dropped,omitempty"` // double-spent, replaced or reorged out
	ReceivedAt    time.Time `json:"receivedAt"`
	// Accounted is set once the payment is in the store's ledger: by the
	// settlement, or as a payment received after it. A payment is
	// accounted at most once, whatever happens to it later.
	Accounted bool `json:"accounted,omitempty"`
	// BlockHeight is the height of the output's block; 0 in the mempool.
	BlockHeight int64 `json:"blockHeight,omitempty"`
}

// Invoice is an invoice and everything received for it. It is the state of
// an invoice actor and, encoded, its snapshot.
type Invoice struct {
	ID            string `json:"id"`
	StoreID       string `json:"storeId"`
	PaymentLinkID string `json:"paymentLinkId,omitempty"`
	TerminalName  string `json:"terminalName,omitempty"`

	Status           InvoiceStatus    `json:"status"`
	AdditionalStatus AdditionalStatus `json:"additionalStatus"`

	// Amount is what the invoice asks for in satoshis; zero for a top-up
	// invoice that accepts any amount.
	Amount Sats `json:"amount"`
	// InvoiceAmount is the amount of the request, in Currency.
	InvoiceAmount decimal.Decimal `json:"invoiceAmount"`
	Currency      Currency        `json:"currency"`
	// StoreCurrency is the store's currency when the invoice was created;
	// fiat values are in it.
	StoreCurrency Currency `json:"storeCurrency"`
	// ExchangeRate is the price of one bitcoin in StoreCurrency, locked at
	// creation. Every fiat value of the invoice and its transaction uses it.
	ExchangeRate decimal.Decimal `json:"exchangeRate"`
	// RequestRate is the price of one bitcoin in Currency used to compute
	// Amount (equal to ExchangeRate when both currencies are the same).
	RequestRate decimal.Decimal `json:"requestRate"`

	OrderID               string          `json:"orderId,omitempty"`
	BuyerEmail            string          `json:"buyerEmail,omitempty"`
	RedirectURL           string          `json:"redirectUrl,omitempty"`
	RedirectAutomatically bool            `json:"redirectAutomatically,omitempty"`
	WalletMessage         string          `json:"walletMessage,omitempty"`
	ReferralCode          string          `json:"referralCode,omitempty"`
	Metadata              json.RawMessage `json:"metadata,omitempty"`
	EnabledMethods        []PaymentMethod `json:"enabledMethods"`
	// Language is the BCP 47 tag of the language the request asked the
	// customer pages to speak ("ja", "pt-BR"); empty for the browser's.
	// The pages take the closest one they have, else go on as if empty.
	Language string `json:"language,omitempty"`

	// OnchainUnavailableReason says why on-chain is not offered although
	// the request allowed it (an amount below the store's on-chain
	// minimum); empty otherwise.
	OnchainUnavailableReason string `json:"onchainUnavailableReason,omitempty"`
	OnchainAddress           string `json:"onchainAddress,omitempty"`
	// DerivationIndex is the index i of OnchainAddress, m/0/i below the
	// store's xpub; nil when the address was not derived from one.
	DerivationIndex  *uint32 `json:"derivationIndex,omitempty"`
	LightningInvoice string  `json:"lightningInvoice,omitempty"`
	PaymentHash      string  `json:"paymentHash,omitempty"`

	// Rules copied from the store at creation, so that settling later
	// gives the same result whatever the store changes meanwhile.
	PercentFee            decimal.Decimal `json:"percentFee"`
	Tolerance             decimal.Decimal `json:"tolerance"`
	ConfirmationsRequired int32           `json:"confirmationsRequired"`

	Payments []Payment `json:"payments,omitempty"`

	CreatedAt time.Time `json:"createdAt"`
	UpdatedAt time.Time `json:"updatedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// MonitorUntil is when the on-chain address stops being watched after
	// expiry, and when a Processing invoice that never confirmed turns
	// Invalid.
	MonitorUntil time.Time `json:"monitorUntil"`
	SettledAt    time.Time `json:"settledAt,omitzero"`
	// SettledBy is the method of the payment that settled the invoice.
	SettledBy PaymentMethod `json:"settledBy,omitempty"`
	// MonitoringDone is set once the invoice waits for no timer and its
	// address is no longer watched.
	MonitoringDone bool `json:"monitoringDone,omitempty"`
	// SettlementReverted is set when a reorg or double spend took away
	// the on-chain money a settlement counted: the operator must look at
	// it (docs/decisions.md, "Reorgs, replacements and dropped payments").
	SettlementReverted bool `json:"settlementReverted,omitempty"`
	// Archived is set once a person archived the invoice (Archived):
	// lists leave it out unless asked; it is still read by id and paid.
	Archived bool `json:"archived,omitempty"`
}

// Accepts reports whether the invoice takes payments by method m.
func (inv *Invoice) Accepts(m PaymentMethod) bool {
	for _, e := range inv.EnabledMethods {
		if e == m {
			return true
		}
	}
	return false
}

// TotalPaid is the sum of every payment not dropped, seen or confirmed.
func (inv *Invoice) TotalPaid() Sats {
	var total Sats
	for _, p := range inv.Payments {
		if !p.Dropped {
			total += p.Amount
		}
	}
	return total
}

// ConfirmedPaid is the sum of the payments that count as final: Lightning
// payments and on-chain outputs with enough confirmations.
func (inv *Invoice) ConfirmedPaid() Sats {
	var total Sats
	for i := range inv.Payments {
		if inv.Final(&inv.Payments[i]) {
			total += inv.Payments[i].Amount
		}
	}
	return total
}

// Final reports whether p counts as received for good: a Lightning
// payment, or an on-chain output with enough confirmations that was not
// dropped.
func (inv *Invoice) Final(p *Payment) bool {
	return !p.Dropped && (p.Method == MethodLightning || p.Confirmations >= inv.ConfirmationsRequired)
}

// FiatAmount is Amount in the store currency at the locked rate.
func (inv *Invoice) FiatAmount() decimal.Decimal {
	if inv.Currency == inv.StoreCurrency {
		return inv.InvoiceAmount
	}
	return FiatValue(inv.Amount, inv.StoreCurrency, inv.ExchangeRate)
}

// PaidInCurrency is TotalPaid in Currency, the currency the invoice was
// priced in: InvoiceAmount itself when exactly Amount was paid (Amount
// is InvoiceAmount rounded up to a satoshi, so converting back could
// miss it by a minor unit), otherwise the sats at RequestRate.
func (inv *Invoice) PaidInCurrency() decimal.Decimal {
	paid := inv.TotalPaid()
	if paid == inv.Amount && inv.Amount > 0 {
		return inv.InvoiceAmount
	}
	return FiatValue(paid, inv.Currency, inv.RequestRate)
}

// FiatTotalPaid is TotalPaid in the store currency at the locked rate.
func (inv *Invoice) FiatTotalPaid() decimal.Decimal {
	return FiatValue(inv.TotalPaid(), inv.StoreCurrency, inv.ExchangeRate)
}
