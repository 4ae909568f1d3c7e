package http

import (
	"cmp"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/i18n"
	"github.com/kassapay/kassa/qr"
)

// Checkout states: what the customer is told, in plain words, about an
// invoice (checkoutState).
const (
	stateWaiting   = "waiting"   // nothing received yet
	stateUnderpaid = "underpaid" // part received, the rest still due
	stateSeen      = "seen"      // enough seen on-chain, not yet confirmed
	statePaid      = "paid"
	statePaidLate  = "paidLate" // settled by a payment after expiry
	stateExpired   = "expired"
	stateInvalid   = "invalid"
)

// checkoutState is the customer's view of inv's status.
func checkoutState(inv *kassa.Invoice) string {
	switch inv.Status {
	case kassa.InvoiceNew:
		if inv.TotalPaid() > 0 {
			return stateUnderpaid
		}
		return stateWaiting
	case kassa.InvoiceProcessing:
		return stateSeen
	case kassa.InvoiceSettled:
		if inv.AdditionalStatus == kassa.StatusPaidAfterExpiration {
			return statePaidLate
		}
		return statePaid
	case kassa.InvoiceExpired:
		return stateExpired
	}
	return stateInvalid
}

// checkoutKey changes whenever what the checkout page shows of inv
// changes: the page's script compares it with the status it polls and
// redraws the live part of the page when it differs.
func checkoutKey(inv *kassa.Invoice) string {
	conf, _ := onchainProgress(inv)
	return fmt.Sprintf("%s.%s.%d.%d", inv.Status, inv.AdditionalStatus, inv.TotalPaid(), conf)
}

// onchainProgress returns the confirmations of the least confirmed
// on-chain payment still counting (capped at what the invoice needs) and
// its txid.
func onchainProgress(inv *kassa.Invoice) (int32, string) {
	conf, txid := int32(-1), ""
	for _, p := range inv.Payments {
		if p.Method != kassa.MethodOnchain || p.Dropped {
			continue
		}
		if c := min(p.Confirmations, inv.ConfirmationsRequired); conf < 0 || c < conf {
			conf, txid = c, p.TxID
		}
	}
	return max(conf, 0), txid
}

// payTab is one way to pay on the checkout page: a QR code, an "Open in
// wallet" link and the values to copy.
type payTab struct {
	ID, Label, Hint, QRAlt string
	QR, URI                template.URL
	Href                   string
	Selected               bool
	Fields                 []copyField
}

// copyField is a value the customer may copy: an invoice, an address, an
// amount.
type copyField struct {
	ID, Label, Value, CopyLabel string
	Long                        bool
}

// checkoutPageData is what the checkout page shows.
type checkoutPageData struct {
	pageBase
	ID, StoreName, OrderID string
	// Item is what is paid for: metadata.itemDesc, or the title of the
	// pay link the invoice pays.
	Item string
	// LogoURL is the store's logo, a data:image URI checked by
	// kassa.ValidateLogoURL.
	LogoURL         template.URL
	HasAmount       bool
	BTC, Sats, Fiat string
	State, Key      string
	// Open: the customer can still pay (the tabs are shown).
	Open       bool
	Tabs       []payTab
	OnchainOff bool
	// Remaining is the time left to pay in seconds, ExpiresAt the
	// deadline.
	Remaining     int64
	Countdown     string
	ExpiresAt     time.Time
	Received, Due string
	Overpaid      string
	Confirmations int64
	Required      int64
	PartlyPaid    bool
	HasLightning  bool
	HasOnchain    bool
	TxID          string
	PaidAt        time.Time
	Method        string
	PaidFiat      string
	PayAgain      string
	// RedirectURL is the way back to the shop (redirectTarget), "" when
	// there is none; RedirectNow sends the customer there by itself.
	RedirectURL        string
	RedirectNow        bool
	StatusURL, PageURL string
}

// btcString renders sats as bitcoin with eight decimals, for a payment
// URI or a value to copy (a page shows i18n.BTC).
func btcString(s kassa.Sats) string { return decimal.New(int64(s), -8).StringFixed(8) }

// btcSats renders sats as "0.00025000 BTC (25,000 sats)" in lang.
func btcSats(lang string, s kassa.Sats) string {
	return i18n.BTC(lang, s) + " (" + i18n.Sats(lang, s) + ")"
}

// metadataText returns the member key of an invoice's metadata object:
// a string, or the digits of a number (plugins send order ids as both);
// "" otherwise.
func metadataText(metadata json.RawMessage, key string) string {
	var m map[string]json.RawMessage
	if len(metadata) == 0 || json.Unmarshal(metadata, &m) != nil || len(m[key]) == 0 {
		return ""
	}
	v := m[key]
	switch c := v[0]; {
	case c == '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case c == '-' || c >= '0' && c <= '9':
		return string(v)
	}
	return ""
}

// checkoutItem is what inv pays for: metadata.itemDesc, else the title
// of its pay link ("" when neither is at hand).
func (s *server) checkoutItem(r *http.Request, inv *kassa.Invoice) string {
	if item := metadataText(inv.Metadata, "itemDesc"); item != "" || inv.PaymentLinkID == "" {
		return item
	}
	p, err := s.paymentRequestOfStore(r.Context(), inv.StoreID, inv.PaymentLinkID)
	if err != nil {
		return ""
	}
	return p.Title
}

// bip21Amount is the BIP21 amount of sats: BTC without trailing zeros.
func bip21Amount(s kassa.Sats) string {
	return strings.TrimSuffix(strings.TrimRight(btcString(s), "0"), ".")
}

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

// checkoutPage shows an invoice to the customer: who is paid, how much,
// the time left, the state in plain words and, while it can be paid, one
// unified QR code with tabs for Lightning and on-chain only, copy buttons
// and "Open in wallet". A script (assets/checkout.js) polls the status
// and redraws the live part of the page in place; without scripts the
// page reloads itself. In simulation it has buttons that pay and mine.
func (s *server) checkoutPage(w http.ResponseWriter, r *http.Request) {
	inv, err := s.publicInvoice(r)
	if err != nil {
		s.pageError(w, r, err)
		return
	}
	st, err := s.Reader.Store(r.Context(), inv.StoreID)
	if err != nil && kassa.ErrorCode(err) != kassa.NotFound {
		s.pageError(w, r, err)
		return
	}
	var storeLang string
	if st != nil {
		storeLang = st.DefaultLanguage
	}
	base := s.newPageBase(r, "", inv.Language, storeLang)
	lang := base.Lang
	name := inv.TerminalName
	if st != nil {
		base.Brand = storeBrand(st)
		if name == "" {
			name = st.Name
		}
	}
	if name != "" {
		base.PageTitle = i18n.T(lang, "checkout.pageTitle", name)
	} else {
		base.PageTitle = i18n.T(lang, "checkout.payment")
	}
	now := s.now()
	state := checkoutState(inv)
	data := checkoutPageData{
		pageBase:     base,
		ID:           inv.ID,
		StoreName:    name,
		OrderID:      cmp.Or(inv.OrderID, metadataText(inv.Metadata, "orderId")),
		Item:         s.checkoutItem(r, inv),
		HasAmount:    inv.Amount > 0,
		BTC:          i18n.BTC(lang, inv.Amount),
		Sats:         i18n.Sats(lang, inv.Amount),
		State:        state,
		Key:          checkoutKey(inv),
		Open:         state == stateWaiting || state == stateUnderpaid,
		ExpiresAt:    inv.ExpiresAt,
		Required:     int64(max(inv.ConfirmationsRequired, 1)),
		HasLightning: inv.LightningInvoice != "",
		HasOnchain:   inv.OnchainAddress != "",
		StatusURL:    "/checkout/" + inv.ID + "/status",
		PageURL:      "/checkout/" + inv.ID,
	}
	data.RedirectURL = redirectTarget(inv, data.OrderID)
	if st != nil && kassa.ValidateLogoURL(st.LogoURL) == nil {
		data.LogoURL = template.URL(st.LogoURL)
	}
	switch {
	case inv.Currency.IsFiat():
		data.Fiat = i18n.Money(lang, inv.InvoiceAmount, inv.Currency)
	case inv.StoreCurrency.IsFiat() && inv.ExchangeRate.IsPositive() && inv.Amount > 0:
		data.Fiat = "≈ " + i18n.Money(lang, inv.FiatAmount(), inv.StoreCurrency)
	}
	if left := inv.ExpiresAt.Sub(now); data.Open && left > 0 {
		data.Remaining = int64(left / time.Second)
		data.Countdown = fmt.Sprintf("%d:%02d", data.Remaining/60, data.Remaining%60)
	}
	paid := inv.TotalPaid()
	data.Received = btcSats(lang, paid)
	if inv.Amount > paid {
		data.Due = btcSats(lang, inv.Amount-paid)
	}
	if inv.Status == kassa.InvoiceSettled && inv.AdditionalStatus == kassa.StatusOverpaid && paid > inv.Amount {
		data.Overpaid = btcSats(lang, paid-inv.Amount)
	}
	conf, txid := onchainProgress(inv)
	data.Confirmations, data.TxID, data.PartlyPaid = int64(conf), txid, paid > 0
	if inv.Status == kassa.InvoiceSettled {
		data.PaidAt = inv.SettledAt
		data.Method = i18n.Method(lang, kassa.MethodLightning)
		if inv.SettledBy == kassa.MethodOnchain {
			data.Method = i18n.Method(lang, kassa.MethodOnchain)
		} else {
			data.TxID = ""
		}
		// The receipt is in the currency the customer was billed in;
		// an invoice priced in bitcoin shows the store's currency.
		switch {
		case inv.Currency.IsFiat() && inv.RequestRate.IsPositive():
			data.PaidFiat = i18n.Money(lang, inv.PaidInCurrency(), inv.Currency)
		case inv.StoreCurrency.IsFiat() && inv.ExchangeRate.IsPositive():
			data.PaidFiat = i18n.Money(lang, inv.FiatTotalPaid(), inv.StoreCurrency)
		}
		data.RedirectNow = inv.RedirectAutomatically && data.RedirectURL != ""
		if data.RedirectNow {
			base.RefreshURL = data.RedirectURL
		}
	}
	if state == stateExpired && inv.PaymentLinkID != "" {
		data.PayAgain = "/payment-requests/" + inv.PaymentLinkID
	}
	if data.Open {
		if data.Tabs, err = s.payTabs(r, inv, lang, paid); err != nil {
			s.pageError(w, r, err)
			return
		}
		data.OnchainOff = inv.OnchainAddress == "" && inv.OnchainUnavailableReason != ""
		base.Refresh = 10
	} else if state == stateSeen {
		base.Refresh = 30
	}
	data.pageBase.Refresh, data.pageBase.RefreshURL = base.Refresh, base.RefreshURL
	page := "checkout"
	if r.URL.Query().Get("part") == "live" {
		// What the page's script redraws: the live part alone, with no
		// style element of its own (a parsed page's style would be
		// checked against the policy of the page parsing it).
		page = "checkout-live"
	}
	s.renderPage(w, r, http.StatusOK, page, base.Nonce, data)
}

// redirectPlaceholder matches the placeholders BTCPay fills in a
// redirect URL, in any case.
var redirectPlaceholder = regexp.MustCompile(`(?i)\{(orderid|invoiceid|status)\}`)

// redirectTarget is where the checkout sends the customer back to the
// shop: inv's redirect URL with {OrderId} (orderID), {InvoiceId} and
// {Status} replaced, query-escaped, as BTCPay does. It is "" unless the
// result is an absolute http or https URL with a host: no other scheme
// ever becomes the page's link or redirect, whatever was stored.
func redirectTarget(inv *kassa.Invoice, orderID string) string {
	if inv.RedirectURL == "" {
		return ""
	}
	target := redirectPlaceholder.ReplaceAllStringFunc(inv.RedirectURL, func(p string) string {
		switch strings.ToLower(p) {
		case "{orderid}":
			return url.QueryEscape(orderID)
		case "{invoiceid}":
			return url.QueryEscape(inv.ID)
		}
		return url.QueryEscape(inv.Status.String())
	})
	u, err := url.Parse(target)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	return target
}

// payTabs are the ways to pay inv: one QR code for both methods when it
// takes both, then Lightning alone and on-chain alone. Once part is paid,
// only on-chain is left, for what is still due (a Lightning invoice is
// paid once, in full).
func (s *server) payTabs(r *http.Request, inv *kassa.Invoice, lang string, paid kassa.Sats) ([]payTab, error) {
	due := inv.Amount - paid
	if inv.Amount == 0 {
		due = 0
	}
	bolt11, address := inv.LightningInvoice, inv.OnchainAddress
	if paid > 0 && address != "" {
		bolt11 = ""
	}
	var tabs []payTab
	amountField := func(prefix string) []copyField {
		if due <= 0 {
			return nil
		}
		return []copyField{{ID: prefix + "-amount", Label: i18n.T(lang, "pay.amount"), Value: bip21Amount(due), CopyLabel: i18n.T(lang, "pay.copyAmount")}}
	}
	invoiceField := func(prefix string) copyField {
		return copyField{ID: prefix + "-invoice", Label: i18n.T(lang, "pay.invoice"), Value: bolt11, CopyLabel: i18n.T(lang, "pay.copyInvoice"), Long: true}
	}
	addressField := func(prefix string) copyField {
		return copyField{ID: prefix + "-address", Label: i18n.T(lang, "pay.address"), Value: address, CopyLabel: i18n.T(lang, "pay.copyAddress")}
	}
	if bolt11 != "" && address != "" {
		uri := kassa.BIP21(address, due, bolt11, inv.TerminalName)
		codes, err := qr.InvoiceCodes("", uri)
		if err != nil {
			return nil, err
		}
		tabs = append(tabs, payTab{ID: "unified", Label: i18n.T(lang, "tab.unified"), Hint: i18n.T(lang, "pay.unifiedHint"), QRAlt: i18n.T(lang, "qr.unified"),
			QR: template.URL(codes.Bitcoin), URI: template.URL(uri), Fields: append([]copyField{addressField("u")}, amountField("u")...)})
	}
	if bolt11 != "" {
		codes, err := qr.InvoiceCodes(bolt11, "")
		if err != nil {
			return nil, err
		}
		tabs = append(tabs, payTab{ID: "lightning", Label: i18n.T(lang, "tab.lightning"), Hint: i18n.T(lang, "pay.lightningHint"), QRAlt: i18n.T(lang, "qr.lightning"),
			QR: template.URL(codes.Lightning), URI: template.URL("lightning:" + strings.ToUpper(bolt11)), Fields: []copyField{invoiceField("l")}})
	}
	if address != "" {
		uri := kassa.BIP21(address, due, "", inv.TerminalName)
		codes, err := qr.InvoiceCodes("", uri)
		if err != nil {
			return nil, err
		}
		hint := i18n.T(lang, "pay.onchainHint")
		if paid > 0 && inv.LightningInvoice != "" {
			hint = i18n.T(lang, "pay.remainingChain")
		}
		tabs = append(tabs, payTab{ID: "onchain", Label: i18n.T(lang, "tab.onchain"), Hint: hint, QRAlt: i18n.T(lang, "qr.onchain"),
			QR: template.URL(codes.Bitcoin), URI: template.URL(uri), Fields: append([]copyField{addressField("o")}, amountField("o")...)})
	}
	selected := 0
	want := r.URL.Query().Get("tab")
	for i := range tabs {
		if tabs[i].ID == want {
			selected = i
		}
		q := r.URL.Query()
		q.Set("tab", tabs[i].ID)
		tabs[i].Href = "?" + q.Encode()
	}
	if len(tabs) > 0 {
		tabs[selected].Selected = true
	}
	return tabs, nil
}

// checkoutStatusRecord is what the checkout page polls: the invoice's
// status, and the key that changes whenever the page would show
// something else (checkoutKey).
type checkoutStatusRecord struct {
	Status           string     `json:"status"`
	AdditionalStatus string     `json:"additionalStatus"`
	TotalPaid        kassa.Sats `json:"totalPaid"`
	State            string     `json:"state"`
	Key              string     `json:"key"`
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
		State:            checkoutState(inv),
		Key:              checkoutKey(inv),
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
