package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Paging of the invoice and transaction lists: the reader's pages are
// read until a page of the screen is full (or the range ends), always
// stopping at a reader page's end so that its cursor goes on from there.
const (
	readerPage = 100
	screenPage = 50
	maxScans   = 20
)

// dateRange reads the from and to dates (YYYY-MM-DD, UTC; to includes
// its whole day).
func dateRange(r *http.Request) (from, to time.Time, problem string) {
	q := r.URL.Query()
	if v := q.Get("from"); v != "" {
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return from, to, tr(r, "err.date")
		}
		from = t
	}
	if v := q.Get("to"); v != "" {
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return from, to, tr(r, "err.date")
		}
		to = t.Add(24*time.Hour - time.Second)
	}
	return from, to, ""
}

func (h *Dashboard) invoicesPage(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	from, to, problem := dateRange(r)
	status := r.URL.Query().Get("status")
	query := strings.TrimSpace(r.URL.Query().Get("q"))
	data := map[string]any{"From": r.URL.Query().Get("from"), "To": r.URL.Query().Get("to"), "Status": status, "Q": query, "Error": problem}
	if problem != "" {
		h.render(w, r, http.StatusBadRequest, "invoices", data)
		return
	}
	// A filtered list may read up to maxScans pages of the reader: it is
	// a search, and counted as one.
	if query != "" || status != "" {
		if m, ok := h.allowSearch(w, r); !ok {
			data["Error"] = m
			h.render(w, r, http.StatusTooManyRequests, "invoices", data)
			return
		}
	}
	var list []*kassa.Invoice
	cursor := r.URL.Query().Get("cursor")
	// An invoice id is found at once, however old; a query finds the
	// invoices whose id, order id or buyer's e-mail starts with it, in
	// any case, by the search index (kassa.Reader.SearchInvoices).
	var byID *kassa.Invoice
	if query != "" && cursor == "" && kassa.ValidID(query) {
		inv, err := h.Reader.Invoice(r.Context(), query)
		if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
			h.serverError(w, r, err)
			return
		}
		if err == nil && inv.StoreID == st.ID && (status == "" || inv.Status.String() == status) {
			byID = inv
			list = append(list, inv)
		}
	}
	for range maxScans {
		page := kassa.ListQuery{From: from, To: to, Limit: readerPage, Cursor: cursor}
		add := func(inv *kassa.Invoice) error {
			if (status == "" || inv.Status.String() == status) && (byID == nil || inv.ID != byID.ID) {
				list = append(list, inv)
			}
			return nil
		}
		var next string
		var err error
		if query != "" {
			next, err = h.Reader.SearchInvoices(r.Context(), st.ID, kassa.SearchQuery{ListQuery: page, Text: query}, add)
		} else {
			next, err = h.Reader.Invoices(r.Context(), st.ID, page, add)
		}
		if err != nil {
			if kassa.ErrorCode(err) == kassa.Invalid {
				data["Error"] = errorText(requestLang(r), err)
				h.render(w, r, http.StatusBadRequest, "invoices", data)
				return
			}
			h.serverError(w, r, err)
			return
		}
		cursor = next
		if next == "" || len(list) >= screenPage {
			break
		}
	}
	data["Invoices"], data["Next"] = list, cursor
	h.render(w, r, http.StatusOK, "invoices", data)
}

// invoiceOf returns the invoice of the path when it belongs to the store.
func (h *Dashboard) invoiceOf(w http.ResponseWriter, r *http.Request) *kassa.Invoice {
	return storeOwned(h, w, r, "invoiceId", "invoice", h.Reader.Invoice, func(inv *kassa.Invoice) string { return inv.StoreID })
}

// storeOwned reads the record whose id is the path parameter param and
// returns it when it belongs to the current store; otherwise it answers
// not found (another store's record is not found either) and returns nil.
func storeOwned[T any](h *Dashboard, w http.ResponseWriter, r *http.Request, param, what string,
	get func(context.Context, string) (*T, error), storeOf func(*T) string) *T {
	id := chi.URLParam(r, param)
	if !kassa.ValidID(id) {
		h.notFound(w, r)
		return nil
	}
	v, err := get(r.Context(), id)
	if err == nil && storeOf(v) != currentStore(r.Context()).ID {
		err = kassa.Errorf(kassa.NotFound, "%s not found", what)
	}
	if err != nil {
		h.serverError(w, r, err)
		return nil
	}
	return v
}

func (h *Dashboard) invoicePage(w http.ResponseWriter, r *http.Request) {
	inv := h.invoiceOf(w, r)
	if inv == nil {
		return
	}
	h.renderInvoice(w, r, http.StatusOK, inv, map[string]any{})
}

func (h *Dashboard) renderInvoice(w http.ResponseWriter, r *http.Request, status int, inv *kassa.Invoice, data map[string]any) {
	st := currentStore(r.Context())
	txs, err := h.Reader.TransactionsByInvoice(r.Context(), inv.ID)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		h.serverError(w, r, err)
		return
	}
	// The deliveries the invoice caused: each webhook's deliveries since
	// the invoice was made, bounded.
	var deliveries []*kassa.Delivery
	hooks, err := h.storeWebhooks(r, st)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	for _, hook := range hooks {
		_, err := h.Reader.Deliveries(r.Context(), hook.ID, kassa.ListQuery{From: inv.CreatedAt, Limit: 1000}, func(d *kassa.Delivery) error {
			if d.InvoiceID == inv.ID && len(deliveries) < maxDeliveriesShown {
				deliveries = append(deliveries, d)
			}
			return nil
		})
		if err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	rows, err := h.numberEach(r.Context(), txs)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	meta := ""
	if len(inv.Metadata) > 0 {
		meta = renderMetadata(inv.Metadata)
		if m, ok := strings.CutSuffix(meta, msg("inv.metatruncated")); ok {
			meta = m + tr(r, "inv.metatruncated")
		}
	}
	data["Inv"], data["Txs"], data["Deliveries"], data["Meta"] = inv, rows, deliveries, meta
	data["Order"] = inv.SearchOrderID()
	data["Checkout"] = strings.TrimRight(h.PublicURL, "/") + "/checkout/" + inv.ID
	data["CanInvalidate"] = inv.CanMarkInvalid()
	data["CanRefund"] = h.canRefund(inv)
	h.render(w, r, status, "invoice", data)
}

func (h *Dashboard) markInvalid(w http.ResponseWriter, r *http.Request) {
	inv := h.invoiceOf(w, r)
	if inv == nil {
		return
	}
	if _, err := h.Services.MarkInvoiceInvalid(r.Context(), inv.StoreID, inv.ID); err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.renderInvoice(w, r, http.StatusConflict, inv, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, currentStore(r.Context()), "/invoices/"+inv.ID, "invalidated")
}

func (h *Dashboard) newInvoicePage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "invoice_new", map[string]any{"Currency": string(currentStore(r.Context()).Currency)})
}

func (h *Dashboard) createInvoice(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	f := r.PostForm
	req := &kassa.InvoiceRequest{Currency: kassa.Currency(f.Get("currency")), OrderID: strings.TrimSpace(f.Get("orderId")),
		BuyerEmail: strings.TrimSpace(f.Get("buyerEmail")), RedirectURL: strings.TrimSpace(f.Get("redirectUrl"))}
	data := map[string]any{"Currency": f.Get("currency"), "Amount": f.Get("amount"), "OrderID": req.OrderID, "BuyerEmail": req.BuyerEmail, "RedirectURL": req.RedirectURL}
	if a := strings.TrimSpace(f.Get("amount")); a != "" {
		d, problem := formAmount(requestLang(r), a)
		if problem != "" {
			data["Error"] = "amount: " + problem
			h.render(w, r, http.StatusUnprocessableEntity, "invoice_new", data)
			return
		}
		req.Amount, req.HasAmount = d, true
	}
	inv, err := h.Services.CreateInvoice(r.Context(), st.ID, req)
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			data["Error"] = m
			h.render(w, r, http.StatusUnprocessableEntity, "invoice_new", data)
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/invoices/"+inv.ID, "invoicecreated")
}

// Pay links.

func (h *Dashboard) payLinksPage(w http.ResponseWriter, r *http.Request) {
	h.renderPayLinks(w, r, http.StatusOK, map[string]any{"Currency": string(currentStore(r.Context()).Currency)})
}

func (h *Dashboard) renderPayLinks(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	st := currentStore(r.Context())
	var list []*kassa.PaymentRequest
	if err := h.Reader.PaymentRequests(r.Context(), st.ID, func(p *kassa.PaymentRequest) error {
		list = append(list, p)
		return nil
	}); err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Links"], data["Now"], data["Base"] = list, h.Clock.Now(), strings.TrimRight(h.PublicURL, "/")+"/payment-requests/"
	h.render(w, r, status, "paylinks", data)
}

// payLinkInput reads the pay link form.
func payLinkInput(r *http.Request) (*kassa.PaymentRequestInput, string) {
	f := r.PostForm
	in := &kassa.PaymentRequestInput{Title: strings.TrimSpace(f.Get("title")), Currency: kassa.Currency(f.Get("currency")),
		OrderID: strings.TrimSpace(f.Get("orderId")), Description: strings.TrimSpace(f.Get("description")),
		RedirectURL: strings.TrimSpace(f.Get("redirectUrl")), CustomerEmail: strings.TrimSpace(f.Get("customerEmail")),
		InternalNote: strings.TrimSpace(f.Get("internalNote"))}
	if a := strings.TrimSpace(f.Get("amount")); a != "" {
		d, problem := formAmount(requestLang(r), a)
		if problem != "" {
			return nil, "amount: " + problem
		}
		in.Amount, in.HasAmount = d, true
	}
	if v := strings.TrimSpace(f.Get("discount")); v != "" {
		d, problem := formAmount(requestLang(r), v)
		if problem != "" {
			return nil, "discount: " + problem
		}
		in.Discount = d
	}
	if v := strings.TrimSpace(f.Get("expiryDate")); v != "" {
		t, err := time.Parse("2006-01-02", v)
		if err != nil {
			return nil, tr(r, "err.date")
		}
		in.ExpiryDate = t.Add(24*time.Hour - time.Second)
	}
	return in, ""
}

func (h *Dashboard) createPayLink(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	in, problem := payLinkInput(r)
	if problem == "" {
		if _, err := h.Services.CreatePaymentRequest(r.Context(), st.ID, in); err != nil {
			m, ok := fieldErrors(r, err)
			if !ok {
				h.serverError(w, r, err)
				return
			}
			problem = m
		}
	}
	if problem != "" {
		h.renderPayLinks(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": problem, "F": r.PostForm, "Currency": r.PostForm.Get("currency")})
		return
	}
	redirect(w, r, st, "/paylinks", "linkcreated")
}

// payLinkOf returns the pay link of the path when it belongs to the store.
func (h *Dashboard) payLinkOf(w http.ResponseWriter, r *http.Request) *kassa.PaymentRequest {
	return storeOwned(h, w, r, "payLinkId", "pay link", h.Reader.PaymentRequest, func(p *kassa.PaymentRequest) string { return p.StoreID })
}

func (h *Dashboard) payLinkPage(w http.ResponseWriter, r *http.Request) {
	if p := h.payLinkOf(w, r); p != nil {
		h.renderPayLink(w, r, http.StatusOK, p, map[string]any{})
	}
}

// renderPayLink shows pay link p with the invoices made from it.
func (h *Dashboard) renderPayLink(w http.ResponseWriter, r *http.Request, status int, p *kassa.PaymentRequest, data map[string]any) {
	invoices, more, err := h.linkInvoices(r.Context(), p)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["L"], data["URL"], data["Now"] = p, strings.TrimRight(h.PublicURL, "/")+"/payment-requests/"+p.ID, h.Clock.Now()
	data["Invoices"], data["More"] = invoices, more
	h.render(w, r, status, "paylink", data)
}

// linkInvoices returns the invoices made from pay link p, newest first:
// those among the store's invoices made since the link, at most
// maxScans reader pages of them (more is true when the scan stopped
// there).
func (h *Dashboard) linkInvoices(ctx context.Context, p *kassa.PaymentRequest) (list []*kassa.Invoice, more bool, err error) {
	cursor := ""
	for range maxScans {
		cursor, err = h.Reader.Invoices(ctx, p.StoreID, kassa.ListQuery{From: p.CreatedAt, Limit: readerPage, Cursor: cursor}, func(inv *kassa.Invoice) error {
			if inv.PaymentLinkID == p.ID {
				list = append(list, inv)
			}
			return nil
		})
		if err != nil || cursor == "" {
			return list, false, err
		}
	}
	return list, true, nil
}

func (h *Dashboard) updatePayLink(w http.ResponseWriter, r *http.Request) {
	p := h.payLinkOf(w, r)
	if p == nil {
		return
	}
	in, problem := payLinkInput(r)
	if problem == "" {
		if _, err := h.Services.UpdatePaymentRequest(r.Context(), p.StoreID, p.ID, in); err != nil {
			if m, ok := payLinkClosed(requestLang(r), err); ok {
				// The page read before the save is stale: show the link
				// as it is now, without its form.
				if now, err := h.Reader.PaymentRequest(r.Context(), p.ID); err == nil {
					p = now
				}
				h.renderPayLink(w, r, http.StatusConflict, p, map[string]any{"Error": m})
				return
			}
			m, ok := fieldErrors(r, err)
			if !ok {
				h.serverError(w, r, err)
				return
			}
			problem = m
		}
	}
	if problem != "" {
		h.renderPayLink(w, r, http.StatusUnprocessableEntity, p, map[string]any{"Error": problem})
		return
	}
	redirect(w, r, currentStore(r.Context()), "/paylinks/"+p.ID, "saved")
}

// payLinkClosed is the dashboard's message for a change refused because
// the pay link is paid or archived; the API's own text names it by the
// API's name, payment request.
func payLinkClosed(lang string, err error) (string, bool) {
	switch {
	case errors.Is(err, kassa.ErrPaymentRequestPaid):
		return msgIn(lang, "link.paidlocked"), true
	case errors.Is(err, kassa.ErrPaymentRequestArchived):
		return msgIn(lang, "link.archivedlocked"), true
	}
	return "", false
}

func (h *Dashboard) archivePayLink(w http.ResponseWriter, r *http.Request) {
	p := h.payLinkOf(w, r)
	if p == nil {
		return
	}
	if err := h.Services.ArchivePaymentRequest(r.Context(), p.StoreID, p.ID); err != nil {
		m, ok := payLinkClosed(requestLang(r), err)
		if !ok {
			m, ok = fieldErrors(r, err)
		}
		if ok {
			h.renderPayLink(w, r, http.StatusConflict, p, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, currentStore(r.Context()), "/paylinks", "archived")
}

// maxFormAmount is the largest amount kassa.ParseAmount accepts.
var maxFormAmount = decimal.New(1, 15)

// formAmount reads an amount of a form by the API's rules
// (kassa.ParseAmount): a decimal number, and a problem to show when it
// is none ("must be a number") or one beyond what any invoice can ask
// ("is too large").
func formAmount(lang, s string) (decimal.Decimal, string) {
	quoted, _ := json.Marshal(s)
	d, err := kassa.ParseAmount(quoted)
	if err == nil {
		return d, ""
	}
	if d, e := decimal.NewFromString(s); e == nil && d.Abs().GreaterThan(maxFormAmount) {
		return decimal.Zero, msgIn(lang, "err.toolarge")
	}
	return decimal.Zero, msgIn(lang, "err.number")
}
