package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// A top-up is an invoice of the operator's own store ("Kassa operator",
// made on first use): once it settles, the dashboard credits what was paid
// to the merchant's prepaid balance with the same TopUp the admin API
// uses, the invoice id as its reference, and records that it did
// (docs/decisions.md, "Top-ups credited once"). RunTopUps credits in the
// background; the balance page credits too.

const operatorStoreKey = "dash/operator-store"

func topUpsKey(storeID string) string  { return "dash/topups/" + storeID }
func topUpKey(invoiceID string) string { return "dash/topup/" + invoiceID }

// topUp is one top-up invoice of a store.
type topUp struct {
	InvoiceID string     `json:"invoiceId"`
	StoreID   string     `json:"storeId"`
	Amount    kassa.Sats `json:"amount"`
	Credited  bool       `json:"credited,omitempty"`
	// Status is filled in for the page.
	Status string `json:"-"`
}

// maxTopUps bounds the top-ups a store's page lists.
const maxTopUps = 50

// operatorStoreID is the id of the operator's store when this version
// makes it. Every node that makes the first top-up asks for this one id,
// so a cluster gets one operator store however many nodes race; a store
// made by an earlier version (with a random id) stays the one recorded.
const operatorStoreID = "kassa-operator"

// operatorStore returns the store top-ups are paid to, making it on
// first use.
func (h *Dashboard) operatorStore(ctx context.Context) (string, error) {
	if id, ok, err := h.KV.GetValue(ctx, operatorStoreKey); err != nil || ok {
		return string(id), err
	}
	st, err := h.Services.CreateStoreOnce(ctx, operatorStoreID, kassa.StoreSettings{Name: "Kassa operator", Currency: kassa.SATS})
	if err != nil {
		return "", err
	}
	// Racing nodes all write the same id.
	return st.ID, h.KV.PutValue(ctx, operatorStoreKey, []byte(st.ID), forever)
}

func (h *Dashboard) topUps(ctx context.Context, storeID string) ([]string, error) {
	var ids []string
	_, err := h.getJSON(ctx, topUpsKey(storeID), &ids)
	return ids, err
}

// creditTopUps credits every settled top-up of the store not credited
// yet, and returns the store's top-ups with their invoices' status.
func (h *Dashboard) creditTopUps(ctx context.Context, storeID string) ([]*topUp, error) {
	ids, err := h.topUps(ctx, storeID)
	if err != nil {
		return nil, err
	}
	var list []*topUp
	for i := len(ids) - 1; i >= 0; i-- {
		var t topUp
		ok, err := h.getJSON(ctx, topUpKey(ids[i]), &t)
		if err != nil {
			return nil, err
		}
		if !ok || t.StoreID != storeID {
			continue
		}
		inv, err := h.Reader.Invoice(ctx, t.InvoiceID)
		if err != nil {
			return nil, err
		}
		if inv.Status == kassa.InvoiceSettled && !t.Credited {
			if err := h.creditTopUp(ctx, &t, inv); err != nil {
				return nil, err
			}
		}
		t.Status = inv.Status.String()
		list = append(list, &t)
	}
	return list, nil
}

// creditTopUp credits top-up t, whose invoice inv settled, with what was
// paid, and records that it did. The invoice id is the top-up's
// reference: the store credits it once, so a crash before the record is
// written, or two nodes crediting at once, cannot credit it twice.
func (h *Dashboard) creditTopUp(ctx context.Context, t *topUp, inv *kassa.Invoice) error {
	h.topupMu.Lock()
	defer h.topupMu.Unlock()
	var stored topUp
	if ok, err := h.getJSON(ctx, topUpKey(t.InvoiceID), &stored); err != nil || (ok && stored.Credited) {
		if err == nil {
			*t = stored
		}
		return err
	}
	tx, err := h.Services.TopUp(ctx, t.StoreID, inv.TotalPaid(), t.InvoiceID)
	if err != nil {
		return err
	}
	t.Credited, t.Amount = true, tx.Amount
	return h.putJSON(ctx, topUpKey(t.InvoiceID), t, forever)
}

// topUpWindow is how far back CreditTopUps looks for settled top-up
// invoices: an invoice settles at the latest when a payment arrives at
// the end of its monitoring after expiry (24 hours by default). Older
// ones are credited when their store's balance page is read.
const topUpWindow = 72 * time.Hour

// CreditTopUps credits the top-ups whose invoices, created within
// topUpWindow, settled and are not credited yet. Every node of a cluster
// may run it at once: the store credits a top-up's reference once.
func (h *Dashboard) CreditTopUps(ctx context.Context) error {
	op, ok, err := h.KV.GetValue(ctx, operatorStoreKey)
	if err != nil || !ok {
		return err // no top-up was ever made
	}
	var settled []*kassa.Invoice
	q := kassa.ListQuery{From: h.Clock.Now().Add(-topUpWindow), Limit: 500}
	for {
		next, err := h.Reader.Invoices(ctx, string(op), q, func(inv *kassa.Invoice) error {
			if inv.Status == kassa.InvoiceSettled {
				settled = append(settled, inv)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	var errs []error
	for _, inv := range settled {
		var t topUp
		ok, err := h.getJSON(ctx, topUpKey(inv.ID), &t)
		if err == nil && ok && !t.Credited {
			err = h.creditTopUp(ctx, &t, inv)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("top-up %s: %w", inv.ID, err))
		}
	}
	return errors.Join(errs...)
}

// RunTopUps runs CreditTopUps every interval until ctx ends, so that a
// paid top-up reaches the balance without a page view.
func (h *Dashboard) RunTopUps(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if err := h.CreditTopUps(ctx); err != nil && ctx.Err() == nil {
			h.log.Warn("credit top-ups", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (h *Dashboard) balancePage(w http.ResponseWriter, r *http.Request) {
	h.renderBalance(w, r, http.StatusOK, map[string]any{})
}

func (h *Dashboard) renderBalance(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	st := currentStore(r.Context())
	tops, err := h.creditTopUps(r.Context(), st.ID)
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
	var fees []*kassa.Transaction
	_, err = h.Reader.Transactions(r.Context(), st.ID, kassa.ListQuery{Limit: 1000}, func(t *kassa.Transaction) error {
		if t.Type != kassa.TransactionTransfer && len(fees) < readerPage {
			fees = append(fees, t)
		}
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
	if err != nil || amount < 1000 || amount > int64(kassa.SatsPerBTC) {
		h.renderBalance(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": msg("err.topup")})
		return
	}
	op, err := h.operatorStore(r.Context())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	meta, _ := json.Marshal(map[string]string{"topUpStore": st.ID})
	inv, err := h.Services.CreateInvoice(r.Context(), op, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(amount), HasAmount: true,
		Currency: kassa.SATS, OrderID: "topup-" + st.ID, Metadata: meta})
	if err != nil {
		if m, ok := fieldErrors(err); ok {
			h.renderBalance(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	h.topupMu.Lock()
	err = h.putJSON(r.Context(), topUpKey(inv.ID), topUp{InvoiceID: inv.ID, StoreID: st.ID, Amount: kassa.Sats(amount)}, forever)
	if err == nil {
		var ids []string
		if ids, err = h.topUps(r.Context(), st.ID); err == nil {
			ids = append(ids, inv.ID)
			if len(ids) > maxTopUps {
				ids = ids[len(ids)-maxTopUps:]
			}
			err = h.putJSON(r.Context(), topUpsKey(st.ID), ids, forever)
		}
	}
	h.topupMu.Unlock()
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/balance", "topupcreated")
}

// simPayTopUp pays a top-up invoice with the simulator (simulation only).
func (h *Dashboard) simPayTopUp(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	id := chi.URLParam(r, "invoiceId")
	var t topUp
	ok, err := h.getJSON(r.Context(), topUpKey(id), &t)
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
		if m, ok := fieldErrors(err); ok {
			h.renderBalance(w, r, http.StatusConflict, map[string]any{"Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/balance", "topuppaid")
}
