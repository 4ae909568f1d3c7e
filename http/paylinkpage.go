package http

import (
	"html/template"
	"net/http"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
)

// payLinkPageData is what the pay-link page shows. The pay link's
// internal note is the merchant's and is not in it.
type payLinkPageData struct {
	pageBase
	ID, Title, Description string
	StoreName              string
	LogoURL                template.URL
	Amount, Discounted     string
	Discount               string
	HasDiscount            bool
	// DiscountedBTC is the discounted amount in bitcoin at the current
	// rate; empty when no rate is at hand.
	DiscountedBTC string
	Currency      kassa.Currency
	Status        string
	Payable       bool
	Closed        string
	ExpiryDate    string
	Email         string
}

// payLinkTerms are the currency and the amount, with the Bitcoin discount
// applied, that paying p asks for.
func (s *server) payLinkTerms(r *http.Request, p *kassa.PaymentRequest) (kassa.Currency, decimal.Decimal, error) {
	currency := p.Currency
	if currency == "" {
		st, err := s.Reader.Store(r.Context(), p.StoreID)
		if err != nil {
			return "", decimal.Zero, err
		}
		currency = st.Currency
	}
	return currency, p.PayAmount(currency), nil
}

// closedText says, in lang, why a pay link cannot be paid.
func closedText(lang, status string) string {
	switch status {
	case kassa.PaymentRequestExpired:
		return i18n.T(lang, "paylink.closedExpired")
	case kassa.PaymentRequestArchived:
		return i18n.T(lang, "paylink.closedArchived")
	case kassa.PaymentRequestCompleted:
		return i18n.T(lang, "paylink.closedCompleted")
	}
	return i18n.T(lang, "paylink.closed")
}

// publicPaymentRequest reads the pay link of a customer page's path.
func (s *server) publicPaymentRequest(r *http.Request) (*kassa.PaymentRequest, error) {
	id, err := pathID(r, "id", "payment request")
	if err != nil {
		return nil, err
	}
	return s.paymentRequestOfStore(r.Context(), "", id)
}

// payLinkPage shows a pay link to the customer: who asks, for what, how
// much (and how much in bitcoin with the discount), until when, with a
// Pay button while it can be paid.
func (s *server) payLinkPage(w http.ResponseWriter, r *http.Request) {
	p, err := s.publicPaymentRequest(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	currency, discounted, err := s.payLinkTerms(r, p)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	base := s.newPageBase(r, p.Title)
	st, err := s.Reader.Store(r.Context(), p.StoreID)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		s.pageError(w, r, err)
		return
	}
	status := p.Status(s.now())
	data := payLinkPageData{
		ID:          p.ID,
		Title:       p.Title,
		Description: p.Description,
		Amount:      p.Amount.StringFixed(currency.Decimals()),
		Discounted:  discounted.StringFixed(currency.Decimals()),
		Discount:    p.Discount.String(),
		HasDiscount: p.Discount.IsPositive(),
		Currency:    currency,
		Status:      status,
		Payable:     status == kassa.PaymentRequestPending,
		Closed:      closedText(base.Lang, status),
		ExpiryDate:  p.ExpiryDate.UTC().Format("2006-01-02 15:04"),
		Email:       p.CustomerEmail,
	}
	if st != nil {
		base.Brand = storeBrand(st)
		data.StoreName = st.Name
		if kassa.ValidateLogoURL(st.LogoURL) == nil {
			data.LogoURL = template.URL(st.LogoURL)
		}
	}
	if data.Payable {
		if rate, err := s.Rates.Rate(r.Context(), currency); err == nil {
			if sats, err := kassa.ToSats(discounted, currency, rate); err == nil && sats > 0 {
				data.DiscountedBTC = btcString(sats)
			}
		}
	}
	data.pageBase = base
	s.renderPage(w, r, http.StatusOK, "paylink", base.Nonce, data)
}

// payLinkPay sends the customer to the checkout page of the invoice that
// pays the pay link (with the Bitcoin discount applied): the one of the
// customer's session while it can still be paid, else a new one.
func (s *server) payLinkPay(w http.ResponseWriter, r *http.Request) {
	p, err := s.publicPaymentRequest(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	if status := p.Status(s.now()); status != kassa.PaymentRequestPending {
		s.pageError(w, r, kassa.Errorf(kassa.Conflict, "%s", closedText(i18n.FromRequest(r), status)))
		return
	}
	inv, err := s.PaymentRequests.PayPaymentRequest(r.Context(), p.StoreID, p.ID, payLinkSession(w, r, s.publicURL))
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	target := s.checkoutLink(inv.ID)
	if s.publicURL == "" {
		target = "/checkout/" + inv.ID
	}
	if lang := r.URL.Query().Get("lang"); i18n.Supported(lang) {
		target += "?lang=" + lang
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// payLinkSessionCookie names the cookie that ties a customer's clicks on
// a pay link's Pay button to one invoice.
const payLinkSessionCookie = "kassa_paylink_session"

// payLinkSession returns the customer's pay-link session token, setting a
// new one when the request has none (or a malformed one).
func payLinkSession(w http.ResponseWriter, r *http.Request, publicURL string) string {
	if c, err := r.Cookie(payLinkSessionCookie); err == nil && len(c.Value) == 32 && kassa.ValidID(c.Value) {
		return c.Value
	}
	token := kassa.NewSecret()[:32]
	http.SetCookie(w, &http.Cookie{
		Name:     payLinkSessionCookie,
		Value:    token,
		Path:     "/payment-requests/",
		MaxAge:   24 * 60 * 60,
		HttpOnly: true,
		Secure:   strings.HasPrefix(publicURL, "https://"),
		SameSite: http.SameSiteLaxMode,
	})
	return token
}
