package http

import (
	"bytes"
	"crypto/rand"
	"embed"
	"encoding/base64"
	"html/template"
	"net/http"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

//go:embed templates/*.html
var templateFiles embed.FS

// pages are the customer pages: checkout, pay link and error.
var pages = template.Must(template.ParseFS(templateFiles, "templates/*.html"))

// pageBase is what every page's layout reads.
type pageBase struct {
	PageTitle  string
	Nonce      string
	Simulation bool
}

// newPageBase returns the layout data of a page with a fresh CSP nonce.
func (s *server) newPageBase(title string) pageBase {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return pageBase{PageTitle: title, Nonce: base64.RawURLEncoding.EncodeToString(b[:]), Simulation: s.Simulator != nil}
}

// renderPage answers an HTML page. Inline styles and scripts run only
// with the page's nonce; the page loads nothing from elsewhere.
func (s *server) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, nonce string, data any) {
	var buf bytes.Buffer
	if err := pages.ExecuteTemplate(&buf, name, data); err != nil {
		s.log.ErrorContext(r.Context(), "render page", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", "default-src 'none'; img-src data:; style-src 'nonce-"+nonce+"'; script-src 'nonce-"+nonce+"'; connect-src 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// errorPage is the data of the error page.
type errorPage struct {
	pageBase
	Heading, Text string
}

// pageError answers err as an HTML page with the status of its code.
func (s *server) pageError(w http.ResponseWriter, r *http.Request, err error) {
	status, body := s.errorResponse(r, err)
	heading := http.StatusText(status)
	base := s.newPageBase(heading)
	s.renderPage(w, r, status, "error", base.Nonce, errorPage{pageBase: base, Heading: heading, Text: body.Message})
}

// checkoutPageData is what the checkout page shows.
type checkoutPageData struct {
	pageBase
	ID, StoreName    string
	HasAmount        bool
	Sats             kassa.Sats
	BTC, Fiat        string
	Status           string
	AdditionalStatus string
	Open, Settled    bool
	Bolt11, Address  string
	// OnchainUnavailable says why no address is offered (an amount below
	// the store's on-chain minimum).
	OnchainUnavailable    string
	LightningURI, BIP21   template.URL
	LightningQR           template.URL
	BitcoinQR             template.URL
	ExpiresAt             string
	RedirectURL           string
	RedirectAutomatically bool
}

// btcString renders sats as bitcoin with eight decimals.
func btcString(s kassa.Sats) string { return decimal.New(int64(s), -8).StringFixed(8) }

// publicInvoice reads the invoice of a customer page's path.
func (s *server) publicInvoice(r *http.Request) (*kassa.Invoice, error) {
	id, err := pathID(r, "invoiceId", "invoice")
	if err != nil {
		return nil, err
	}
	inv, err := s.Reader.Invoice(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound {
		return nil, errInvoiceNotFound
	}
	return inv, err
}

// invoiceShortLink sends /i/{invoiceId}, the short invoice link some
// shop plugins print, to the invoice's checkout page.
func (s *server) invoiceShortLink(w http.ResponseWriter, r *http.Request) {
	id, err := pathID(r, "invoiceId", "invoice")
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	target := s.checkoutLink(id)
	if s.publicURL == "" {
		target = "/checkout/" + id
	}
	http.Redirect(w, r, target, http.StatusFound)
}

// checkoutPage shows an invoice to the customer: amount, status, both QR
// codes, address and BOLT11, and, in simulation, buttons that pay it and
// mine blocks. A small script polls the status and redirects to the shop
// once the invoice is settled, when the invoice asks for it.
func (s *server) checkoutPage(w http.ResponseWriter, r *http.Request) {
	inv, err := s.publicInvoice(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	uri := invoiceBIP21(inv)
	codes, err := invoiceQRCodes(inv.LightningInvoice, uri)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	base := s.newPageBase("Pay " + inv.TerminalName)
	data := checkoutPageData{
		pageBase:              base,
		ID:                    inv.ID,
		StoreName:             inv.TerminalName,
		HasAmount:             inv.Amount > 0,
		Sats:                  inv.Amount,
		BTC:                   btcString(inv.Amount),
		Status:                inv.Status.String(),
		AdditionalStatus:      inv.AdditionalStatus.String(),
		Open:                  inv.Status == kassa.InvoiceNew,
		Settled:               inv.Status == kassa.InvoiceSettled,
		Bolt11:                inv.LightningInvoice,
		Address:               inv.OnchainAddress,
		OnchainUnavailable:    inv.OnchainUnavailableReason,
		LightningURI:          template.URL("lightning:" + strings.ToUpper(inv.LightningInvoice)),
		BIP21:                 template.URL(uri),
		LightningQR:           template.URL(codes.LightningQR),
		BitcoinQR:             template.URL(codes.BitcoinQR),
		ExpiresAt:             inv.ExpiresAt.UTC().Format("2006-01-02 15:04"),
		RedirectURL:           inv.RedirectURL,
		RedirectAutomatically: inv.RedirectAutomatically,
	}
	if inv.Currency.IsFiat() {
		data.Fiat = inv.InvoiceAmount.StringFixed(inv.Currency.Decimals()) + " " + string(inv.Currency)
	}
	s.renderPage(w, r, http.StatusOK, "checkout", base.Nonce, data)
}

// checkoutStatusRecord is what the checkout page polls.
type checkoutStatusRecord struct {
	Status           string     `json:"status"`
	AdditionalStatus string     `json:"additionalStatus"`
	TotalPaid        kassa.Sats `json:"totalPaid"`
}

func (s *server) checkoutStatus(w http.ResponseWriter, r *http.Request) {
	inv, err := s.publicInvoice(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, checkoutStatusRecord{
		Status:           inv.Status.String(),
		AdditionalStatus: inv.AdditionalStatus.String(),
		TotalPaid:        inv.TotalPaid(),
	})
}

// checkoutSimPay pays the invoice of the page through the simulator
// (?method=lightning or onchain). It is routed only in simulation.
func (s *server) checkoutSimPay(w http.ResponseWriter, r *http.Request) {
	inv, err := s.publicInvoice(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.simPay(r, inv, r.URL.Query().Get("method"), 0)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// checkoutSimMine mines one block. It is routed only in simulation.
func (s *server) checkoutSimMine(w http.ResponseWriter, r *http.Request) {
	if _, err := s.publicInvoice(r); err != nil {
		s.writeError(w, r, err)
		return
	}
	height, err := s.Simulator.Mine(r.Context(), 1)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, simMined{Height: height})
}

// payLinkPageData is what the pay-link page shows.
type payLinkPageData struct {
	pageBase
	ID, Title, Description string
	Amount, Discounted     string
	Discount               string
	HasDiscount            bool
	Currency               kassa.Currency
	Status                 string
	Payable                bool
	Closed                 string
	ExpiryDate             string
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

// closedText says why a pay link cannot be paid.
func closedText(status string) string {
	switch status {
	case kassa.PaymentRequestExpired:
		return "This payment link has expired and can no longer be paid."
	case kassa.PaymentRequestArchived:
		return "This payment link has been archived by the merchant and can no longer be paid."
	case kassa.PaymentRequestCompleted:
		return "This payment link has been paid. Thank you!"
	}
	return "This payment link cannot be paid."
}

// publicPaymentRequest reads the pay link of a customer page's path.
func (s *server) publicPaymentRequest(r *http.Request) (*kassa.PaymentRequest, error) {
	id, err := pathID(r, "id", "payment request")
	if err != nil {
		return nil, err
	}
	return s.paymentRequestOfStore(r.Context(), "", id)
}

// payLinkPage shows a pay link to the customer with a Pay button while it
// can be paid.
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
	status := p.Status(s.now())
	base := s.newPageBase(p.Title)
	s.renderPage(w, r, http.StatusOK, "paylink", base.Nonce, payLinkPageData{
		pageBase:    base,
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
		Closed:      closedText(status),
		ExpiryDate:  p.ExpiryDate.UTC().Format("2006-01-02 15:04"),
	})
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
		s.pageError(w, r, kassa.Errorf(kassa.Conflict, "%s", closedText(status)))
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
