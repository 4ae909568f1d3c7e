package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The merchant's side of refunds (docs/decisions.md, "Refunds: pull
// payments and payouts"): an invoice's Refund form, which makes the pull
// payment whose claim link the customer gets, and the store's Payouts
// page, which approves, cancels or marks paid the customers' claims.
// Every rule is the domain's (kassa.RefundAmount, kassa.Payout.Apply)
// and every change goes through Deps.Refunds; the pages ask and show.

// maxPayoutsShown bounds the payouts page: the newest ones.
const maxPayoutsShown = 200

// refundRoutes adds the refund pages under a store, when Deps.Refunds
// and Deps.Payouts are set.
func (h *Dashboard) refundRoutes(r chi.Router) {
	if h.Refunds == nil || h.Payouts == nil {
		return
	}
	r.Get("/invoices/{invoiceId}/refund", h.refundPage)
	r.Post("/invoices/{invoiceId}/refund", h.refund)
	r.Get("/pull-payments/{pullPaymentId}", h.pullPaymentPage)
	r.Get("/payouts", h.payoutsPage)
	r.Post("/payouts/{payoutId}/approve", h.payoutCommand(h.Refunds.Approve, "payoutapproved"))
	r.Post("/payouts/{payoutId}/cancel", h.payoutCommand(h.Refunds.Cancel, "payoutcancelled"))
	r.Post("/payouts/{payoutId}/mark-paid", h.payoutCommand(h.Refunds.MarkPaid, "payoutpaid"))
}

// refundable is the domain's word on whether inv can be refunded at all
// (nil: it can): the refund of the bitcoin it received must be
// possible.
func refundable(inv *kassa.Invoice) error {
	_, _, _, err := kassa.RefundAmount(inv, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	return err
}

// canRefund says whether inv's page offers the Refund button.
func (h *Dashboard) canRefund(inv *kassa.Invoice) bool {
	return h.Refunds != nil && h.Payouts != nil && refundable(inv) == nil
}

// errorStatus is the status of a page that shows err, an error of the
// input (fieldErrors).
func errorStatus(err error) int {
	switch kassa.ErrorCode(err) {
	case kassa.Conflict:
		return http.StatusConflict
	case kassa.PaymentRequired:
		return http.StatusPaymentRequired
	case kassa.Unavailable:
		return http.StatusServiceUnavailable
	}
	return http.StatusUnprocessableEntity
}

func (h *Dashboard) refundPage(w http.ResponseWriter, r *http.Request) {
	inv := h.invoiceOf(w, r)
	if inv == nil {
		return
	}
	data := map[string]any{"Inv": inv, "F": map[string]string{"choice": string(kassa.RefundRateThen), "customCurrency": string(inv.Currency)}}
	if err := refundable(inv); err != nil {
		m, ok := fieldErrors(r, err)
		if !ok {
			h.serverError(w, r, err)
			return
		}
		data["Error"], data["NotRefundable"] = m, true
		h.render(w, r, errorStatus(err), "refund", data)
		return
	}
	h.render(w, r, http.StatusOK, "refund", data)
}

// refundRequest reads the refund form, or says what is wrong with it.
func refundRequest(r *http.Request, lang string) (kassa.RefundRequest, string) {
	f := r.PostForm
	req := kassa.RefundRequest{Choice: kassa.RefundChoice(f.Get("choice")), CustomCurrency: kassa.Currency(f.Get("customCurrency")),
		Description: strings.TrimSpace(f.Get("description"))}
	if req.Choice == kassa.RefundCustom {
		d, problem := formAmount(requestLang(r), strings.TrimSpace(f.Get("customAmount")))
		if problem != "" {
			return req, msgIn(lang, "ref.customamount") + ": " + problem
		}
		req.CustomAmount = d
	}
	if v := strings.TrimSpace(f.Get("subtractPercentage")); v != "" {
		d, problem := formAmount(requestLang(r), v)
		if problem != "" {
			return req, msgIn(lang, "ref.percent") + ": " + problem
		}
		req.SubtractPercentage = d
	}
	return req, ""
}

// aboveReceived says, in lang, when a custom refund of inv is worth more
// than the bitcoin inv received, valued at the rate the domain records
// with the refund; "" when it is not, or when the domain has no rate for
// its currency (the refund service decides then).
func aboveReceived(lang string, inv *kassa.Invoice, req kassa.RefundRequest) string {
	if req.Choice != kassa.RefundCustom {
		return ""
	}
	_, received, _, err := kassa.RefundAmount(inv, kassa.RefundRequest{Choice: kassa.RefundRateThen})
	if err != nil {
		return ""
	}
	c, amount, rate, err := kassa.RefundAmount(inv, req)
	if err != nil {
		return ""
	}
	// The most: the bitcoin received, in the refund's currency at its
	// rate.
	most := received
	if c != kassa.SATS {
		if !rate.IsPositive() {
			return ""
		}
		most = kassa.FiatValue(kassa.Sats(received.IntPart()), c, rate)
	}
	if !amount.GreaterThan(most) {
		return ""
	}
	return fmt.Sprintf(msgIn(lang, "err.refundabove"), i18n.Money(lang, amount, c), i18n.Money(lang, most, c))
}

func (h *Dashboard) refund(w http.ResponseWriter, r *http.Request) {
	inv := h.invoiceOf(w, r)
	if inv == nil {
		return
	}
	st := currentStore(r.Context())
	form := map[string]string{}
	for _, k := range []string{"choice", "customAmount", "customCurrency", "subtractPercentage", "description"} {
		form[k] = r.PostForm.Get(k)
	}
	data := map[string]any{"Inv": inv, "F": form}
	lang := h.lang(w, r)
	req, problem := refundRequest(r, lang)
	status := http.StatusUnprocessableEntity
	if problem == "" {
		problem = aboveReceived(lang, inv, req)
	}
	if problem == "" {
		pp, err := h.Refunds.RefundInvoice(r.Context(), st.ID, inv.ID, req)
		if err == nil {
			redirect(w, r, st, "/pull-payments/"+pp.ID, "refunded")
			return
		}
		m, ok := fieldErrors(r, err)
		if !ok {
			h.serverError(w, r, err)
			return
		}
		problem, status = m, errorStatus(err)
		data["NotRefundable"] = refundable(inv) != nil
	}
	data["Error"] = problem
	h.render(w, r, status, "refund", data)
}

// claimURL is the customer's page of pull payment id.
func (h *Dashboard) claimURL(id string) string {
	return strings.TrimRight(h.PublicURL, "/") + "/pull-payments/" + id
}

func (h *Dashboard) pullPaymentPage(w http.ResponseWriter, r *http.Request) {
	pp := storeOwned(h, w, r, "pullPaymentId", "pull payment", h.Payouts.PullPayment, func(p *kassa.PullPayment) string { return p.StoreID })
	if pp == nil {
		return
	}
	h.render(w, r, http.StatusOK, "refund", map[string]any{"PP": pp, "Link": h.claimURL(pp.ID), "Left": pp.Left()})
}

// payoutRow is a payout of the payouts page with the commands the
// domain allows on it now.
type payoutRow struct {
	*kassa.Payout
	CanApprove, CanStop bool
}

func (h *Dashboard) payoutsPage(w http.ResponseWriter, r *http.Request) {
	h.renderPayouts(w, r, http.StatusOK, map[string]any{})
}

func (h *Dashboard) renderPayouts(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	st := currentStore(r.Context())
	now := h.Clock.Now()
	var rows []payoutRow
	errEnough := errors.New("enough")
	err := h.Payouts.Payouts(r.Context(), st.ID, func(p *kassa.Payout) error {
		if len(rows) == maxPayoutsShown {
			return errEnough
		}
		// The buttons shown are the commands the payout's state takes
		// (the service decides again when one is sent).
		_, _, stop := p.Apply(kassa.PayoutCancel{At: now})
		rows = append(rows, payoutRow{Payout: p, CanApprove: p.State == kassa.PayoutAwaitingApproval, CanStop: stop == nil})
		return nil
	})
	if err != nil && !errors.Is(err, errEnough) {
		h.serverError(w, r, err)
		return
	}
	bal, err := h.Reader.Balance(r.Context(), st.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Payouts"], data["Balance"], data["More"] = rows, bal, len(rows) == maxPayoutsShown
	h.render(w, r, status, "payouts", data)
}

// payoutCommand answers a POST of a payout command: back to the payouts
// page with the done notice, or the page with the domain's reason.
func (h *Dashboard) payoutCommand(command func(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error), done string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		st := currentStore(r.Context())
		id := chi.URLParam(r, "payoutId")
		if !kassa.ValidID(id) {
			h.notFound(w, r)
			return
		}
		if _, err := command(r.Context(), st.ID, id); err != nil {
			m, ok := fieldErrors(r, err)
			if !ok {
				h.serverError(w, r, err)
				return
			}
			h.renderPayouts(w, r, errorStatus(err), map[string]any{"Error": m, "TopUp": kassa.ErrorCode(err) == kassa.PaymentRequired})
			return
		}
		redirect(w, r, st, "/payouts", done)
	}
}
