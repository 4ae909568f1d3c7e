package http

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/qr"
)

// invoiceRecord is an invoice as the API shows it, in the field order of
// docs/api.md's invoice record, plus checkoutLink and bip21. The pointer fields
// are left out of list items and present (possibly empty) on the
// single-invoice response.
type invoiceRecord struct {
	ID                    string          `json:"id"`
	StoreID               string          `json:"storeId"`
	TerminalName          *string         `json:"terminalName,omitempty"`
	Status                string          `json:"status"`
	AdditionalStatus      string          `json:"additionalStatus"`
	Amount                kassa.Sats      `json:"amount"`
	TotalPaid             kassa.Sats      `json:"totalPaid"`
	InvoiceAmount         json.Number     `json:"invoiceAmount"`
	OrderID               string          `json:"orderId"`
	BuyerEmail            string          `json:"buyerEmail"`
	Currency              kassa.Currency  `json:"currency"`
	ExchangeRate          json.Number     `json:"exchangeRate"`
	FiatAmount            json.Number     `json:"fiatAmount"`
	FiatTotalPaid         json.Number     `json:"fiatTotalPaid"`
	EnabledPaymentMethods any             `json:"enabledPaymentMethods"` // array, or a comma-separated string in lists
	PaymentMethod         string          `json:"paymentMethod"`
	WalletMessage         string          `json:"walletMessage"`
	Metadata              json.RawMessage `json:"metadata"`
	LightningInvoice      *string         `json:"lightningInvoice,omitempty"`
	OnchainAddress        *string         `json:"onchainAddress,omitempty"`
	// OnchainUnavailableReason says why on-chain is not offered (an
	// amount below the store's on-chain minimum); Kassa's own field.
	OnchainUnavailableReason string `json:"onchainUnavailableReason,omitempty"`
	// DerivationIndex is i in m/0/i below the store's xpub.
	DerivationIndex       *uint32  `json:"derivationIndex,omitempty"`
	QRCodes               *qrCodes `json:"qrCodes,omitempty"`
	RedirectURL           string   `json:"redirectUrl"`
	RedirectAutomatically bool     `json:"redirectAutomatically"`
	CreatedAt             int64    `json:"createdAt"`
	UpdatedAt             int64    `json:"updatedAt"`
	CheckoutLink          string   `json:"checkoutLink"`
	BIP21                 string   `json:"bip21"`
}

// qrCodes are the two QR images of an invoice, as PNG data URIs.
type qrCodes struct {
	LightningQR string `json:"lightningQR"`
	BitcoinQR   string `json:"bitcoinQR"`
}

// invoiceQRCodes draws the QR codes of an invoice's BOLT11 and BIP21 URI
// (an empty input gives an empty data URI).
func invoiceQRCodes(bolt11, bip21 string) (qrCodes, error) {
	codes, err := qr.InvoiceCodes(bolt11, bip21)
	return qrCodes{LightningQR: codes.Lightning, BitcoinQR: codes.Bitcoin}, err
}

// createdInvoice is the create-invoice response: the fields docs/api.md
// lists under "Create an invoice", createdAt as a string of digits, plus checkoutLink
// and bip21.
type createdInvoice struct {
	ID                    string          `json:"id"`
	StoreID               string          `json:"storeId"`
	Status                string          `json:"status"`
	AdditionalStatus      string          `json:"additionalStatus"`
	Amount                kassa.Sats      `json:"amount"`
	OrderID               string          `json:"orderId"`
	BuyerEmail            string          `json:"buyerEmail"`
	Currency              kassa.Currency  `json:"currency"`
	EnabledPaymentMethods []string        `json:"enabledPaymentMethods"`
	Metadata              json.RawMessage `json:"metadata"`
	LightningInvoice      string          `json:"lightningInvoice"`
	OnchainAddress        string          `json:"onchainAddress"`
	// OnchainUnavailableReason: see invoiceRecord.
	OnchainUnavailableReason string  `json:"onchainUnavailableReason,omitempty"`
	QRCodes                  qrCodes `json:"qrCodes"`
	RedirectAutomatically    bool    `json:"redirectAutomatically"`
	WalletMessage            string  `json:"walletMessage"`
	CreatedAt                string  `json:"createdAt"`
	CheckoutLink             string  `json:"checkoutLink"`
	BIP21                    string  `json:"bip21"`
}

// paymentRecord is one payment received for an invoice, as docs/api.md's
// invoice payment record.
type paymentRecord struct {
	TransactionID string     `json:"transactionId"`
	Amount        kassa.Sats `json:"amount"`
	NetworkFee    kassa.Sats `json:"networkFee"`
	ReceivedDate  string     `json:"receivedDate"`
	Destination   string     `json:"destination"`
	ReplacedByFee bool       `json:"replacedByFee"`
	Status        string     `json:"status"`
	Priority      string     `json:"priority"`
	FeeRate       kassa.Sats `json:"feeRate"`
	CreatedAt     string     `json:"createdAt"`
	// Confirmations and BlockHeight are the on-chain output's depth and
	// block (0 in the mempool).
	Confirmations int32 `json:"confirmations"`
	BlockHeight   int64 `json:"blockHeight,omitempty"`
}

// methodNames returns the API names of methods (BTC, Lightning).
func methodNames(methods []kassa.PaymentMethod) []string {
	names := make([]string, len(methods))
	for i, m := range methods {
		names[i] = m.String()
	}
	return names
}

// paymentMethodPair is how docs/api.md's paymentMethod names the method that
// settled an invoice: "BTC/BTC" on-chain, "BTC/Lightning" on Lightning,
// empty before settlement.
func paymentMethodPair(m kassa.PaymentMethod) string {
	switch m {
	case kassa.MethodOnchain:
		return "BTC/BTC"
	case kassa.MethodLightning:
		return "BTC/Lightning"
	}
	return ""
}

// metadataOrEmpty returns the invoice's metadata, or {} when there is none.
func metadataOrEmpty(m json.RawMessage) json.RawMessage {
	if absent(m) {
		return json.RawMessage("{}")
	}
	return m
}

// checkoutLink is the customer checkout page of an invoice.
func (s *server) checkoutLink(invoiceID string) string {
	return s.publicURL + "/checkout/" + invoiceID
}

// invoiceBIP21 is the unified payment URI of an invoice: its address,
// amount and Lightning invoice.
func invoiceBIP21(inv *kassa.Invoice) string {
	if inv.OnchainAddress == "" && inv.LightningInvoice == "" {
		return ""
	}
	return kassa.BIP21(inv.OnchainAddress, inv.Amount, inv.LightningInvoice, inv.TerminalName)
}

// invoiceRecord renders inv. single selects the single-invoice response
// (terminalName, Lightning invoice, address and QR codes; methods as an
// array) over a list item (methods as a comma-separated string).
func (s *server) invoiceRecord(inv *kassa.Invoice, single bool) (invoiceRecord, error) {
	methods := methodNames(inv.EnabledMethods)
	rec := invoiceRecord{
		ID:                    inv.ID,
		StoreID:               inv.StoreID,
		Status:                inv.Status.String(),
		AdditionalStatus:      inv.AdditionalStatus.String(),
		Amount:                inv.Amount,
		TotalPaid:             inv.TotalPaid(),
		InvoiceAmount:         number(inv.InvoiceAmount),
		OrderID:               inv.OrderID,
		BuyerEmail:            inv.BuyerEmail,
		Currency:              inv.Currency,
		ExchangeRate:          number(inv.ExchangeRate),
		FiatAmount:            number(inv.FiatAmount()),
		FiatTotalPaid:         number(inv.FiatTotalPaid()),
		EnabledPaymentMethods: strings.Join(methods, ","),
		PaymentMethod:         paymentMethodPair(inv.SettledBy),
		WalletMessage:         inv.WalletMessage,
		Metadata:              metadataOrEmpty(inv.Metadata),
		RedirectURL:           inv.RedirectURL,
		RedirectAutomatically: inv.RedirectAutomatically,
		CreatedAt:             unixSeconds(inv.CreatedAt),
		UpdatedAt:             unixSeconds(inv.UpdatedAt),
		CheckoutLink:          s.checkoutLink(inv.ID),
		BIP21:                 invoiceBIP21(inv),
	}
	if single {
		codes, err := invoiceQRCodes(inv.LightningInvoice, rec.BIP21)
		if err != nil {
			return invoiceRecord{}, err
		}
		rec.TerminalName = &inv.TerminalName
		rec.EnabledPaymentMethods = methods
		rec.LightningInvoice = &inv.LightningInvoice
		rec.OnchainAddress = &inv.OnchainAddress
		rec.OnchainUnavailableReason = inv.OnchainUnavailableReason
		rec.DerivationIndex = inv.DerivationIndex
		rec.QRCodes = &codes
	}
	return rec, nil
}

// createdInvoiceRecord renders the create-invoice response.
func (s *server) createdInvoiceRecord(inv *kassa.Invoice) (createdInvoice, error) {
	uri := invoiceBIP21(inv)
	codes, err := invoiceQRCodes(inv.LightningInvoice, uri)
	if err != nil {
		return createdInvoice{}, err
	}
	return createdInvoice{
		ID:                       inv.ID,
		StoreID:                  inv.StoreID,
		Status:                   inv.Status.String(),
		AdditionalStatus:         inv.AdditionalStatus.String(),
		Amount:                   inv.Amount,
		OrderID:                  inv.OrderID,
		BuyerEmail:               inv.BuyerEmail,
		Currency:                 inv.Currency,
		EnabledPaymentMethods:    methodNames(inv.EnabledMethods),
		Metadata:                 metadataOrEmpty(inv.Metadata),
		LightningInvoice:         inv.LightningInvoice,
		OnchainAddress:           inv.OnchainAddress,
		OnchainUnavailableReason: inv.OnchainUnavailableReason,
		QRCodes:                  codes,
		RedirectAutomatically:    inv.RedirectAutomatically,
		WalletMessage:            inv.WalletMessage,
		CreatedAt:                strconv.FormatInt(unixSeconds(inv.CreatedAt), 10),
		CheckoutLink:             s.checkoutLink(inv.ID),
		BIP21:                    uri,
	}, nil
}

// paymentStatus is the status of one payment: Settled when final
// (Lightning, or enough confirmations), Processing while unconfirmed,
// Invalid when it was dropped from the chain.
func paymentStatus(inv *kassa.Invoice, p *kassa.Payment) string {
	switch {
	case p.Dropped:
		return "Invalid"
	case inv.Final(p):
		return "Settled"
	}
	return "Processing"
}

// paymentRecords renders the payments of inv.
func paymentRecords(inv *kassa.Invoice) []paymentRecord {
	records := make([]paymentRecord, 0, len(inv.Payments))
	for i := range inv.Payments {
		p := &inv.Payments[i]
		id := p.TxID
		if id == "" {
			id = p.ID
		}
		records = append(records, paymentRecord{
			TransactionID: id,
			Amount:        p.Amount,
			NetworkFee:    p.NetworkFee,
			ReceivedDate:  rfc3339(p.ReceivedAt),
			Destination:   p.Destination,
			ReplacedByFee: p.ReplaceByFee,
			Status:        paymentStatus(inv, p),
			Priority:      "Medium",
			FeeRate:       p.FeeRate,
			CreatedAt:     rfc3339(p.ReceivedAt),
			Confirmations: p.Confirmations,
			BlockHeight:   p.BlockHeight,
		})
	}
	return records
}

// createInvoiceBody is the create-invoice request. Null fields are
// absent; amount is a number or a decimal string; orderId a string or a
// number; enabledPaymentMethods an array or a comma-separated string.
type createInvoiceBody struct {
	Amount                json.RawMessage `json:"amount"`
	Currency              string          `json:"currency"`
	EnabledPaymentMethods stringList      `json:"enabledPaymentMethods"`
	BuyerEmail            string          `json:"buyerEmail"`
	RedirectURL           string          `json:"redirectUrl"`
	RedirectAutomatically *bool           `json:"redirectAutomatically"` // nil: the store's default
	OrderID               flexString      `json:"orderId"`
	WalletMessage         string          `json:"walletMessage"`
	Metadata              json.RawMessage `json:"metadata"`
	ReferralCode          string          `json:"referralCode"`
}

// invoiceRequest turns the body into a validated kassa.InvoiceRequest,
// reporting every bad field at once.
func (b *createInvoiceBody) invoiceRequest() (*kassa.InvoiceRequest, error) {
	var fields []kassa.FieldError
	req := &kassa.InvoiceRequest{
		Currency:              kassa.Currency(b.Currency),
		BuyerEmail:            b.BuyerEmail,
		RedirectURL:           b.RedirectURL,
		RedirectAutomatically: b.RedirectAutomatically,
		OrderID:               string(b.OrderID),
		WalletMessage:         b.WalletMessage,
		ReferralCode:          b.ReferralCode,
	}
	if !absent(b.Amount) {
		amount, err := kassa.ParseAmount(b.Amount)
		if err != nil {
			fields = append(fields, kassa.FieldError{Field: "amount", Message: amountMessage})
		} else {
			req.Amount, req.HasAmount = amount, true
		}
	}
	if !absent(b.Metadata) {
		req.Metadata = b.Metadata
	}
	for _, name := range b.EnabledPaymentMethods {
		m, err := kassa.ParsePaymentMethod(name)
		if err != nil {
			fields = append(fields, kassa.FieldError{Field: "enabledPaymentMethods", Message: kassa.ErrorMessage(err)})
			continue
		}
		if !slices.Contains(req.EnabledMethods, m) {
			req.EnabledMethods = append(req.EnabledMethods, m)
		}
	}
	fields = mergeFields(fields, req.Validate())
	if len(fields) > 0 {
		return nil, kassa.InvalidFields(fields)
	}
	return req, nil
}

// amountMessage is the field message of an amount that is no decimal.
const amountMessage = `must be a decimal number, as a JSON number or a string such as "12.50"`

// mergeFields adds the field errors of a domain validation to those
// found while parsing, except for fields that parsing already reported.
func mergeFields(parsed []kassa.FieldError, validation error) []kassa.FieldError {
	if validation == nil {
		return parsed
	}
	var e *kassa.Error
	if !errors.As(validation, &e) || len(e.Fields) == 0 {
		return append(parsed, kassa.FieldError{Field: "", Message: kassa.ErrorMessage(validation)})
	}
	for _, f := range e.Fields {
		if !slices.ContainsFunc(parsed, func(p kassa.FieldError) bool { return p.Field == f.Field }) {
			parsed = append(parsed, f)
		}
	}
	return parsed
}

func (s *server) createInvoice(w http.ResponseWriter, r *http.Request) {
	var body createInvoiceBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	req, err := body.invoiceRequest()
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	inv, err := s.Invoices.CreateInvoice(r.Context(), callerFrom(r.Context()).store.ID, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := s.createdInvoiceRecord(inv)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

var errInvoiceNotFound = kassa.Errorf(kassa.NotFound, "invoice not found")

// storeInvoice returns the invoice named by the path when it belongs to
// the caller's store; otherwise NotFound.
func (s *server) storeInvoice(r *http.Request) (*kassa.Invoice, error) {
	id, err := pathID(r, "invoiceId", "invoice")
	if err != nil {
		return nil, err
	}
	return s.invoiceOfStore(r.Context(), callerFrom(r.Context()).store.ID, id)
}

// invoiceOfStore reads invoice id and checks that it is storeID's.
func (s *server) invoiceOfStore(ctx context.Context, storeID, id string) (*kassa.Invoice, error) {
	inv, err := s.Reader.Invoice(ctx, id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && inv.StoreID != storeID {
		return nil, errInvoiceNotFound
	}
	if err != nil {
		return nil, err
	}
	return inv, nil
}

func (s *server) getInvoice(w http.ResponseWriter, r *http.Request) {
	inv, err := s.storeInvoice(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	rec, err := s.invoiceRecord(inv, true)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, rec)
}

func (s *server) listInvoicePayments(w http.ResponseWriter, r *http.Request) {
	inv, err := s.storeInvoice(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, paymentRecords(inv))
}

func (s *server) listInvoices(w http.ResponseWriter, r *http.Request) {
	q, err := listQuery(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	orderID := r.URL.Query().Get("orderId")
	if len(orderID) > kassa.MaxShortText {
		s.writeError(w, r, kassa.InvalidFields([]kassa.FieldError{{Field: "orderId", Message: "must be at most 255 characters"}}))
		return
	}
	list := newListWriter(w, q.Limit > 0)
	add := func(inv *kassa.Invoice) error {
		rec, err := s.invoiceRecord(inv, false)
		if err != nil {
			return err
		}
		return list.add(rec)
	}
	store := callerFrom(r.Context()).store.ID
	var next string
	if orderID != "" {
		// The order id whole, in any case (kassa.FoldSearch), by its index.
		next, err = s.Reader.SearchInvoices(r.Context(), store,
			kassa.SearchQuery{ListQuery: q, Text: orderID, In: kassa.SearchOrderID, Exact: true}, add)
	} else {
		next, err = s.Reader.Invoices(r.Context(), store, q, add)
	}
	s.finishList(list, r, next, err)
}
