package http

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// The customer's claim page of a pull payment (docs/api.md, "Claim
// page"): GET /pull-payments/{pullPaymentId} shows the store, what is
// left to claim and a form for the destination; POST …/claim makes the
// payout through the refund service; the page then follows it through
// GET …/payouts/{payoutId}/status to "paid" with its proof. As in
// BTCPay, the pull payment's id is the capability: no key is asked.

// Claim page states of a payout, as the page's script knows them
// (pages.js polls while "waiting").
const (
	claimWaiting   = "waiting"   // awaiting approval, approved or being sent
	claimPaid      = "paid"      // completed
	claimFailed    = "failed"    // failed: the money went back to the store
	claimCancelled = "cancelled" // cancelled by the merchant
)

// claimPageData is what the claim page shows.
type claimPageData struct {
	pageBase
	ID, StoreName string
	Left          string
	Claimable     bool
	Error         string
	Destination   string
	Amount        string
	// Payout is the payout the page follows (after a claim), or nil.
	Payout *claimPayout
}

// claimPayout is the live part of the page: a payout's state and proof.
type claimPayout struct {
	ID, State, Key, StatusURL string
	Amount                    string
	PaymentHash, TxID         string
	Reason                    string
}

// claimState is the page's state of p.
func claimState(p *kassa.Payout) string {
	switch p.State {
	case kassa.PayoutCompleted:
		return claimPaid
	case kassa.PayoutFailed:
		return claimFailed
	case kassa.PayoutCancelled:
		return claimCancelled
	}
	return claimWaiting
}

// claimKey changes whenever what the page shows of p changes.
func claimKey(p *kassa.Payout) string {
	return p.State.String() + "/" + p.UpdatedAt.UTC().Format("20060102T150405.000000000")
}

// publicPullPayment reads the pull payment of a claim page's path.
func (s *server) publicPullPayment(r *http.Request) (*kassa.PullPayment, error) {
	id, err := pathID(r, "pullPaymentId", "pull payment")
	if err != nil {
		return nil, err
	}
	return s.Payouts.PullPayment(r.Context(), id)
}

// payoutOf returns the payout id of pp, or NotFound.
func (s *server) payoutOf(r *http.Request, pp *kassa.PullPayment, id string) (*kassa.Payout, error) {
	if !kassa.ValidID(id) {
		return nil, kassa.Errorf(kassa.NotFound, "payout not found")
	}
	p, err := s.Payouts.Payout(r.Context(), id)
	if err != nil {
		return nil, err
	}
	if p.PullPaymentID != pp.ID {
		return nil, kassa.Errorf(kassa.NotFound, "payout not found")
	}
	return p, nil
}

// claimPage shows the pull payment to its customer: the claim form, or
// with ?payout= the payout that claimed it, followed live.
func (s *server) claimPage(w http.ResponseWriter, r *http.Request) {
	pp, err := s.publicPullPayment(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	var po *kassa.Payout
	if id := r.URL.Query().Get("payout"); id != "" {
		if po, err = s.payoutOf(r, pp, id); err != nil {
			s.pageError(w, r, err)
			return
		}
	}
	s.renderClaimPage(w, r, http.StatusOK, pp, po, "", url.Values{})
}

// renderClaimPage renders the claim page of pp (following po when set)
// with status, an error message from a refused claim and its form.
func (s *server) renderClaimPage(w http.ResponseWriter, r *http.Request, status int, pp *kassa.PullPayment, po *kassa.Payout, msg string, form url.Values) {
	st, err := s.Reader.Store(r.Context(), pp.StoreID)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		s.pageError(w, r, err)
		return
	}
	var storeLang string
	if st != nil {
		storeLang = st.DefaultLanguage
	}
	base := s.newPageBase(r, "", storeLang)
	base.PageTitle = i18n.T(base.Lang, "refund.pageTitle")
	now := s.now()
	data := claimPageData{
		ID:          pp.ID,
		Left:        i18n.Money(base.Lang, pp.Left(), pp.Currency),
		Claimable:   pp.Left().IsPositive() && !pp.Archived && (pp.ExpiresAt.IsZero() || now.Before(pp.ExpiresAt)),
		Error:       msg,
		Destination: form.Get("destination"),
		Amount:      form.Get("amount"),
	}
	if st != nil {
		base.Brand = storeBrand(st)
		data.StoreName = st.Name
	}
	if po != nil {
		data.Payout = &claimPayout{
			ID: po.ID, State: claimState(po), Key: claimKey(po),
			StatusURL: "/pull-payments/" + pp.ID + "/payouts/" + po.ID + "/status",
			Amount:    i18n.BTC(base.Lang, po.Amount), PaymentHash: po.PaymentHash, TxID: po.TxID,
		}
		if po.State == kassa.PayoutFailed {
			data.Payout.Reason = po.LastError
		}
		if data.Payout.State == claimWaiting {
			base.Refresh = 10
		}
	}
	data.pageBase = base
	name := "claim"
	if po != nil && r.URL.Query().Get("part") == "live" {
		name = "claim-live"
	}
	w.Header().Set("Cache-Control", "no-store")
	s.renderPage(w, r, status, name, base.Nonce, data)
}

// sameOrigin reports whether a form post comes from the service's own
// pages: a browser says so in Sec-Fetch-Site, else in Origin (which the
// pages' no-referrer policy makes "null": then Sec-Fetch-Site alone
// decides).
func (s *server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" {
		return site == "same-origin" || site == "none"
	}
	origin := r.Header.Get("Origin")
	if origin == "" || origin == "null" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil {
		return false
	}
	if strings.EqualFold(u.Host, r.Host) {
		return true
	}
	if pub, err := url.Parse(s.publicURL); err == nil && s.publicURL != "" {
		return strings.EqualFold(u.Host, pub.Host)
	}
	return false
}

// maxClaimForm bounds a claim form's body: a BOLT11 invoice and an
// amount.
const maxClaimForm = 8 << 10

// claimPost claims the pull payment for the form's destination (and
// amount: empty claims a Lightning invoice's amount, or all that is
// left) and sends the customer to the page following the payout. A
// refused claim shows the page again with its reason and the 4xx of
// the refusal; nothing is written. Each claim takes a token of the
// client's payment bucket, as a pay link's new invoice does.
func (s *server) claimPost(w http.ResponseWriter, r *http.Request) {
	if !s.sameOrigin(r) {
		s.pageError(w, r, kassa.Errorf(kassa.Forbidden, "a claim is made from the claim page itself"))
		return
	}
	pp, err := s.publicPullPayment(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	if ok, wait := s.public.pay.allow(s.clientAddress(r)); !ok {
		s.retryAfter(w, r, wait, true)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxClaimForm)
	if err := r.ParseForm(); err != nil {
		s.pageError(w, r, kassa.Errorf(kassa.Invalid, "the claim form could not be read"))
		return
	}
	dest := strings.TrimSpace(r.PostForm.Get("destination"))
	amount := decimal.Zero
	if raw := strings.TrimSpace(r.PostForm.Get("amount")); raw != "" {
		if amount, err = decimal.NewFromString(raw); err != nil || !amount.IsPositive() {
			s.claimRefused(w, r, pp, kassa.Errorf(kassa.Invalid, "the amount must be a positive number"))
			return
		}
	}
	if dest == "" {
		s.claimRefused(w, r, pp, kassa.Errorf(kassa.Invalid, "give where to be paid"))
		return
	}
	po, err := s.Refunds.Claim(r.Context(), pp.ID, dest, amount)
	if err != nil {
		s.claimRefused(w, r, pp, err)
		return
	}
	target := "/pull-payments/" + pp.ID + "?payout=" + po.ID
	if lang := r.URL.Query().Get("lang"); i18n.Supported(lang) {
		target += "&lang=" + lang
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// claimRefused shows the claim page again with why the claim was
// refused, under its status.
func (s *server) claimRefused(w http.ResponseWriter, r *http.Request, pp *kassa.PullPayment, err error) {
	status, body := s.errorResponse(r, err)
	if status >= http.StatusInternalServerError {
		s.pageError(w, r, err)
		return
	}
	s.renderClaimPage(w, r, status, pp, nil, body.Message, r.PostForm)
}

// claimStatusRecord is the small answer the claim page polls.
type claimStatusRecord struct {
	State string `json:"state"`
	Key   string `json:"key"`
}

// claimStatus answers the state of a payout of the pull payment.
func (s *server) claimStatus(w http.ResponseWriter, r *http.Request) {
	pp, err := s.publicPullPayment(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	po, err := s.payoutOf(r, pp, chi.URLParam(r, "payoutId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, claimStatusRecord{State: claimState(po), Key: claimKey(po)})
}
