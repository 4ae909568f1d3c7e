package greenfield

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// Refunds as BTCPay serves them (swagger.template.pull-payments.json and
// the invoice refund of swagger.template.invoices.json, v2.4.1), over
// kassa.RefundService (docs/decisions.md, "Refunds: pull payments and
// payouts"). Names are translated, nothing is decided here:
//
//   - A pull payment in SATS is shown in BTC, as the plugin asks in BTC
//     for a shop priced in sats; its name is Kassa's description.
//   - refundVariant Fiat and CurrentRate are both Kassa's CurrentRate:
//     the invoice's price in its currency, paid at the rate of the
//     approval.
//   - Payout states: Approved is BTCPay's AwaitingPayment; Failed is
//     Cancelled (the money is back on the balance and the claim freed,
//     as for a cancellation).

// pullPaymentData is BTCPay's PullPaymentData.
type pullPaymentData struct {
	ID                string  `json:"id"`
	Name              string  `json:"name"`
	Description       *string `json:"description"`
	Currency          string  `json:"currency"`
	Amount            string  `json:"amount"`
	Period            *int64  `json:"period"`
	BOLT11Expiration  int64   `json:"BOLT11Expiration"`
	AutoApproveClaims bool    `json:"autoApproveClaims"`
	Archived          bool    `json:"archived"`
	ViewLink          string  `json:"viewLink"`
	StartsAt          int64   `json:"startsAt"`
	ExpiresAt         *int64  `json:"expiresAt"`
}

// bolt11ExpirationDays is BTCPay's default BOLT11Expiration (days).
const bolt11ExpirationDays = 30

// amountOf shows amount of currency c in BTCPay's units: SATS as BTC.
func amountOf(c kassa.Currency, amount decimal.Decimal) (string, string) {
	if c == kassa.SATS {
		return string(kassa.BTC), amount.Shift(-8).StringFixed(8)
	}
	return string(c), amount.StringFixed(c.Decimals())
}

// viewLink is the customer's claim page of a pull payment.
func (s *server) viewLink(id string) string {
	return s.publicURL + "/pull-payments/" + id
}

func (s *server) pullPaymentData(p *kassa.PullPayment) pullPaymentData {
	out := pullPaymentData{ID: p.ID, Name: p.Description, BOLT11Expiration: bolt11ExpirationDays,
		AutoApproveClaims: p.AutoApproveClaims, Archived: p.Archived, ViewLink: s.viewLink(p.ID), StartsAt: p.CreatedAt.Unix()}
	out.Currency, out.Amount = amountOf(p.Currency, p.Amount)
	if !p.ExpiresAt.IsZero() {
		exp := p.ExpiresAt.Unix()
		out.ExpiresAt = &exp
	}
	return out
}

// payoutData is BTCPay's PayoutData.
type payoutData struct {
	ID               string         `json:"id"`
	Revision         int            `json:"revision"`
	PullPaymentID    string         `json:"pullPaymentId"`
	Date             int64          `json:"date"`
	Destination      string         `json:"destination"`
	OriginalCurrency string         `json:"originalCurrency"`
	OriginalAmount   string         `json:"originalAmount"`
	PayoutCurrency   string         `json:"payoutCurrency"`
	PayoutAmount     *string        `json:"payoutAmount"`
	PayoutMethodID   string         `json:"payoutMethodId"`
	State            string         `json:"state"`
	PaymentProof     map[string]any `json:"paymentProof"`
	Metadata         map[string]any `json:"metadata"`
}

func payoutOut(p *kassa.Payout) payoutData {
	out := payoutData{ID: p.ID, PullPaymentID: p.PullPaymentID, Date: p.CreatedAt.Unix(), Destination: p.Destination.Address,
		PayoutCurrency: string(kassa.BTC), PayoutMethodID: MethodLightning, State: kassa.GreenfieldPayoutState(p.State), Metadata: map[string]any{}}
	out.OriginalCurrency, out.OriginalAmount = amountOf(p.Currency, p.Claimed)
	if p.Destination.Kind == kassa.DestinationOnchain {
		out.PayoutMethodID = MethodChain
	}
	if p.Amount > 0 {
		a := btc(p.Amount)
		out.PayoutAmount = &a
	}
	switch {
	case p.State != kassa.PayoutCompleted || p.MarkedPaid:
	case p.TxID != "":
		out.PaymentProof = map[string]any{"proofType": "PayoutTransactionOnChainBlob", "transactionId": p.TxID}
	case p.PaymentHash != "":
		out.PaymentProof = map[string]any{"proofType": "PayoutLightningBlob", "paymentHash": p.PaymentHash, "preimage": p.Preimage}
	}
	return out
}

// refundBody is BTCPay's InvoiceRefundRequest (swagger.template.invoices.json).
type refundBody struct {
	Name               string          `json:"name"`
	Description        string          `json:"description"`
	PaymentMethod      string          `json:"paymentMethod"`
	RefundVariant      string          `json:"refundVariant"`
	SubtractPercentage json.RawMessage `json:"subtractPercentage"`
	CustomAmount       json.RawMessage `json:"customAmount"`
	CustomCurrency     string          `json:"customCurrency"`
}

// createPullPaymentBody is PullPayments_CreatePullPayment's request;
// paymentMethods is the name btcpayserver-greenfield-php sends,
// payoutMethods BTCPay 2.x's.
type createPullPaymentBody struct {
	Name              string          `json:"name"`
	Description       string          `json:"description"`
	Amount            json.RawMessage `json:"amount"`
	Currency          string          `json:"currency"`
	Period            json.RawMessage `json:"period"`
	BOLT11Expiration  json.RawMessage `json:"BOLT11Expiration"`
	AutoApproveClaims *bool           `json:"autoApproveClaims"`
	StartsAt          json.RawMessage `json:"startsAt"`
	ExpiresAt         json.RawMessage `json:"expiresAt"`
	PaymentMethods    []string        `json:"paymentMethods"`
	PayoutMethods     []string        `json:"payoutMethods"`
}

// isNull reports whether a JSON value is absent or null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}

// decimalField reads an optional decimal given as a string or a number:
// zero when absent.
func decimalField(raw json.RawMessage) (decimal.Decimal, bool) {
	if isNull(raw) {
		return decimal.Zero, true
	}
	text, ok := jsonText(raw)
	if !ok {
		return decimal.Zero, false
	}
	d, err := decimal.NewFromString(strings.TrimSpace(text))
	return d, err == nil
}

// unixField reads an optional Unix time in seconds: zero when absent.
func unixField(raw json.RawMessage) (time.Time, bool) {
	if isNull(raw) {
		return time.Time{}, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) != nil {
		return time.Time{}, false
	}
	secs, err := n.Int64()
	if err != nil || secs < 0 {
		return time.Time{}, false
	}
	return time.Unix(secs, 0).UTC(), true
}

// description joins a pull payment's name and description into Kassa's
// one description.
func description(name, desc string) string {
	name, desc = strings.TrimSpace(name), strings.TrimSpace(desc)
	switch {
	case name == "":
		return desc
	case desc == "" || desc == name:
		return name
	}
	return name + ": " + desc
}

// createPullPayment answers POST /api/v1/stores/{storeId}/pull-payments.
// autoApproveClaims needs PermCreatePullPayments, asked first, as BTCPay
// does. What Kassa's pull payments do not do is refused rather than
// ignored: a period (they do not recur) and a later start.
func (s *server) createPullPayment(w http.ResponseWriter, r *http.Request) {
	var body createPullPaymentBody
	if !s.readBody(w, r, &body) {
		return
	}
	storeID := callerFrom(r.Context()).store.ID
	auto := body.AutoApproveClaims != nil && *body.AutoApproveClaims
	if auto && !kassa.PrincipalFrom(r.Context()).Can(storeID, kassa.PermCreatePullPayments) {
		permissionError(w, kassa.PermCreatePullPayments)
		return
	}
	var errs []validationError
	add := func(path, msg string) { errs = append(errs, validationError{Path: path, Message: msg}) }
	in := kassa.PullPaymentInput{Description: description(body.Name, body.Description), Currency: kassa.Currency(strings.ToUpper(strings.TrimSpace(body.Currency))),
		AutoApproveClaims: auto}
	amount, ok := decimalField(body.Amount)
	if !ok {
		add("amount", "must be a decimal amount, such as \"0.1\"")
	}
	in.Amount = amount
	if !isNull(body.Period) {
		add("period", "Kassa's pull payments do not recur: leave it null")
	}
	now := s.now()
	if t, ok := unixField(body.StartsAt); !ok {
		add("startsAt", "must be a Unix time in seconds")
	} else if t.After(now) {
		add("startsAt", "Kassa's pull payments start when made: leave it null")
	}
	if t, ok := unixField(body.ExpiresAt); !ok {
		add("expiresAt", "must be a Unix time in seconds")
	} else {
		in.ExpiresAt = t
	}
	for _, m := range append(body.PaymentMethods, body.PayoutMethods...) {
		if _, ok := parseMethod(m); !ok {
			add("paymentMethods", "unknown payment method "+quote(m)+": BTC-CHAIN or BTC-LN")
		}
	}
	if len(errs) > 0 {
		writeValidation(w, errs)
		return
	}
	pp, err := s.Refunds.CreatePullPayment(r.Context(), storeID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.pullPaymentData(pp))
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// now is the time of the service's clock, as the domain sees it.
func (s *server) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now().UTC()
	}
	return time.Now().UTC()
}

// refundVariants are InvoiceRefundRequest's refundVariant values, as
// Kassa's refund choices.
var refundVariants = map[string]kassa.RefundChoice{
	"RateThen":       kassa.RefundRateThen,
	"CurrentRate":    kassa.RefundCurrentRate,
	"Fiat":           kassa.RefundCurrentRate,
	"OverpaidAmount": kassa.RefundOverpaid,
	"Custom":         kassa.RefundCustom,
}

// refundInvoice answers POST
// /api/v1/stores/{storeId}/invoices/{invoiceId}/refund with the pull
// payment that refunds the invoice.
func (s *server) refundInvoice(w http.ResponseWriter, r *http.Request) {
	var body refundBody
	if !s.readBody(w, r, &body) {
		return
	}
	var errs []validationError
	add := func(path, msg string) { errs = append(errs, validationError{Path: path, Message: msg}) }
	req := kassa.RefundRequest{Description: description(body.Name, body.Description), CustomCurrency: kassa.Currency(strings.ToUpper(strings.TrimSpace(body.CustomCurrency)))}
	if c, ok := refundVariants[body.RefundVariant]; ok {
		req.Choice = c
	} else {
		add("refundVariant", "must be RateThen, CurrentRate, Fiat, OverpaidAmount or Custom")
	}
	if body.PaymentMethod != "" {
		if _, ok := parseMethod(body.PaymentMethod); !ok {
			add("paymentMethod", "unknown payment method "+quote(body.PaymentMethod)+": BTC-CHAIN or BTC-LN")
		}
	}
	var ok bool
	if req.SubtractPercentage, ok = decimalField(body.SubtractPercentage); !ok {
		add("subtractPercentage", "must be a decimal number from 0 to 100")
	}
	if req.CustomAmount, ok = decimalField(body.CustomAmount); !ok {
		add("customAmount", "must be a decimal amount")
	}
	if len(errs) > 0 {
		writeValidation(w, errs)
		return
	}
	inv := s.storeInvoice(w, r)
	if inv == nil {
		return
	}
	pp, err := s.Refunds.RefundInvoice(r.Context(), inv.StoreID, inv.ID, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.pullPaymentData(pp))
}

// listPullPayments answers GET /api/v1/stores/{storeId}/pull-payments:
// the store's pull payments, newest first, archived ones when asked.
func (s *server) listPullPayments(w http.ResponseWriter, r *http.Request) {
	archived, ok := boolQuery(w, r, "includeArchived")
	if !ok {
		return
	}
	out := []pullPaymentData{}
	err := s.Payouts.PullPayments(r.Context(), callerFrom(r.Context()).store.ID, func(p *kassa.PullPayment) error {
		if !p.Archived || archived {
			out = append(out, s.pullPaymentData(p))
		}
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// boolQuery reads an optional boolean query parameter, or answers 422.
func boolQuery(w http.ResponseWriter, r *http.Request, name string) (bool, bool) {
	switch v := strings.ToLower(r.URL.Query().Get(name)); v {
	case "", "false":
		return false, true
	case "true":
		return true, true
	}
	writeValidation(w, []validationError{{Path: name, Message: "must be true or false"}})
	return false, false
}

// getPullPayment answers GET /api/v1/pull-payments/{pullPaymentId},
// without a key as BTCPay does: the id is the customer's link.
func (s *server) getPullPayment(w http.ResponseWriter, r *http.Request) {
	if s.limited(w, "public/"+kassahttp.ClientAddress(r, s.ClientIPHeader)) {
		return
	}
	id := chi.URLParam(r, "pullPaymentId")
	var pp *kassa.PullPayment
	var err error = kassa.Errorf(kassa.NotFound, "pull payment not found")
	if kassa.ValidID(id) {
		pp, err = s.Payouts.PullPayment(r.Context(), id)
	}
	if kassa.ErrorCode(err) == kassa.NotFound {
		writeAPIError(w, http.StatusNotFound, "pullpayment-not-found", "The pull payment was not found")
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.pullPaymentData(pp))
}

// listPayouts answers GET /api/v1/stores/{storeId}/payouts: the store's
// payouts, newest first, cancelled ones when asked.
func (s *server) listPayouts(w http.ResponseWriter, r *http.Request) {
	cancelled, ok := boolQuery(w, r, "includeCancelled")
	if !ok {
		return
	}
	out := []payoutData{}
	err := s.Payouts.Payouts(r.Context(), callerFrom(r.Context()).store.ID, func(p *kassa.Payout) error {
		if d := payoutOut(p); d.State != "Cancelled" || cancelled {
			out = append(out, d)
		}
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func payoutNotFound(w http.ResponseWriter) {
	writeAPIError(w, http.StatusNotFound, "payout-not-found", "The payout was not found")
}

// getPayout answers GET /api/v1/stores/{storeId}/payouts/{payoutId}.
func (s *server) getPayout(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "payoutId")
	if !kassa.ValidID(id) {
		payoutNotFound(w)
		return
	}
	p, err := s.Payouts.Payout(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && p.StoreID != callerFrom(r.Context()).store.ID {
		payoutNotFound(w)
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, payoutOut(p))
}

// approveBody is PullPayments_ApprovePayout's request: revision is
// BTCPay's guard against a payout changed since it was read (Kassa's
// payouts do not change before approval); Kassa converts at its own
// rate, so a rateRule is refused.
type approveBody struct {
	Revision *int    `json:"revision"`
	RateRule *string `json:"rateRule"`
}

// payoutCommand runs command on the path's payout of the caller's
// store: a payout it does not have is 404 payout-not-found, a state the
// command does not apply to 400 invalid-state (BTCPay's codes). answer
// says whether the payout is the answer's body (else 200 without one).
func (s *server) payoutCommand(w http.ResponseWriter, r *http.Request, command func(ctx context.Context, storeID, payoutID string) (*kassa.Payout, error), answer bool) {
	id := chi.URLParam(r, "payoutId")
	if !kassa.ValidID(id) {
		payoutNotFound(w)
		return
	}
	p, err := command(r.Context(), callerFrom(r.Context()).store.ID, id)
	if err != nil {
		switch kassa.ErrorCode(err) {
		case kassa.NotFound:
			payoutNotFound(w)
		case kassa.Conflict:
			writeAPIError(w, http.StatusBadRequest, "invalid-state", kassa.ErrorMessage(err))
		default:
			s.writeError(w, r, err)
		}
		return
	}
	if !answer {
		w.WriteHeader(http.StatusOK)
		return
	}
	writeJSON(w, http.StatusOK, payoutOut(p))
}

// approvePayout answers POST /api/v1/stores/{storeId}/payouts/{payoutId}:
// the payout's amount and fee limit are debited from the store's
// prepaid balance (402 when it does not cover them).
func (s *server) approvePayout(w http.ResponseWriter, r *http.Request) {
	var body approveBody
	if !s.readBody(w, r, &body) {
		return
	}
	if body.RateRule != nil && *body.RateRule != "" {
		writeValidation(w, []validationError{{Path: "rateRule", Message: "Kassa converts at the rate of the approval: leave it null"}})
		return
	}
	s.payoutCommand(w, r, s.Refunds.Approve, true)
}

// cancelPayout answers DELETE /api/v1/stores/{storeId}/payouts/{payoutId}.
func (s *server) cancelPayout(w http.ResponseWriter, r *http.Request) {
	s.payoutCommand(w, r, s.Refunds.Cancel, false)
}

// markPayoutPaid answers POST
// /api/v1/stores/{storeId}/payouts/{payoutId}/mark-paid.
func (s *server) markPayoutPaid(w http.ResponseWriter, r *http.Request) {
	s.payoutCommand(w, r, s.Refunds.MarkPaid, false)
}

// refundRoutes are the refund routes of /api/v1 that need a key.
func (s *server) refundRoutes() []route {
	return []route{
		{http.MethodPost, "/stores/{storeId}/invoices/{invoiceId}/refund", s.refundInvoice},
		{http.MethodGet, "/stores/{storeId}/pull-payments", s.listPullPayments},
		{http.MethodPost, "/stores/{storeId}/pull-payments", s.createPullPayment},
		{http.MethodGet, "/stores/{storeId}/payouts", s.listPayouts},
		{http.MethodGet, "/stores/{storeId}/payouts/{payoutId}", s.getPayout},
		{http.MethodPost, "/stores/{storeId}/payouts/{payoutId}", s.approvePayout},
		{http.MethodDelete, "/stores/{storeId}/payouts/{payoutId}", s.cancelPayout},
		{http.MethodPost, "/stores/{storeId}/payouts/{payoutId}/mark-paid", s.markPayoutPaid},
	}
}
