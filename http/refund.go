package http

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// Refunds (docs/decisions.md, "Refunds: pull payments and payouts"):
// pull payments, the refund of an invoice, claims and payouts, under
// the store; served when Deps.Refunds and Deps.Payouts are set.

// pullPaymentRecord is a pull payment as the API shows it.
type pullPaymentRecord struct {
	ID          string         `json:"id"`
	StoreID     string         `json:"storeId"`
	InvoiceID   string         `json:"invoiceId,omitempty"`
	Description string         `json:"description"`
	Currency    kassa.Currency `json:"currency"`
	Amount      json.Number    `json:"amount"`
	Claimed     json.Number    `json:"claimed"`
	Left        json.Number    `json:"left"`
	Rate        json.Number    `json:"rate,omitempty"`
	ExpiresAt   string         `json:"expiresAt,omitempty"`
	CreatedAt   string         `json:"createdAt"`
	Archived    bool           `json:"archived"`
	// AutoApproveClaims is kassa.PullPayment.AutoApproveClaims.
	AutoApproveClaims bool `json:"autoApproveClaims"`
}

func pullPaymentOut(p *kassa.PullPayment) pullPaymentRecord {
	out := pullPaymentRecord{ID: p.ID, StoreID: p.StoreID, InvoiceID: p.InvoiceID, Description: p.Description,
		Currency: p.Currency, Amount: number(p.Amount), Claimed: number(p.Claimed), Left: number(p.Left()),
		CreatedAt: rfc3339(p.CreatedAt), Archived: p.Archived, AutoApproveClaims: p.AutoApproveClaims}
	if p.Rate.IsPositive() {
		out.Rate = number(p.Rate)
	}
	if !p.ExpiresAt.IsZero() {
		out.ExpiresAt = rfc3339(p.ExpiresAt)
	}
	return out
}

// payoutRecord is a payout as the API shows it, with its proof.
type payoutRecord struct {
	ID              string         `json:"id"`
	StoreID         string         `json:"storeId"`
	PullPaymentID   string         `json:"pullPaymentId"`
	InvoiceID       string         `json:"invoiceId,omitempty"`
	State           string         `json:"state"`
	Destination     string         `json:"destination"`
	DestinationKind string         `json:"destinationKind"`
	Currency        kassa.Currency `json:"currency"`
	Claimed         json.Number    `json:"claimed"`
	Amount          kassa.Sats     `json:"amount"`
	Rate            json.Number    `json:"rate,omitempty"`
	FeeLimit        kassa.Sats     `json:"feeLimit"`
	NetworkFee      kassa.Sats     `json:"networkFee"`
	PaymentHash     string         `json:"paymentHash,omitempty"`
	TxID            string         `json:"txid,omitempty"`
	MarkedPaid      bool           `json:"markedPaid"`
	LastError       string         `json:"lastError,omitempty"`
	CreatedAt       string         `json:"createdAt"`
	UpdatedAt       string         `json:"updatedAt"`
}

var destinationKinds = map[kassa.DestinationKind]string{
	kassa.DestinationBOLT11: "BOLT11", kassa.DestinationLNURL: "LNURL", kassa.DestinationOnchain: "Onchain",
}

func payoutOut(p *kassa.Payout) payoutRecord {
	out := payoutRecord{ID: p.ID, StoreID: p.StoreID, PullPaymentID: p.PullPaymentID, InvoiceID: p.InvoiceID,
		State: p.State.String(), Destination: p.Destination.Address, DestinationKind: destinationKinds[p.Destination.Kind],
		Currency: p.Currency, Claimed: number(p.Claimed), Amount: p.Amount, FeeLimit: p.FeeLimit, NetworkFee: p.NetworkFee,
		PaymentHash: p.PaymentHash, TxID: p.TxID, MarkedPaid: p.MarkedPaid, LastError: p.LastError,
		CreatedAt: rfc3339(p.CreatedAt), UpdatedAt: rfc3339(p.UpdatedAt)}
	if p.Rate.IsPositive() {
		out.Rate = number(p.Rate)
	}
	return out
}

// refundBody is the refund of an invoice.
type refundBody struct {
	RefundVariant      string          `json:"refundVariant"`
	CustomAmount       json.RawMessage `json:"customAmount"`
	CustomCurrency     string          `json:"customCurrency"`
	SubtractPercentage json.RawMessage `json:"subtractPercentage"`
	Description        string          `json:"description"`
}

// pullPaymentBody creates a pull payment.
type pullPaymentBody struct {
	Amount      json.RawMessage `json:"amount"`
	Currency    string          `json:"currency"`
	Description string          `json:"description"`
	ExpiresAt   flexString      `json:"expiresAt"`
	// AutoApproveClaims true needs kassa.PermCreatePullPayments.
	AutoApproveClaims *bool `json:"autoApproveClaims"`
}

// claimBody claims a pull payment.
type claimBody struct {
	Destination string          `json:"destination"`
	Amount      json.RawMessage `json:"amount"`
}

// optionalDecimal reads an optional decimal field: zero when absent.
func optionalDecimal(field string, raw json.RawMessage) (decimal.Decimal, error) {
	d, ok, err := parseDecimalField(raw)
	if err != nil {
		return decimal.Zero, invalidField(field, kassa.ErrorMessage(err))
	}
	if !ok {
		return decimal.Zero, nil
	}
	return d, nil
}

func (s *server) refundInvoice(w http.ResponseWriter, r *http.Request) {
	var body refundBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req := kassa.RefundRequest{Choice: kassa.RefundChoice(body.RefundVariant), CustomCurrency: kassa.Currency(body.CustomCurrency), Description: body.Description}
	if req.CustomAmount, err = optionalDecimal("customAmount", body.CustomAmount); err == nil {
		req.SubtractPercentage, err = optionalDecimal("subtractPercentage", body.SubtractPercentage)
	}
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	pp, err := s.Refunds.RefundInvoice(r.Context(), callerFrom(r.Context()).store.ID, chi.URLParam(r, "invoiceId"), req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pullPaymentOut(pp))
}

func (s *server) createPullPayment(w http.ResponseWriter, r *http.Request) {
	var body pullPaymentBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	in := kassa.PullPaymentInput{Currency: kassa.Currency(body.Currency), Description: body.Description,
		AutoApproveClaims: body.AutoApproveClaims != nil && *body.AutoApproveClaims}
	storeID := callerFrom(r.Context()).store.ID
	if in.AutoApproveClaims && !kassa.PrincipalFrom(r.Context()).Can(storeID, kassa.PermCreatePullPayments) {
		s.writeError(w, r, missingPermission(kassa.PermCreatePullPayments))
		return
	}
	if in.Currency == "" {
		in.Currency = kassa.SATS
	}
	in.Amount, err = optionalDecimal("amount", body.Amount)
	if err == nil && body.ExpiresAt != "" {
		var t time.Time
		if t, err = kassa.ParseDate(string(body.ExpiresAt)); err != nil {
			err = invalidField("expiresAt", kassa.ErrorMessage(err))
		}
		in.ExpiresAt = t
	}
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	pp, err := s.Refunds.CreatePullPayment(r.Context(), storeID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pullPaymentOut(pp))
}

var (
	errPullPaymentNotFound = kassa.Errorf(kassa.NotFound, "pull payment not found")
	errPayoutNotFound      = kassa.Errorf(kassa.NotFound, "payout not found")
)

// storePullPayment reads the caller's store's pull payment of the path.
func (s *server) storePullPayment(r *http.Request) (*kassa.PullPayment, error) {
	pp, err := s.Payouts.PullPayment(r.Context(), chi.URLParam(r, "pullPaymentId"))
	if err != nil {
		return nil, err
	}
	if pp.StoreID != callerFrom(r.Context()).store.ID {
		return nil, errPullPaymentNotFound
	}
	return pp, nil
}

func (s *server) getPullPayment(w http.ResponseWriter, r *http.Request) {
	pp, err := s.storePullPayment(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, pullPaymentOut(pp))
}

func (s *server) listPullPayments(w http.ResponseWriter, r *http.Request) {
	storeID := callerFrom(r.Context()).store.ID
	listByID(s, w, r,
		func(fn func(*kassa.PullPayment) error) error { return s.Payouts.PullPayments(r.Context(), storeID, fn) },
		func(p *kassa.PullPayment) string { return p.ID },
		func(p *kassa.PullPayment) time.Time { return p.CreatedAt },
		func(p *kassa.PullPayment) any { return pullPaymentOut(p) })
}

// claimPullPayment makes a payout of the store's pull payment, awaiting
// approval.
func (s *server) claimPullPayment(w http.ResponseWriter, r *http.Request) {
	var body claimBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	amount, err := optionalDecimal("amount", body.Amount)
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	pp, err := s.storePullPayment(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.Refunds.Claim(r.Context(), pp.ID, body.Destination, amount)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutOut(p))
}

func (s *server) getPayout(w http.ResponseWriter, r *http.Request) {
	p, err := s.Payouts.Payout(r.Context(), chi.URLParam(r, "payoutId"))
	if err == nil && p.StoreID != callerFrom(r.Context()).store.ID {
		err = errPayoutNotFound
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutOut(p))
}

func (s *server) listPayouts(w http.ResponseWriter, r *http.Request) {
	storeID := callerFrom(r.Context()).store.ID
	listByID(s, w, r,
		func(fn func(*kassa.Payout) error) error { return s.Payouts.Payouts(r.Context(), storeID, fn) },
		func(p *kassa.Payout) string { return p.ID },
		func(p *kassa.Payout) time.Time { return p.CreatedAt },
		func(p *kassa.Payout) any { return payoutOut(p) })
}

// changePayout answers a payout command of the store's payout in the
// path.
func (s *server) changePayout(w http.ResponseWriter, r *http.Request, command func(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error)) {
	p, err := command(r.Context(), callerFrom(r.Context()).store.ID, chi.URLParam(r, "payoutId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutOut(p))
}

func (s *server) approvePayout(w http.ResponseWriter, r *http.Request) {
	s.changePayout(w, r, s.Refunds.Approve)
}

func (s *server) cancelPayout(w http.ResponseWriter, r *http.Request) {
	s.changePayout(w, r, s.Refunds.Cancel)
}

func (s *server) markPayoutPaid(w http.ResponseWriter, r *http.Request) {
	s.changePayout(w, r, s.Refunds.MarkPaid)
}

// refundRoutes adds the refund routes under a store.
// refundsAvailable answers the refund routes 404 where the server has
// no refund service (Deps.Refunds or Deps.Payouts nil).
func (s *server) refundsAvailable(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.Refunds == nil || s.Payouts == nil {
			s.writeError(w, r, kassa.Errorf(kassa.NotFound, "refunds are not served here"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (s *server) refundRoutes(r chi.Router) {
	on := s.permitted(r, "/api/v1/stores/{storeId}")
	// A create sent again with its Idempotency-Key is answered with the
	// first one's record: a second pull payment could pay twice.
	on(http.MethodPost, "/invoices/{invoiceId}/refund", s.refundInvoice, s.idempotent)
	on(http.MethodGet, "/pull-payments", s.listPullPayments)
	on(http.MethodPost, "/pull-payments", s.createPullPayment, s.idempotent)
	on(http.MethodGet, "/pull-payments/{pullPaymentId}", s.getPullPayment)
	on(http.MethodPost, "/pull-payments/{pullPaymentId}/payouts", s.claimPullPayment, s.idempotent)
	on(http.MethodGet, "/payouts", s.listPayouts)
	on(http.MethodGet, "/payouts/{payoutId}", s.getPayout)
	on(http.MethodPost, "/payouts/{payoutId}/approve", s.approvePayout)
	on(http.MethodPost, "/payouts/{payoutId}/cancel", s.cancelPayout)
	on(http.MethodPost, "/payouts/{payoutId}/mark-paid", s.markPayoutPaid)
}
