package http

import (
	"html/template"
	"net/http"
	"strings"
	"time"

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
	ExpiryDate    time.Time
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

// percent renders a percentage as given, with lang's separators: "2.5"
// ("2,5" in German).
func percent(lang string, d decimal.Decimal) string {
	places := int32(0)
	if _, frac, ok := strings.Cut(d.String(), "."); ok {
		places = int32(len(frac))
	}
	return i18n.Number(lang, d, places)
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
	st, err := s.Reader.Store(r.Context(), p.StoreID)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		s.pageError(w, r, err)
		return
	}
	var storeLang string
	if st != nil {
		storeLang = st.DefaultLanguage
	}
	base := s.newPageBase(r, p.Title, storeLang)
	status := p.Status(s.now())
	data := payLinkPageData{
		ID:          p.ID,
		Title:       p.Title,
		Description: p.Description,
		Amount:      i18n.Money(base.Lang, p.Amount, currency),
		Discounted:  i18n.Money(base.Lang, discounted, currency),
		Discount:    percent(base.Lang, p.Discount),
		Currency:    currency,
		Status:      status,
		Payable:     status == kassa.PaymentRequestPending,
		Closed:      closedText(base.Lang, status),
		ExpiryDate:  p.ExpiryDate,
		Email:       p.CustomerEmail,
	}
	// Only an open link advertises its discount: a paid one was paid
	// at it, a closed one cannot be.
	data.HasDiscount = data.Payable && p.Discount.IsPositive()
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
				data.DiscountedBTC = i18n.BTC(base.Lang, sats)
			}
		}
	}
	data.pageBase = base
	s.renderPage(w, r, http.StatusOK, "paylink", base.Nonce, data)
}

// payLinkPay sends the customer to the checkout page of the invoice that
// pays the pay link (with the Bitcoin discount applied): the one the
// customer's cookie names while it can still be paid, else a new one.
// Every new invoice costs a token of the client's payment bucket and of
// the link's; once the link's bucket is empty a new customer is handed a
// recent invoice of the link that nobody paid yet (paylinkpool.go), so
// that strangers cannot lock a link for its customers.
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
	ticket, ok := s.readTicket(r)
	if !ok {
		ticket = payLinkTicket{Session: kassa.NewSecret()[:32]}
	}
	// A returning customer resumes its open invoice, buckets untouched.
	var inv *kassa.Invoice
	if ticket.Link == p.ID {
		inv = s.openInvoiceOf(r, p, ticket.Invoice, false)
	}
	if inv == nil {
		if ok, wait := s.public.pay.allow(s.clientAddress(r)); !ok {
			s.retryAfter(w, r, wait, true)
			return
		}
		if ok, wait := s.public.payLink.allow(p.ID); ok {
			s.payLinkPool.started(p.ID)
			inv, err = s.PaymentRequests.PayPaymentRequest(r.Context(), p.StoreID, p.ID, ticket.Session)
			if err == nil {
				s.payLinkPool.add(p.ID, inv)
			}
			s.payLinkPool.finished(p.ID)
			if err != nil {
				s.pageError(w, r, err)
				return
			}
		} else if inv = s.handOut(r, p); inv == nil {
			s.retryAfter(w, r, wait, true)
			return
		}
	}
	if had := ticket; !ok || had.Link != p.ID || had.Invoice != inv.ID {
		ticket.Link, ticket.Invoice = p.ID, inv.ID
		s.writeTicket(w, ticket)
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
// a pay link's Pay button to one invoice (payLinkTicket).
const payLinkSessionCookie = "kassa_paylink_session"
