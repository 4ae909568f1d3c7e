package dashboard

import (
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/topup"
)

// The balance page shows a store's prepaid balance, its fee history and
// its top-ups; the top-ups themselves, and crediting the paid ones, are
// package topup's (Deps.TopUps): the page asks.

func (h *Dashboard) balancePage(w http.ResponseWriter, r *http.Request) {
	h.renderBalance(w, r, http.StatusOK, map[string]any{})
}

func (h *Dashboard) renderBalance(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	st := currentStore(r.Context())
	tops, err := h.TopUps.List(r.Context(), st.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	bal, err := h.Reader.Balance(r.Context(), st.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	// The fee history: the store's ledger lines that move the balance.
	// The lines read are a run of the ledger, newest first: the numbers
	// count down from the first one's.
	var fees []txRow
	var newest, seen int64
	_, err = h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{Limit: 1000}, func(t *kassa.Transaction) error {
		if seen == 0 {
			n, err := h.transactionNumber(r.Context(), t)
			if err != nil {
				return err
			}
			newest = n
		}
		if t.Type != kassa.TransactionTransfer && len(fees) < readerPage {
			fees = append(fees, txRow{Transaction: t, Number: newest - seen})
		}
		seen++
		return nil
	})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Balance"], data["Limit"], data["Fees"], data["TopUps"] = bal, st.CreditLimit, fees, tops
	data["Checkout"] = strings.TrimRight(h.PublicURL, "/") + "/checkout/"
	h.render(w, r, status, "balance", data)
}

func (h *Dashboard) createTopUp(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	amount, err := strconv.ParseInt(strings.TrimSpace(r.PostForm.Get("amount")), 10, 64)
	if err != nil {
		h.renderBalance(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": tr(r, "err.topup")})
		return
	}
	_, err = h.TopUps.Create(r.Context(), st.ID, kassa.Sats(amount))
	switch m, ok := fieldErrors(r, err); {
	case err == nil:
		redirect(w, r, st, "/balance", "topupcreated")
	case errors.Is(err, topup.ErrAmount):
		h.renderBalance(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": tr(r, "err.topup")})
	case ok:
		h.renderBalance(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": m})
	default:
		h.serverError(w, r, err)
	}
}

// simPayTopUp pays a top-up invoice with the simulator (simulation only).
func (h *Dashboard) simPayTopUp(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	id := chi.URLParam(r, "invoiceId")
	t, ok, err := h.TopUps.Get(r.Context(), id)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if h.Simulator == nil || !ok || t.StoreID != st.ID {
		h.notFound(w, r)
		return
	}
	inv, err := h.Reader.Invoice(r.Context(), id)
	if err == nil {
		_, err = h.Simulator.Pay(r.Context(), inv, kassa.MethodLightning, 0)
	}
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.renderBalance(w, r, http.StatusConflict, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/balance", "topuppaid")
}
