package http

import (
	"encoding/json"
	"net/http"
	"strconv"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// transactionRecord is a ledger line as docs/api.md (Transactions) shows
// it.
type transactionRecord struct {
	ID         int64      `json:"id"`
	InvoiceID  string     `json:"invoiceId"`
	Type       string     `json:"type"`
	Status     string     `json:"status"`
	Amount     kassa.Sats `json:"amount"`
	FullAmount kassa.Sats `json:"fullAmount"`
	FeeAmount  kassa.Sats `json:"feeAmount"`
	// RoutingFee is what forwarding the line to the store's Lightning
	// address cost in routing fees (Kassa's own field).
	RoutingFee                kassa.Sats  `json:"routingFee"`
	AmountInPreferredCurrency json.Number `json:"amountInPreferredCurrency"`
	// Currency and Rate say what amountInPreferredCurrency is in: the
	// store's currency, at the price of one bitcoin the line was valued
	// at (Kassa's own fields, docs/api.md).
	Currency      string      `json:"currency"`
	Rate          json.Number `json:"rate"`
	DepositMethod string      `json:"depositMethod"`
	Hash          string      `json:"hash"`
	Comment       string      `json:"comment"`
	CreatedAt     int64       `json:"createdAt"`
}

func newTransactionRecord(t *kassa.Transaction) transactionRecord {
	method := ""
	if t.DepositMethod != 0 {
		method = t.DepositMethod.String()
	}
	return transactionRecord{
		ID:                        t.ID,
		InvoiceID:                 t.InvoiceID,
		Type:                      t.Type.String(),
		Status:                    t.Status.String(),
		Amount:                    t.Amount,
		FullAmount:                t.FullAmount,
		FeeAmount:                 t.FeeAmount,
		RoutingFee:                t.RoutingFee,
		AmountInPreferredCurrency: number(t.AmountInPreferredCurrency),
		Currency:                  string(t.Currency),
		Rate:                      number(t.Rate),
		DepositMethod:             method,
		Hash:                      t.Hash,
		Comment:                   t.Comment,
		CreatedAt:                 unixSeconds(t.CreatedAt),
	}
}

func (s *server) listTransactions(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	list := newListWriter(w, q.Limit > 0)
	next, err := s.Reader.Transactions(r.Context(), callerFrom(r.Context()).store.ID, q, func(t *kassa.Transaction) error {
		return list.add(newTransactionRecord(t))
	})
	s.finishList(list, r, next, err)
}

var errTransactionNotFound = kassa.Errorf(kassa.NotFound, "transaction not found")

// getTransaction answers the transaction with the id in the path, or, for
// an invoice id, the deposit (transfer) of that invoice.
func (s *server) getTransaction(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if !kassa.ValidID(id) {
		s.writeError(w, r, errTransactionNotFound)
		return
	}
	storeID := callerFrom(r.Context()).store.ID
	if n, err := strconv.ParseInt(id, 10, 64); err == nil && n > 0 {
		t, err := s.Reader.Transaction(r.Context(), n)
		switch {
		case err == nil && t.StoreID == storeID:
			writeJSON(w, http.StatusOK, newTransactionRecord(t))
			return
		case err != nil && kassa.ErrorCode(err) != kassa.NotFound:
			s.writeError(w, r, err)
			return
		}
		// Not a transaction of this store: it may still be an invoice id.
	}
	lines, err := s.Reader.TransactionsByInvoice(r.Context(), id)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		s.writeError(w, r, err)
		return
	}
	for i := range lines {
		if t := &lines[i]; t.StoreID == storeID && t.Type == kassa.TransactionTransfer {
			writeJSON(w, http.StatusOK, newTransactionRecord(t))
			return
		}
	}
	s.writeError(w, r, errTransactionNotFound)
}
