package dashboard

import (
	"encoding/csv"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// A store's History page lists who changed the store's settings, API
// keys, webhooks, refunds, members and invitations, when and from which
// address, newest first (kassa.HistoryLine), with filters by kind of
// change, actor and dates, pages of historyPage lines, and the same
// lines as CSV. It asks PermViewStoreSettings (Owners and Managers): the
// lines name members and keys and their addresses.

// historyPage is how many lines a page of the History page shows.
const historyPage = 50

// historyRoutes adds the History page's routes to a store's router.
func (h *Dashboard) historyRoutes(r chi.Router) {
	r.Get("/history", h.historyPage)
	r.Get("/history.csv", h.historyCSV)
}

// historyReader is the reader of stores' histories: Deps.History, else
// the Reader when it reads them.
func (h *Dashboard) historyReader() (kassa.HistoryReader, bool) {
	if h.History != nil {
		return h.History, true
	}
	hr, ok := h.Reader.(kassa.HistoryReader)
	return hr, ok
}

// historyQuery reads the page's filters: kind, actor, from, to (dates,
// the second one included) and cursor; problem says what is wrong.
func historyQuery(r *http.Request) (q kassa.HistoryQuery, data map[string]any, problem string) {
	v := r.URL.Query()
	data = map[string]any{"Kind": v.Get("kind"), "Actor": strings.TrimSpace(v.Get("actor")), "From": v.Get("from"), "To": v.Get("to"), "Kinds": kassa.HistoryKinds}
	from, to, problem := dateRange(r)
	if problem != "" {
		return q, data, problem
	}
	if !to.IsZero() {
		to = to.Add(time.Second) // the end of the day dateRange gives
	}
	q = kassa.HistoryQuery{Kind: v.Get("kind"), Actor: strings.TrimSpace(v.Get("actor")), From: from, To: to, Cursor: v.Get("cursor")}
	if q.Kind != "" && !slices.Contains(kassa.HistoryKinds, q.Kind) {
		return q, data, msg("hist.badkind")
	}
	if len(q.Actor) > maxEmail {
		return q, data, msg("hist.badactor")
	}
	return q, data, ""
}

func (h *Dashboard) historyPage(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	q, data, problem := historyQuery(r)
	hr, ok := h.historyReader()
	if !ok {
		h.notFound(w, r)
		return
	}
	if problem != "" {
		data["Error"] = problem
		h.render(w, r, http.StatusBadRequest, "history", data)
		return
	}
	q.Limit = historyPage
	var lines []*kassa.HistoryLine
	next, err := hr.History(r.Context(), st.ID, q, func(l *kassa.HistoryLine) error {
		lines = append(lines, l)
		return nil
	})
	if err != nil {
		if kassa.ErrorCode(err) == kassa.Invalid {
			data["Error"] = errorText(requestLang(r), err)
			h.render(w, r, http.StatusBadRequest, "history", data)
			return
		}
		h.serverError(w, r, err)
		return
	}
	data["Lines"], data["Next"] = lines, next
	h.render(w, r, http.StatusOK, "history", data)
}

// historyCSVHeader names the export's columns: the fields of
// kassa.HistoryLine, the time also as Unix seconds.
var historyCSVHeader = []string{"seq", "at", "atUnix", "kind", "action", "subject", "detail", "actorKind", "actorId", "actorLabel", "address"}

// historyCSV streams the lines the page's filters select as CSV (RFC
// 4180), newest first, a reader's page at a time.
func (h *Dashboard) historyCSV(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	q, _, problem := historyQuery(r)
	hr, ok := h.historyReader()
	if !ok {
		h.notFound(w, r)
		return
	}
	if problem != "" {
		h.failMessage(w, r, http.StatusBadRequest, func(string) string { return problem })
		return
	}
	// An export reads every line of the selection: it is counted as a
	// search.
	if m, ok := h.allowSearch(w, r); !ok {
		h.failMessage(w, r, http.StatusTooManyRequests, func(string) string { return m })
		return
	}
	q.Cursor, q.Limit = "", kassa.MaxHistoryPage
	w.Header().Set("Content-Type", "text/csv; charset=utf-8")
	w.Header().Set("Content-Disposition", `attachment; filename="history-`+st.ID+`.csv"`)
	cw := csv.NewWriter(w)
	cw.UseCRLF = true
	cw.Write(historyCSVHeader)
	for {
		next, err := hr.History(r.Context(), st.ID, q, func(l *kassa.HistoryLine) error {
			row := []string{strconv.FormatUint(l.Seq, 10), l.At.UTC().Format(time.RFC3339), strconv.FormatInt(l.At.Unix(), 10),
				l.Kind, l.Action, l.Subject, l.Detail, l.Actor.Kind, l.Actor.ID, l.Actor.Label, l.Actor.Addr}
			for i, cell := range row {
				row[i] = escapeCell(cell)
			}
			return cw.Write(row)
		})
		if !h.csvPageSent(w, cw, err, next, "history", st.ID) {
			return
		}
		q.Cursor = next
	}
}
