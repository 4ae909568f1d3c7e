package kassa

import (
	"time"

	"github.com/shopspring/decimal"
)

// TransactionType tells a deposit from a fee line. The numbers are on disk.
type TransactionType uint8

// Transaction types.
const (
	TransactionTransfer TransactionType = 1
	TransactionFee      TransactionType = 2
	TransactionTopUp    TransactionType = 3
)

func (t TransactionType) String() string {
	switch t {
	case TransactionTransfer:
		return "transfer"
	case TransactionFee:
		return "fee"
	case TransactionTopUp:
		return "topup"
	}
	return "unknown"
}

// TransactionStatus is the state of a transaction. The numbers are on disk.
type TransactionStatus uint8

// Transaction states.
const (
	TransactionPending TransactionStatus = 1
	TransactionSettled TransactionStatus = 2
	TransactionFailed  TransactionStatus = 3
)

func (s TransactionStatus) String() string {
	switch s {
	case TransactionPending:
		return "Pending"
	case TransactionSettled:
		return "Settled"
	case TransactionFailed:
		return "Failed"
	}
	return "Unknown"
}

// Transaction is one line of a store's ledger: the deposit of a settled
// invoice (transfer), the service fee debited from the prepaid balance
// (fee), or a top-up of that balance.
type Transaction struct {
	ID        int64             `json:"id"`
	StoreID   string            `json:"storeId"`
	InvoiceID string            `json:"invoiceId,omitempty"`
	Type      TransactionType   `json:"type"`
	Status    TransactionStatus `json:"status"`
	// Amount is what reached the store's wallet (transfer), or the amount
	// debited (fee) or credited (top-up) on the prepaid balance.
	Amount Sats `json:"amount"`
	// FullAmount is what the customer paid.
	FullAmount Sats `json:"fullAmount"`
	// FeeAmount is the service fee of the invoice.
	FeeAmount Sats `json:"feeAmount"`
	// AmountInPreferredCurrency is Amount in Currency at the invoice's
	// locked rate.
	AmountInPreferredCurrency decimal.Decimal `json:"amountInPreferredCurrency"`
	Currency                  Currency        `json:"currency"`
	DepositMethod             PaymentMethod   `json:"depositMethod,omitempty"`
	Hash                      string          `json:"hash,omitempty"`
	Comment                   string          `json:"comment,omitempty"`
	CreatedAt                 time.Time       `json:"createdAt"`
}

// BalanceDelta is the change of the store's prepaid balance by t.
func (t *Transaction) BalanceDelta() Sats {
	switch t.Type {
	case TransactionFee:
		return -t.Amount
	case TransactionTopUp:
		return t.Amount
	}
	return 0
}

// SettlementTransactions returns the ledger lines of a settled invoice:
// the deposit and, when the fee is not zero, the fee line. IDs are left to
// storage.
func SettlementTransactions(inv *Invoice, s Settle, at time.Time) []Transaction {
	transfer := Transaction{
		StoreID:       inv.StoreID,
		InvoiceID:     inv.ID,
		Type:          TransactionTransfer,
		Status:        TransactionSettled,
		Amount:        s.FullAmount,
		FullAmount:    s.FullAmount,
		FeeAmount:     s.Fee,
		Currency:      inv.StoreCurrency,
		DepositMethod: s.Method,
		Hash:          s.Hash,
		Comment:       inv.WalletMessage,
		CreatedAt:     at,
	}
	transfer.AmountInPreferredCurrency = FiatValue(transfer.Amount, inv.StoreCurrency, inv.ExchangeRate)
	lines := []Transaction{transfer}
	if s.Fee > 0 {
		lines = append(lines, Transaction{
			StoreID:                   inv.StoreID,
			InvoiceID:                 inv.ID,
			Type:                      TransactionFee,
			Status:                    TransactionSettled,
			Amount:                    s.Fee,
			FullAmount:                s.FullAmount,
			FeeAmount:                 s.Fee,
			AmountInPreferredCurrency: FiatValue(s.Fee, inv.StoreCurrency, inv.ExchangeRate),
			Currency:                  inv.StoreCurrency,
			DepositMethod:             s.Method,
			Hash:                      s.Hash,
			Comment:                   "service fee " + inv.PercentFee.String() + "%",
			CreatedAt:                 at,
		})
	}
	return lines
}
