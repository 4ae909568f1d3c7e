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
	// TransactionRefund debits the prepaid balance by an approved payout
	// (a refund); TransactionRefundReturned credits it back when the
	// payout failed, was cancelled or was paid outside Kassa;
	// TransactionNetworkFee debits what paying a payout cost in fees.
	TransactionRefund         TransactionType = 4
	TransactionRefundReturned TransactionType = 5
	TransactionNetworkFee     TransactionType = 6
)

func (t TransactionType) String() string {
	switch t {
	case TransactionTransfer:
		return "transfer"
	case TransactionFee:
		return "fee"
	case TransactionTopUp:
		return "topup"
	case TransactionRefund:
		return "refund"
	case TransactionRefundReturned:
		return "refund_returned"
	case TransactionNetworkFee:
		return "network_fee"
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
	// TransactionHeld: the money is on the service's node and waits
	// for the store to set a Lightning address, to which it is then
	// forwarded (Pending, then Settled).
	TransactionHeld TransactionStatus = 4
)

func (s TransactionStatus) String() string {
	switch s {
	case TransactionPending:
		return "Pending"
	case TransactionSettled:
		return "Settled"
	case TransactionFailed:
		return "Failed"
	case TransactionHeld:
		return "Held"
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
	// RoutingFee is what forwarding the line's money to the store's
	// Lightning address cost in routing fees (its share of the forward's),
	// rounded up to a satoshi; zero for a line that was not forwarded.
	RoutingFee Sats `json:"routingFee,omitempty"`
	// AmountInPreferredCurrency is Amount in Currency at Rate. Every line
	// uses the store's currency, top-ups included, so that the column has
	// one unit.
	AmountInPreferredCurrency decimal.Decimal `json:"amountInPreferredCurrency"`
	// Currency is the store's currency when the line was written.
	Currency Currency `json:"currency"`
	// Rate is the price of one bitcoin in Currency the line is valued at:
	// the invoice's locked rate, or the rate at the time of a top-up.
	// Zero when no rate was available (the value is then zero too).
	Rate          decimal.Decimal `json:"rate"`
	DepositMethod PaymentMethod   `json:"depositMethod,omitempty"`
	Hash          string          `json:"hash,omitempty"`
	Comment       string          `json:"comment,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
}

// BalanceDelta is the change of the store's prepaid balance by t.
func (t *Transaction) BalanceDelta() Sats {
	switch t.Type {
	case TransactionFee, TransactionRefund, TransactionNetworkFee:
		return -t.Amount
	case TransactionTopUp, TransactionRefundReturned:
		return t.Amount
	}
	return 0
}

// SettlementTransactions returns the ledger lines of a settled invoice:
// the deposit and, when the fee is not zero, the fee line. IDs are left to
// storage.
func SettlementTransactions(inv *Invoice, s Settle, at time.Time) []Transaction {
	return ledgerLines(inv, s.FullAmount, s.Fee, s.Method, s.Hash, inv.WalletMessage, at)
}

// PaidAgainComment is the comment of the deposit of a payment received
// after its invoice settled.
const PaidAgainComment = "paid again after the invoice settled"

// PaidAgainTransactions returns the ledger lines of a payment received
// after the invoice settled: its deposit and its service fee, as for any
// payment that reaches the store through the service.
func PaidAgainTransactions(inv *Invoice, p PaidAgain, at time.Time) []Transaction {
	return ledgerLines(inv, p.Amount, p.Fee, p.Method, p.Hash, PaidAgainComment, at)
}

// ledgerLines returns a deposit of full satoshis and, when fee is not
// zero, its fee line, valued in the store currency at the invoice's
// locked rate.
func ledgerLines(inv *Invoice, full, fee Sats, method PaymentMethod, hash, comment string, at time.Time) []Transaction {
	transfer := Transaction{
		StoreID:                   inv.StoreID,
		InvoiceID:                 inv.ID,
		Type:                      TransactionTransfer,
		Status:                    TransactionSettled,
		Amount:                    full,
		FullAmount:                full,
		FeeAmount:                 fee,
		AmountInPreferredCurrency: FiatValue(full, inv.StoreCurrency, inv.ExchangeRate),
		Currency:                  inv.StoreCurrency,
		Rate:                      inv.ExchangeRate,
		DepositMethod:             method,
		Hash:                      hash,
		Comment:                   comment,
		CreatedAt:                 at,
	}
	lines := []Transaction{transfer}
	if fee > 0 {
		lines = append(lines, Transaction{
			StoreID:                   inv.StoreID,
			InvoiceID:                 inv.ID,
			Type:                      TransactionFee,
			Status:                    TransactionSettled,
			Amount:                    fee,
			FullAmount:                full,
			FeeAmount:                 fee,
			AmountInPreferredCurrency: FiatValue(fee, inv.StoreCurrency, inv.ExchangeRate),
			Currency:                  inv.StoreCurrency,
			Rate:                      inv.ExchangeRate,
			DepositMethod:             method,
			Hash:                      hash,
			Comment:                   "service fee " + inv.PercentFee.String() + "%",
			CreatedAt:                 at,
		})
	}
	return lines
}

// Custody says which money paid to invoices is on the service's own
// Lightning node, from where it is forwarded to the store's Lightning
// address (docs/decisions.md, "Forwarding").
type Custody struct {
	// Forwarding says that the service forwards the money on its node.
	// Without it, no ledger line waits for a forward: every line is
	// recorded as paid to the store.
	Forwarding bool
	// Onchain says that an on-chain address derived from no account key
	// (that of a store without an xpub) is the service's wallet's
	// (docs/decisions.md, "On-chain payments without an xpub").
	Onchain bool
}

// Holds reports whether money paid to inv by method is on the service's
// node: Lightning always; on-chain when inv's address is the service
// wallet's.
func (c Custody) Holds(inv *Invoice, method PaymentMethod) bool {
	switch method {
	case MethodLightning:
		return true
	case MethodOnchain:
		return c.Forwarding && c.Onchain && inv.OnchainAddress != "" && inv.DerivationIndex == nil
	}
	return false
}

// Paid is how much of inv's final payments is on the service's node.
func (c Custody) Paid(inv *Invoice) Sats {
	var total Sats
	for i := range inv.Payments {
		p := &inv.Payments[i]
		if inv.Final(p) && c.Holds(inv, p.Method) {
			total += p.Amount
		}
	}
	return total
}

// Wakes reports whether effects leave money on the service's node to
// forward: a settle of an invoice paid (partly) to it, or a payment made
// again to it.
func (c Custody) Wakes(inv *Invoice, effects []Effect) bool {
	if !c.Forwarding {
		return false
	}
	for _, e := range effects {
		switch e := e.(type) {
		case Settle:
			if c.Paid(inv) > 0 {
				return true
			}
		case PaidAgain:
			if c.Holds(inv, e.Method) {
				return true
			}
		}
	}
	return false
}

// SettlementLine is a ledger line that an invoice's settle, or a payment
// after it settled, makes, with the part of its money that the service
// forwards to the store.
type SettlementLine struct {
	Transaction
	// Forward is how much of the line's FullAmount is on the service's
	// node and is forwarded to the store's Lightning address; zero for a
	// line whose money reached the store directly, and for a fee line.
	Forward Sats
}

// SettlementLines returns the ledger lines of effects applied to inv (the
// invoice after them), in the order of the effects: those of a Settle
// (SettlementTransactions) and of a PaidAgain (PaidAgainTransactions),
// dated inv.UpdatedAt. A transfer whose money is (partly) on the
// service's node forwards that part (Custody); an invoice paid partly
// to the store's own wallet (on-chain to its xpub) and partly by
// Lightning forwards only the Lightning part.
func SettlementLines(inv *Invoice, effects []Effect, c Custody) []SettlementLine {
	var lines []SettlementLine
	add := func(txs []Transaction, custodial Sats) {
		for _, tx := range txs {
			line := SettlementLine{Transaction: tx}
			if c.Forwarding && tx.Type == TransactionTransfer && custodial > 0 {
				line.Forward = min(custodial, tx.FullAmount)
			}
			lines = append(lines, line)
		}
	}
	for _, e := range effects {
		switch e := e.(type) {
		case Settle:
			add(SettlementTransactions(inv, e, inv.UpdatedAt), c.Paid(inv))
		case PaidAgain:
			custodial := Sats(0)
			if c.Holds(inv, e.Method) {
				custodial = e.Amount
			}
			add(PaidAgainTransactions(inv, e, inv.UpdatedAt), custodial)
		}
	}
	return lines
}

// Awaiting returns the line as recorded while its money waits on the
// service's node to be forwarded: Pending, or Held while the store has
// no Lightning address (lightningAddress is the store's); deposited by
// Lightning, since that is how it reaches the store, so without the
// payment's hash. A line that forwards nothing is returned as it is.
func (l *SettlementLine) Awaiting(lightningAddress string) Transaction {
	tx := l.Transaction
	if l.Forward <= 0 {
		return tx
	}
	tx.Status = TransactionPending
	if lightningAddress == "" {
		tx.Status = TransactionHeld
	}
	tx.Hash = ""
	tx.DepositMethod = MethodLightning
	return tx
}

// QueuedTransfer is the transfer that forwards l's money, once l is
// recorded as transaction id.
func (l *SettlementLine) QueuedTransfer(id int64) QueuedTransfer {
	return QueuedTransfer{
		TransactionID: id, StoreID: l.StoreID, InvoiceID: l.InvoiceID,
		Amount: l.Forward.MSat(), Direct: l.FullAmount - l.Forward, Comment: l.Comment,
	}
}

// TopUpTransaction returns the ledger line of a top-up of the store's
// prepaid balance by amount satoshis, valued in the store currency at
// rate (the price of one bitcoin in it; zero when no rate was available,
// which values it at zero).
func TopUpTransaction(st *Store, amount Sats, rate decimal.Decimal, at time.Time) Transaction {
	return Transaction{
		StoreID:                   st.ID,
		Type:                      TransactionTopUp,
		Status:                    TransactionSettled,
		Amount:                    amount,
		FullAmount:                amount,
		AmountInPreferredCurrency: FiatValue(amount, st.Currency, rate),
		Currency:                  st.Currency,
		Rate:                      rate,
		Comment:                   "prepaid balance top-up",
		CreatedAt:                 at,
	}
}
