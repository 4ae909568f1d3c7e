package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// A top-up is an invoice of the operator's own store ("Kassa operator",
// made on first use): once it settles, the dashboard credits each payment
// the invoice accounted to the merchant's prepaid balance with the same
// TopUp the admin API uses, "invoice id/payment id" as its reference, and
// records that it did (docs/decisions.md, "Top-ups credited once"); a
// payment arriving after the first credit is credited the same way.
// RunTopUps credits in the background; the balance page credits too.

const operatorStoreKey = "dash/operator-store"

func topUpsKey(storeID string) string  { return "dash/topups/" + storeID }
func topUpKey(invoiceID string) string { return "dash/topup/" + invoiceID }

// topUp is one top-up invoice of a store.
type topUp struct {
	InvoiceID string `json:"invoiceId"`
	StoreID   string `json:"storeId"`
	// Amount is the amount asked for until something is credited, then
	// what was credited in all.
	Amount   kassa.Sats `json:"amount"`
	Credited bool       `json:"credited,omitempty"`
	// ByInvoice is what an earlier version credited with the invoice id
	// alone as reference: what the invoice had received by then.
	ByInvoice kassa.Sats `json:"byInvoice,omitempty"`
	// Payments are the ids of the invoice's payments credited one by one,
	// each with the reference "invoice id/payment id".
	Payments []string `json:"payments,omitempty"`
	// Status is filled in for the page.
	Status string `json:"-"`
}

// byInvoice returns what the top-up's invoice id credited, as far as
// its record tells: a record an earlier version marked credited has no
// Payments, and credited Amount under the invoice id.
func (t *topUp) byInvoice() kassa.Sats {
	if t.ByInvoice == 0 && t.Credited && len(t.Payments) == 0 {
		return t.Amount
	}
	return t.ByInvoice
}

// coveredByInvoice returns the ids of the payments a credit of amount
// under the invoice id covered. That credit was what the invoice had
// received when it was made (every payment not dropped), so it covers the
// payments in order of arrival until their sum reaches the amount. A
// payment dropped since still counts as covered: nothing is credited for
// it again.
func coveredByInvoice(inv *kassa.Invoice, amount kassa.Sats) map[string]bool {
	covered := map[string]bool{}
	var sum kassa.Sats
	for _, p := range inv.Payments {
		if sum >= amount {
			break
		}
		covered[p.ID] = true
		if !p.Dropped {
			sum += p.Amount
		}
	}
	return covered
}

// uncredited returns the payments of the top-up's invoice that its
// store's ledger accounted and that are not credited yet.
func (t *topUp) uncredited(inv *kassa.Invoice) []kassa.Payment {
	covered := coveredByInvoice(inv, t.byInvoice())
	var out []kassa.Payment
	for _, p := range inv.Payments {
		if p.Accounted && !covered[p.ID] && !slices.Contains(t.Payments, p.ID) {
			out = append(out, p)
		}
	}
	return out
}

// paymentRef is the top-up reference of one payment of a top-up invoice.
func paymentRef(invoiceID, paymentID string) string { return invoiceID + "/" + paymentID }

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
		if inv.Status == kassa.InvoiceSettled && len(t.uncredited(inv)) > 0 {
			if err := h.creditTopUp(ctx, &t, inv); err != nil {
				return nil, err
			}
		}
		t.Status = inv.Status.String()
		list = append(list, &t)
	}
	return list, nil
}

// creditTopUp credits each payment of top-up t's invoice inv not
// credited yet, and records that it did. The reference of each credit is
// "invoice id/payment id": the store credits it once, so a crash before
// the record is written, or two nodes crediting at once, cannot credit a
// payment twice. What an earlier version credited with the invoice id
// alone is not credited again.
func (h *Dashboard) creditTopUp(ctx context.Context, t *topUp, inv *kassa.Invoice) error {
	h.topupMu.Lock()
	defer h.topupMu.Unlock()
	var rec topUp
	if ok, err := h.getJSON(ctx, topUpKey(t.InvoiceID), &rec); err != nil {
		return err
	} else if !ok {
		rec = *t
	}
	if !rec.Credited {
		// An earlier version may have credited the invoice id and failed
		// to record it: the store remembers.
		st, err := h.Reader.Store(ctx, rec.StoreID)
		if err != nil {
			return err
		}
		if id, ok := st.TopUpRef(rec.InvoiceID); ok {
			tx, err := h.Reader.Transaction(ctx, id)
			if err != nil {
				return err
			}
			rec.ByInvoice = tx.Amount
		}
	} else {
		rec.ByInvoice = rec.byInvoice()
	}
	var err error
	for _, p := range rec.uncredited(inv) {
		if _, err = h.Services.TopUp(ctx, rec.StoreID, p.Amount, paymentRef(rec.InvoiceID, p.ID)); err != nil {
			break // record what was credited
		}
		rec.Payments = append(rec.Payments, p.ID)
	}
	if rec.ByInvoice > 0 || len(rec.Payments) > 0 {
		rec.Credited, rec.Amount = true, rec.ByInvoice
		for _, p := range inv.Payments {
			if slices.Contains(rec.Payments, p.ID) {
				rec.Amount += p.Amount
			}
		}
	}
	if perr := h.putJSON(ctx, topUpKey(rec.InvoiceID), rec, forever); err == nil {
		err = perr
	}
	rec.Status = t.Status
	*t = rec
	return err
}

// topUpWindow is how far back CreditTopUps looks for settled top-up
// invoices: an invoice settles at the latest when a payment arrives at
// the end of its monitoring after expiry (24 hours by default). Older
// ones are credited when their store's balance page is read.
const topUpWindow = 72 * time.Hour

// CreditTopUps credits the top-ups whose invoices, created within
// topUpWindow, settled and have payments not credited yet. Every node of
// a cluster may run it at once: the store credits a reference once.
func (h *Dashboard) CreditTopUps(ctx context.Context) error {
	failed := h.creditTopUpsFailed(ctx)
	ids := slices.Sorted(maps.Keys(failed))
	errs := make([]error, 0, len(ids))
	for _, id := range ids {
		errs = append(errs, failed[id])
	}
	return errors.Join(errs...)
}

// creditTopUpsFailed is CreditTopUps, its errors by top-up invoice id
// ("" when the operator store's invoices could not be listed).
func (h *Dashboard) creditTopUpsFailed(ctx context.Context) map[string]error {
	failed := map[string]error{}
	op, ok, err := h.KV.GetValue(ctx, operatorStoreKey)
	if err != nil || !ok {
		if err != nil {
			failed[""] = err
		}
		return failed // no top-up was ever made
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
			failed[""] = err
			return failed
		}
		if next == "" {
			break
		}
		q.Cursor = next
	}
	for _, inv := range settled {
		var t topUp
		ok, err := h.getJSON(ctx, topUpKey(inv.ID), &t)
		if err == nil && ok && len(t.uncredited(inv)) > 0 {
			err = h.creditTopUp(ctx, &t, inv)
		}
		if err != nil {
			failed[inv.ID] = fmt.Errorf("top-up %s: %w", inv.ID, err)
		}
	}
	return failed
}

// warnEvery is how often RunTopUps repeats the warning about a top-up
// that keeps failing (it retries it on every round).
const warnEvery = time.Hour

// RunTopUps runs CreditTopUps every interval until ctx ends, so that a
// paid top-up reaches the balance without a page view. A top-up that
// keeps failing is warned about when it first fails, then once every
// warnEvery, not on every round.
func (h *Dashboard) RunTopUps(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := map[string]time.Time{} // failing top-ups: last warning
	for {
		failed := h.creditTopUpsFailed(ctx)
		now := h.Clock.Now()
		for id, err := range failed {
			if last, ok := warned[id]; ctx.Err() != nil || ok && now.Sub(last) < warnEvery {
				continue
			}
			warned[id] = now
			h.log.Warn("credit top-ups; retrying every round, warning again in an hour", "err", err)
		}
		for id := range warned {
			if _, ok := failed[id]; !ok {
				delete(warned, id) // credited, or out of the window
			}
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
