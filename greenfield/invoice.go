package greenfield

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// createBody is CreateInvoiceRequest of swagger.template.invoices.json
// (BTCPay 2.4.1), as btcpayserver-greenfield-php v2.9.0 sends it
// (src/Client/Invoice.php, createInvoice): amount a decimal string or
// null, currency, metadata or null, checkout or null.
type createBody struct {
	Amount                json.RawMessage `json:"amount"`
	Currency              *string         `json:"currency"`
	Metadata              json.RawMessage `json:"metadata"`
	Checkout              *checkoutBody   `json:"checkout"`
	Receipt               json.RawMessage `json:"receipt"`
	AdditionalSearchTerms []string        `json:"additionalSearchTerms"`
}

// checkoutBody is CheckoutOptions; src/Client/InvoiceCheckoutOptions.php
// sends every field, null when unset.
type checkoutBody struct {
	SpeedPolicy           *string          `json:"speedPolicy"`
	PaymentMethods        []string         `json:"paymentMethods"`
	DefaultPaymentMethod  *string          `json:"defaultPaymentMethod"`
	LazyPaymentMethods    *bool            `json:"lazyPaymentMethods"`
	ExpirationMinutes     json.RawMessage  `json:"expirationMinutes"`
	MonitoringMinutes     *decimal.Decimal `json:"monitoringMinutes"`
	PaymentTolerance      *decimal.Decimal `json:"paymentTolerance"`
	RedirectURL           *string          `json:"redirectURL"`
	RedirectAutomatically *bool            `json:"redirectAutomatically"`
	DefaultLanguage       *string          `json:"defaultLanguage"`
}

// readBody decodes a JSON request body into v; what does not decode is
// answered (422 naming the field of a wrong type) and false returned.
func (s *server) readBody(w http.ResponseWriter, r *http.Request, v any) bool {
	b, err := io.ReadAll(http.MaxBytesReader(w, r.Body, kassahttp.MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			writeAPIError(w, http.StatusRequestEntityTooLarge, "request-too-large", fmt.Sprintf("the body is over %d bytes", kassahttp.MaxBodyBytes))
			return false
		}
		writeAPIError(w, http.StatusBadRequest, "generic-error", "could not read the body")
		return false
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	if err := json.Unmarshal(b, v); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) {
			writeValidation(w, []validationError{{Path: typeErr.Field, Message: "must be a JSON " + typeErr.Type.String()}})
			return false
		}
		writeAPIError(w, http.StatusBadRequest, "generic-error", "the body is not a JSON object: "+err.Error())
		return false
	}
	return true
}

// parseMethod reads a payment-method id as BTCPay's PaymentMethodId.TryParse
// does for bitcoin (BTCPayServer/Payments/PaymentMethodId.cs, v2.4.1): "-"
// or "_" between the crypto code and the type, "BTC" alone on-chain, and
// the legacy type names. The WooCommerce plugin sends "BTC_CHAIN" and
// "BTC_LN" (src/Gateway/DefaultGateway.php, getPaymentMethods, v2.8.0).
func parseMethod(id string) (kassa.PaymentMethod, bool) {
	parts := strings.FieldsFunc(strings.TrimSpace(id), func(r rune) bool { return r == '-' || r == '_' })
	if len(parts) == 0 || !strings.EqualFold(parts[0], "BTC") {
		return 0, false
	}
	if len(parts) == 1 {
		return kassa.MethodOnchain, true
	}
	if len(parts) != 2 {
		return 0, false
	}
	switch strings.ToLower(parts[1]) {
	case "chain", "bitcoinlike", "onchain", "btclike":
		return kassa.MethodOnchain, true
	case "ln", "lightninglike", "lightningnetwork", "offchain":
		return kassa.MethodLightning, true
	}
	return 0, false
}

// speedPolicies are SpeedPolicy's values (swagger.template.json) and
// the confirmations each asks for.
var speedPolicies = map[string]int32{"HighSpeed": 0, "MediumSpeed": 1, "LowMediumSpeed": 2, "LowSpeed": 6}

// expiry reads expirationMinutes, a JSON number of minutes (fractions
// count, to the millisecond), or says what is wrong with it. A value
// beyond any bound is answered as too long, not converted.
func expiry(raw json.RawMessage) (time.Duration, string) {
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return 0, "must be a number of minutes"
	}
	minutes, err := decimal.NewFromString(n.String())
	if err != nil {
		return 0, "must be a number of minutes"
	}
	ms := minutes.Mul(decimal.NewFromInt(60_000))
	switch {
	case ms.LessThan(decimal.NewFromInt(kassa.MinInvoiceExpiry.Milliseconds())):
		return 0, "Expiration time must be at least 30 seconds"
	case ms.GreaterThan(decimal.NewFromInt(kassa.MaxInvoiceExpiry.Milliseconds())):
		return 0, fmt.Sprintf("Expiration time must be at most %d minutes", int64(kassa.MaxInvoiceExpiry/time.Minute))
	}
	return time.Duration(ms.IntPart()) * time.Millisecond, ""
}

// invoiceRequest translates a create body into the domain's request, or
// returns every field that cannot be translated.
func (b *createBody) invoiceRequest(store *kassa.Store) (*kassa.InvoiceRequest, []validationError) {
	var errs []validationError
	add := func(path, msg string) { errs = append(errs, validationError{Path: path, Message: msg}) }
	req := &kassa.InvoiceRequest{Currency: store.Currency}
	if raw := bytes.TrimSpace(b.Amount); len(raw) > 0 && string(raw) != "null" {
		amount, err := kassa.ParseAmount(raw)
		if err != nil {
			add("amount", kassa.ErrorMessage(err))
		} else {
			req.Amount, req.HasAmount = amount, true
		}
	}
	// An empty currency is the store's (CreateInvoiceRequest.currency).
	if b.Currency != nil && strings.TrimSpace(*b.Currency) != "" {
		req.Currency = kassa.Currency(strings.TrimSpace(*b.Currency))
	}
	if raw := bytes.TrimSpace(b.Metadata); len(raw) > 0 && string(raw) != "null" {
		req.Metadata = raw
		var fields map[string]json.RawMessage
		// Not an object: req.Validate names it.
		if json.Unmarshal(raw, &fields) == nil {
			if v, ok := fields["orderId"]; ok {
				if s, ok := jsonText(v); ok {
					req.OrderID = s
				} else {
					add("metadata.orderId", "must be a string")
				}
			}
			if v, ok := fields["buyerEmail"]; ok {
				if s, ok := jsonText(v); ok {
					req.BuyerEmail = s
				} else {
					add("metadata.buyerEmail", "must be a string")
				}
			}
		}
	}
	if c := b.Checkout; c != nil {
		for i, id := range c.PaymentMethods {
			m, ok := parseMethod(id)
			if !ok {
				add(fmt.Sprintf("checkout.paymentMethods[%d]", i), "Invalid PaymentMethodId")
				continue
			}
			if !containsMethod(req.EnabledMethods, m) {
				req.EnabledMethods = append(req.EnabledMethods, m)
			}
		}
		if c.SpeedPolicy != nil {
			if confirmations, ok := speedPolicies[*c.SpeedPolicy]; ok {
				req.ConfirmationsRequired = &confirmations
			} else {
				add("checkout.speedPolicy", "must be one of HighSpeed, MediumSpeed, LowMediumSpeed, LowSpeed")
			}
		}
		if raw := bytes.TrimSpace(c.ExpirationMinutes); len(raw) > 0 && string(raw) != "null" {
			if d, msg := expiry(raw); msg != "" {
				add("checkout.expirationMinutes", msg)
			} else {
				req.Expiry = d
			}
		}
		if c.PaymentTolerance != nil && (c.PaymentTolerance.IsNegative() || c.PaymentTolerance.GreaterThan(decimal.NewFromInt(100))) {
			add("checkout.paymentTolerance", "PaymentTolerance can only be between 0 and 100 percent")
		}
		if c.RedirectURL != nil {
			req.RedirectURL = *c.RedirectURL
		}
		req.RedirectAutomatically = c.RedirectAutomatically // nil: the store's default
		if c.DefaultLanguage != nil {
			req.Language = strings.TrimSpace(*c.DefaultLanguage)
		}
	}
	// The domain's own checks, so that every bad field is in one answer.
	if err := req.Validate(); err != nil {
		var e *kassa.Error
		if errors.As(err, &e) {
			for _, f := range e.Fields {
				path, ok := fieldPaths[f.Field]
				if !ok {
					path = f.Field
				}
				add(path, f.Message)
			}
		}
	}
	return req, errs
}

// jsonText reads a JSON string, or a number as its digits.
func jsonText(raw json.RawMessage) (string, bool) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, true
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String(), true
	}
	return "", false
}

func containsMethod(ms []kassa.PaymentMethod, m kassa.PaymentMethod) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

func containsString(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// createInvoice answers POST /api/v1/stores/{storeId}/invoices.
func (s *server) createInvoice(w http.ResponseWriter, r *http.Request) {
	var body createBody
	if !s.readBody(w, r, &body) {
		return
	}
	store := callerFrom(r.Context()).store
	req, errs := body.invoiceRequest(store)
	if len(errs) > 0 {
		writeValidation(w, errs)
		return
	}
	inv, err := s.Invoices.CreateInvoice(r.Context(), store.ID, req)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.invoiceData(inv))
}

// invoiceNotFound is BTCPay's answer for an invoice the store does not
// have (GreenfieldInvoiceController.InvoiceNotFound).
func invoiceNotFound(w http.ResponseWriter) {
	writeAPIError(w, http.StatusNotFound, "invoice-not-found", "The invoice was not found")
}

// storeInvoice reads the path's invoice if it is the caller's store's;
// otherwise it answers 404 and returns nil.
func (s *server) storeInvoice(w http.ResponseWriter, r *http.Request) *kassa.Invoice {
	id := chi.URLParam(r, "invoiceId")
	if !kassa.ValidID(id) {
		invoiceNotFound(w)
		return nil
	}
	inv, err := s.Reader.Invoice(r.Context(), id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && inv.StoreID != callerFrom(r.Context()).store.ID {
		invoiceNotFound(w)
		return nil
	}
	if err != nil {
		s.writeError(w, r, err)
		return nil
	}
	return inv
}

// getInvoice answers GET /api/v1/stores/{storeId}/invoices/{invoiceId}.
func (s *server) getInvoice(w http.ResponseWriter, r *http.Request) {
	if inv := s.storeInvoice(w, r); inv != nil {
		writeJSON(w, http.StatusOK, s.invoiceData(inv))
	}
}

// archiveInvoice answers DELETE …/invoices/{invoiceId}: the invoice is
// archived (kassa.Invoice.Archived), an archived one again too; 200 with
// no body, as BTCPay answers.
func (s *server) archiveInvoice(w http.ResponseWriter, r *http.Request) {
	inv := s.storeInvoice(w, r)
	if inv == nil {
		return
	}
	if _, err := s.Invoices.ArchiveInvoice(r.Context(), inv.StoreID, inv.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// markStatus answers POST …/invoices/{invoiceId}/status: Invalid through
// the domain's MarkInvoiceInvalid; any other status is 422.
func (s *server) markStatus(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Status *string `json:"status"`
	}
	if !s.readBody(w, r, &body) {
		return
	}
	inv := s.storeInvoice(w, r)
	if inv == nil {
		return
	}
	if body.Status == nil || *body.Status != "Invalid" {
		writeValidation(w, []validationError{{Path: "status", Message: "Kassa can only mark an invoice Invalid"}})
		return
	}
	out, err := s.Invoices.MarkInvoiceInvalid(r.Context(), inv.StoreID, inv.ID)
	if kassa.ErrorCode(err) == kassa.Conflict {
		writeValidation(w, []validationError{{Path: "status", Message: kassa.ErrorMessage(err)}})
		return
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.invoiceData(out))
}

// invoiceStatuses are InvoiceStatus's values (swagger.template.invoices.json).
var invoiceStatuses = map[string]kassa.InvoiceStatus{
	"New": kassa.InvoiceNew, "Processing": kassa.InvoiceProcessing, "Settled": kassa.InvoiceSettled,
	"Expired": kassa.InvoiceExpired, "Invalid": kassa.InvoiceInvalid,
}

// errListDone stops a list walk once its page is full.
var errListDone = errors.New("page full")

// listInvoices answers GET /api/v1/stores/{storeId}/invoices with the
// filters btcpayserver-greenfield-php sends (getAllInvoicesWithFilter):
// orderId and status (repeatable), startDate and endDate (Unix seconds,
// inclusive), skip and take; newest first, as BTCPay lists them.
// textSearch is not supported. Archived invoices are left out unless
// includeArchived=true.
func (s *server) listInvoices(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []validationError
	orderIDs := q["orderId"]
	var statuses []kassa.InvoiceStatus
	for _, st := range q["status"] {
		v, ok := invoiceStatuses[st]
		if !ok {
			errs = append(errs, validationError{Path: "status", Message: "unknown invoice status " + strconv.Quote(st)})
		}
		statuses = append(statuses, v)
	}
	date := func(name string) time.Time {
		v := q.Get(name)
		if v == "" {
			return time.Time{}
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			errs = append(errs, validationError{Path: name, Message: "must be a Unix time in seconds"})
			return time.Time{}
		}
		return time.Unix(n, 0).UTC()
	}
	start, end := date("startDate"), date("endDate")
	if !start.IsZero() && !end.IsZero() && start.After(end) {
		errs = append(errs, validationError{Path: "startDate", Message: "startDate should not be above endDate"})
	}
	count := func(name string) int {
		v := q.Get(name)
		if v == "" {
			return -1
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			errs = append(errs, validationError{Path: name, Message: "must be a whole number, 0 or more"})
			return -1
		}
		return n
	}
	skip, take := count("skip"), count("take")
	includeArchived := false
	if v := q.Get("includeArchived"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			errs = append(errs, validationError{Path: "includeArchived", Message: "must be true or false"})
		}
		includeArchived = b
	}
	if q.Get("textSearch") != "" {
		errs = append(errs, validationError{Path: "textSearch", Message: "Kassa's Greenfield API does not support textSearch"})
	}
	if len(errs) > 0 {
		writeValidation(w, errs)
		return
	}
	out := []invoiceData{}
	store := callerFrom(r.Context()).store.ID
	walk := func(fn func(*kassa.Invoice) error) (string, error) {
		return s.Reader.Invoices(r.Context(), store, kassa.ListQuery{}, fn)
	}
	if len(orderIDs) == 1 && orderIDs[0] != "" && len(orderIDs[0]) <= kassa.MaxSearchText {
		// One order id: its invoices by the search index (any case; the
		// filter below keeps the exact ones).
		walk = func(fn func(*kassa.Invoice) error) (string, error) {
			return s.Reader.SearchInvoices(r.Context(), store, kassa.SearchQuery{Text: orderIDs[0], In: kassa.SearchOrderID, Exact: true}, fn)
		}
	}
	_, err := walk(func(inv *kassa.Invoice) error {
		if !start.IsZero() && inv.CreatedAt.Before(start) {
			return errListDone // newest first: the rest are older
		}
		if !end.IsZero() && inv.CreatedAt.After(end.Add(time.Second-1)) {
			return nil
		}
		if len(orderIDs) > 0 && !containsString(orderIDs, inv.OrderID) {
			return nil
		}
		if len(statuses) > 0 && !containsStatus(statuses, inv.Status) || inv.Archived && !includeArchived {
			return nil
		}
		if skip > 0 {
			skip--
			return nil
		}
		if take >= 0 && len(out) >= take {
			return errListDone
		}
		out = append(out, s.invoiceData(inv))
		return nil
	})
	if err != nil && !errors.Is(err, errListDone) {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func containsStatus(ss []kassa.InvoiceStatus, s kassa.InvoiceStatus) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// invoiceData is InvoiceData of swagger.template.invoices.json.
type invoiceData struct {
	ID                                string          `json:"id"`
	StoreID                           string          `json:"storeId"`
	Amount                            string          `json:"amount"`
	PaidAmount                        string          `json:"paidAmount"`
	Currency                          string          `json:"currency"`
	Type                              string          `json:"type"`
	CheckoutLink                      string          `json:"checkoutLink"`
	CreatedTime                       int64           `json:"createdTime"`
	ExpirationTime                    int64           `json:"expirationTime"`
	MonitoringExpiration              int64           `json:"monitoringExpiration"`
	Status                            string          `json:"status"`
	AdditionalStatus                  string          `json:"additionalStatus"`
	AvailableStatusesForManualMarking []string        `json:"availableStatusesForManualMarking"`
	Archived                          bool            `json:"archived"`
	Metadata                          json.RawMessage `json:"metadata"`
	Checkout                          checkoutData    `json:"checkout"`
}

// checkoutData is the invoice's CheckoutOptions as it is, not as asked.
type checkoutData struct {
	SpeedPolicy           *string     `json:"speedPolicy"`
	PaymentMethods        []string    `json:"paymentMethods"`
	ExpirationMinutes     json.Number `json:"expirationMinutes"` // fractions count, as BTCPay's TimeSpan
	MonitoringMinutes     int64       `json:"monitoringMinutes"`
	PaymentTolerance      json.Number `json:"paymentTolerance"` // a JSON number, as BTCPay's double
	RedirectURL           *string     `json:"redirectURL"`
	RedirectAutomatically bool        `json:"redirectAutomatically"`
	DefaultLanguage       *string     `json:"defaultLanguage"`
}

// additionalStatuses names Kassa's additional statuses as
// InvoiceAdditionalStatus does.
var additionalStatuses = map[kassa.AdditionalStatus]string{
	kassa.StatusNone: "None", kassa.StatusUnderpaid: "PaidPartial",
	kassa.StatusOverpaid: "PaidOver", kassa.StatusPaidAfterExpiration: "PaidLate",
}

// requestRate is the price of one bitcoin in the invoice's currency.
func requestRate(inv *kassa.Invoice) decimal.Decimal {
	switch inv.Currency {
	case kassa.BTC:
		return decimal.NewFromInt(1)
	case kassa.SATS:
		return decimal.NewFromInt(kassa.SatsPerBTC)
	}
	return inv.RequestRate
}

// btc writes satoshis as a BTC amount with 8 decimals.
func btc(s kassa.Sats) string { return decimal.NewFromInt(int64(s)).Shift(-8).StringFixed(8) }

func (s *server) invoiceData(inv *kassa.Invoice) invoiceData {
	typ := "Standard"
	amount := inv.InvoiceAmount
	if inv.Amount == 0 {
		typ = "TopUp"
	}
	if d := inv.Currency.Decimals(); amount.Exponent() > -d {
		amount = amount.Round(d) // shows the minor unit: "12.50"
	}
	metadata := inv.Metadata
	if len(metadata) == 0 {
		metadata = json.RawMessage("{}")
	}
	marking := []string{}
	if inv.CanMarkInvalid() {
		marking = append(marking, "Invalid")
	}
	methods := make([]string, 0, len(inv.EnabledMethods))
	for _, m := range inv.EnabledMethods {
		methods = append(methods, methodID(m))
	}
	return invoiceData{
		ID: inv.ID, StoreID: inv.StoreID,
		Amount:       amount.StringFixed(max(-amount.Exponent(), 0)),
		PaidAmount:   kassa.FiatValue(inv.TotalPaid(), inv.Currency, requestRate(inv)).StringFixed(inv.Currency.Decimals()),
		Currency:     string(inv.Currency),
		Type:         typ,
		CheckoutLink: s.checkoutLink(inv.ID),
		CreatedTime:  inv.CreatedAt.Unix(), ExpirationTime: inv.ExpiresAt.Unix(), MonitoringExpiration: inv.MonitorUntil.Unix(),
		Status:                            inv.Status.String(),
		AdditionalStatus:                  additionalStatuses[inv.AdditionalStatus],
		AvailableStatusesForManualMarking: marking,
		Archived:                          inv.Archived,
		Metadata:                          metadata,
		Checkout: checkoutData{
			SpeedPolicy:           optional(speedPolicy(inv.ConfirmationsRequired)),
			PaymentMethods:        methods,
			ExpirationMinutes:     json.Number(decimal.NewFromInt(inv.ExpiresAt.Sub(inv.CreatedAt).Milliseconds()).Div(decimal.NewFromInt(60_000)).String()),
			MonitoringMinutes:     int64(inv.MonitorUntil.Sub(inv.ExpiresAt) / time.Minute),
			PaymentTolerance:      json.Number(inv.Tolerance.String()),
			RedirectURL:           optional(inv.RedirectURL),
			RedirectAutomatically: inv.RedirectAutomatically,
			DefaultLanguage:       optional(inv.Language),
		},
	}
}

// invoicePaymentMethods answers GET …/invoices/{invoiceId}/payment-methods
// (InvoicePaymentMethodDataModel): one entry per method the invoice takes,
// amounts in BTC; the payments not dropped (BTCPay's default
// onlyAccountedPayments=true). Kassa adds no payment-method fee.
func (s *server) invoicePaymentMethods(w http.ResponseWriter, r *http.Request) {
	inv := s.storeInvoice(w, r)
	if inv == nil {
		return
	}
	type payment struct {
		ID           string `json:"id"`
		ReceivedDate int64  `json:"receivedDate"`
		Value        string `json:"value"`
		Fee          string `json:"fee"`
		Status       string `json:"status"`
		Destination  string `json:"destination"`
	}
	type method struct {
		PaymentMethodID   string    `json:"paymentMethodId"`
		Currency          string    `json:"currency"`
		Destination       string    `json:"destination"`
		PaymentLink       string    `json:"paymentLink"`
		Rate              string    `json:"rate"`
		PaymentMethodPaid string    `json:"paymentMethodPaid"`
		TotalPaid         string    `json:"totalPaid"`
		Due               string    `json:"due"`
		Amount            string    `json:"amount"`
		PaymentMethodFee  string    `json:"paymentMethodFee"`
		Payments          []payment `json:"payments"`
		Activated         bool      `json:"activated"`
		AdditionalData    struct{}  `json:"additionalData"`
	}
	total := inv.TotalPaid()
	out := make([]method, 0, len(inv.EnabledMethods))
	for _, m := range inv.EnabledMethods {
		pm := method{
			PaymentMethodID: methodID(m), Currency: "BTC",
			Rate: requestRate(inv).String(), TotalPaid: btc(total), Due: btc(inv.Amount - total),
			Amount: btc(inv.Amount), PaymentMethodFee: btc(0), Payments: []payment{}, Activated: true,
		}
		switch m {
		case kassa.MethodOnchain:
			pm.Destination = inv.OnchainAddress
			if inv.OnchainAddress != "" {
				pm.PaymentLink = kassa.BIP21(inv.OnchainAddress, inv.Amount-total, "", "")
			}
		case kassa.MethodLightning:
			pm.Destination = inv.LightningInvoice
			if inv.LightningInvoice != "" {
				pm.PaymentLink = "lightning:" + inv.LightningInvoice
			}
		}
		var paid kassa.Sats
		for i := range inv.Payments {
			p := &inv.Payments[i]
			if p.Method != m || p.Dropped {
				continue
			}
			paid += p.Amount
			id, status := p.ID, "Processing"
			if p.Method == kassa.MethodOnchain {
				id = p.TxID + "-" + strconv.FormatUint(uint64(p.Vout), 10) // BTCPay's "txid-vout"
			}
			if inv.Final(p) {
				status = "Settled"
			}
			pm.Payments = append(pm.Payments, payment{
				ID: id, ReceivedDate: p.ReceivedAt.Unix(), Value: btc(p.Amount), Fee: btc(0),
				Status: status, Destination: p.Destination,
			})
		}
		pm.PaymentMethodPaid = btc(paid)
		out = append(out, pm)
	}
	writeJSON(w, http.StatusOK, out)
}
