package dashboard

import (
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
	var list []*kassa.Transaction
	next, err := h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{From: from, To: to, Limit: readerPage, Cursor: r.URL.Query().Get("cursor")}, func(t *kassa.Transaction) error {
		list = append(list, t)
		return nil
	})
	if err != nil {
		if kassa.ErrorCode(err) == kassa.Invalid {
			data["Error"] = kassa.ErrorMessage(err)
			h.render(w, r, http.StatusBadRequest, "transactions", data)
			return
		}
		h.serverError(w, r, err)
		return
	}
	data["Txs"], data["Next"] = list, next
	h.render(w, r, http.StatusOK, "transactions", data)
}

// csvHeader names the export's columns: every field of the API's
// Transaction (docs/api.md, Transactions), by the same names, and the
// creation time once more as a date a spreadsheet reads.
var csvHeader = []string{"id", "invoiceId", "type", "status", "amount", "fullAmount", "feeAmount", "routingFee",
	"amountInPreferredCurrency", "currency", "rate", "depositMethod", "hash", "comment", "createdAt", "createdAtUTC"}

// csvRow is the export's line of t: the values the API answers, as text.
func csvRow(t *kassa.Transaction) []string {
	method := ""
	if t.DepositMethod != 0 {
		method = t.DepositMethod.String()
	}
	created, createdUTC := "0", ""
	if !t.CreatedAt.IsZero() {
		created, createdUTC = strconv.FormatInt(t.CreatedAt.Unix(), 10), t.CreatedAt.UTC().Format(time.RFC3339)
	}
	row := []string{strconv.FormatInt(t.ID, 10), t.InvoiceID, t.Type.String(), t.Status.String(),
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
// (RFC 4180), newest first like the list.
func (h *Dashboard) exportCSV(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	from, to, problem := dateRange(r)
	if problem != "" {
		h.failMessage(w, r, http.StatusBadRequest, func(string) string { return problem })
		return
	}
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="transactions-`+st.ID+`.csv"`)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	cw.Write(csvHeader)
	cursor := ""
	for {
		next, err := h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{From: from, To: to, Limit: exportPage, Cursor: cursor}, func(t *kassa.Transaction) error {
			return cw.Write(csvRow(t))
		})
		cw.Flush()
		if err == nil {
			err = cw.Error()
		}
		if err != nil {
			// The header is sent: the export ends short, and the log says why.
			h.log.Error("dashboard: CSV export", "store", st.ID, "err", err)
			return
		}
		if next == "" {
			return
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		cursor = next
	}
}
