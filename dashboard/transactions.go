package dashboard

import (
	"context"
	"encoding/csv"
	"net/http"
	"regexp"
	"strconv"
	"time"

	"github.com/kassapay/kassa"
)

func (h *Dashboard) transactionsPage(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	from, to, problem := dateRange(r)
	data := map[string]any{"From": r.URL.Query().Get("from"), "To": r.URL.Query().Get("to"), "Error": problem}
	if problem != "" {
		h.render(w, r, http.StatusBadRequest, "transactions", data)
		return
	}
	var list []txRow
	next, err := h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{From: from, To: to, Limit: readerPage, Cursor: r.URL.Query().Get("cursor")}, func(t *kassa.Transaction) error {
		list = append(list, txRow{Transaction: t})
		return nil
	})
	if err == nil && len(list) > 0 {
		// The page is a run of the store's lines, newest first: the
		// numbers count down from the first one's.
		var n int64
		n, err = h.transactionNumber(r.Context(), list[0].Transaction)
		for i := range list {
			list[i].Number = n - int64(i)
		}
	}
	if err != nil {
		if kassa.ErrorCode(err) == kassa.Invalid {
			data["Error"] = errorText(requestLang(r), err)
			h.render(w, r, http.StatusBadRequest, "transactions", data)
			return
		}
		h.serverError(w, r, err)
		return
	}
	data["Txs"], data["Next"] = list, next
	h.render(w, r, http.StatusOK, "transactions", data)
}

// txRow is a ledger line as the dashboard shows it: with its number in
// the store's ledger (1 for the store's first line) and, in the export,
// the order id of its invoice.
type txRow struct {
	*kassa.Transaction
	Number  int64
	OrderID string
}

// transactionNumberer is a Reader that numbers a store's ledger lines
// itself (the Pebble and PostgreSQL stores, from their indexes).
type transactionNumberer interface {
	TransactionNumber(ctx context.Context, tx *kassa.Transaction) (int64, error)
}

// transactionNumber is tx's place in its store's ledger, oldest first
// from 1, in the order of the store's list (creation time in
// milliseconds, then id). The number is the store's own: the global
// transaction id would tell a merchant how many lines other stores have.
func (h *Dashboard) transactionNumber(ctx context.Context, tx *kassa.Transaction) (int64, error) {
	if nr, ok := h.Reader.(transactionNumberer); ok {
		return nr.TransactionNumber(ctx, tx)
	}
	var n int64
	at := tx.CreatedAt.UnixMilli()
	_, err := h.Reader.Transactions(ctx, tx.StoreID, kassa.ListQuery{To: tx.CreatedAt}, func(t *kassa.Transaction) error {
		if ms := t.CreatedAt.UnixMilli(); ms < at || ms == at && t.ID <= tx.ID {
			n++
		}
		return nil
	})
	return n, err
}

// numberEach numbers lines that are not a run of the ledger (an
// invoice's lines), one by one.
func (h *Dashboard) numberEach(ctx context.Context, txs []kassa.Transaction) ([]txRow, error) {
	rows := make([]txRow, len(txs))
	for i := range txs {
		n, err := h.transactionNumber(ctx, &txs[i])
		if err != nil {
			return nil, err
		}
		rows[i] = txRow{Transaction: &txs[i], Number: n}
	}
	return rows, nil
}

// csvHeader names the export's columns: the line's number in the store's
// ledger, then every field of the API's Transaction (docs/api.md,
// Transactions) by the same names but its global id, the order id of
// its invoice, and the creation time once more as a date a spreadsheet
// reads (UTC, the zone named).
var csvHeader = []string{"number", "invoiceId", "orderId", "type", "status", "amount", "fullAmount", "feeAmount", "routingFee",
	"amountInPreferredCurrency", "currency", "rate", "depositMethod", "hash", "comment", "createdAt", "createdAtUTC"}

// csvRow is the export's line of t: the values the API answers, as text.
func csvRow(tr txRow) []string {
	t := tr.Transaction
	method := ""
	if t.DepositMethod != 0 {
		method = t.DepositMethod.String()
	}
	created, createdUTC := "0", ""
	if !t.CreatedAt.IsZero() {
		created, createdUTC = strconv.FormatInt(t.CreatedAt.Unix(), 10), t.CreatedAt.UTC().Format(time.RFC3339)
	}
	row := []string{strconv.FormatInt(tr.Number, 10), t.InvoiceID, tr.OrderID, t.Type.String(), t.Status.String(),
		strconv.FormatInt(int64(t.Amount), 10), strconv.FormatInt(int64(t.FullAmount), 10), strconv.FormatInt(int64(t.FeeAmount), 10),
		strconv.FormatInt(int64(t.RoutingFee), 10), t.AmountInPreferredCurrency.String(), string(t.Currency), t.Rate.String(), method, t.Hash, t.Comment, created, createdUTC}
	for i, cell := range row {
		row[i] = escapeCell(cell)
	}
	return row
}

// plainNumber is a number the export writes itself; a spreadsheet reads
// it as a number and never as a formula.
var plainNumber = regexp.MustCompile(`^-?[0-9]+(\.[0-9]+)?$`)

// escapeCell keeps a spreadsheet from reading a cell as a formula: a
// cell that starts with = + - @, a tab or a carriage return gets a
// leading apostrophe, unless it is a plain number (a negative amount).
func escapeCell(s string) string {
	if s == "" || plainNumber.MatchString(s) {
		return s
	}
	switch s[0] {
	case '=', '+', '-', '@', '\t', '\r':
		return "'" + s
	}
	return s
}

// exportPage is how many transactions the export reads at a time: it
// writes each page before it reads the next, so its memory does not grow
// with the range.
const exportPage = 500

// exportCSV streams the store's transactions in the date range as CSV
// (RFC 4180), newest first like the list. With a period (from, to) it
// is the accounting export: every payment with its value at the locked
// rate, the fees, top-ups and refund lines of those days (README,
// "Accounting export").
func (h *Dashboard) exportCSV(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	from, to, problem := dateRange(r)
	if problem != "" {
		h.failMessage(w, r, http.StatusBadRequest, func(string) string { return problem })
		return
	}
	// An export reads every transaction of the range: it is counted as
	// a search.
	if m, ok := h.allowSearch(w, r); !ok {
		h.failMessage(w, r, http.StatusTooManyRequests, func(string) string { return m })
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	// The file is named by its period, as dateRange read it.
	name := "transactions-" + st.ID
	for _, d := range []time.Time{from, to} {
		if !d.IsZero() {
			name += "-" + d.Format("2006-01-02")
		}
	}
	w.Header().Set("Content-Disposition", `attachment; filename="`+name+`.csv"`)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	cw.Write(csvHeader)
	cursor := ""
	orders := orderIDs{h: h, storeID: st.ID}
	var number int64 = -1
	for {
		next, err := h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{From: from, To: to, Limit: exportPage, Cursor: cursor}, func(t *kassa.Transaction) error {
			if number < 0 {
				// The export is a run of the store's lines, newest first.
				n, err := h.transactionNumber(r.Context(), t)
				if err != nil {
					return err
				}
				number = n
			}
			order, err := orders.of(r.Context(), t.InvoiceID)
			if err != nil {
				return err
			}
			row := csvRow(txRow{Transaction: t, Number: number, OrderID: order})
			number--
			return cw.Write(row)
		})
		if !h.csvPageSent(w, cw, err, next, "transactions", st.ID) {
			return
		}
		cursor = next
	}
}

// csvPageSent ends one page of a streamed CSV export: it flushes the
// page to the client and reports whether the export goes on (no error
// and a next page). The header is sent by then, so an error ends the
// export short and the log says why.
func (h *Dashboard) csvPageSent(w http.ResponseWriter, cw *csv.Writer, err error, next, export, storeID string) bool {
	cw.Flush()
	if err == nil {
		err = cw.Error()
	}
	if err != nil {
		h.log.Error("dashboard: CSV export", "export", export, "store", storeID, "err", err)
		return false
	}
	if next == "" {
		return false
	}
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	return true
}

// orderIDs finds the order ids of the export's invoices, remembering the
// last few: an invoice's transfer and fee lines are next to each other.
type orderIDs struct {
	h       *Dashboard
	storeID string
	cache   map[string]string
}

func (o *orderIDs) of(ctx context.Context, invoiceID string) (string, error) {
	if invoiceID == "" {
		return "", nil
	}
	if id, ok := o.cache[invoiceID]; ok {
		return id, nil
	}
	if o.cache == nil || len(o.cache) > 256 {
		o.cache = map[string]string{}
	}
	inv, err := o.h.Reader.Invoice(ctx, invoiceID)
	if kassa.ErrorCode(err) == kassa.NotFound {
		inv, err = nil, nil
	}
	if err != nil {
		return "", err
	}
	id := ""
	// A top-up line's invoice is the operator's: its order id is not
	// the merchant's.
	if inv != nil && inv.StoreID == o.storeID {
		id = inv.SearchOrderID()
	}
	o.cache[invoiceID] = id
	return id, nil
}
