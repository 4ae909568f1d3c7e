package http

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/kassapay/kassa"
)

// paymentRequestRecord is a pay link as docs/api.md's pay-link record
// shows it, plus the fields accepted on creation (redirectUrl,
// customerEmail, discount, internalNote: the caller is the merchant) and
// url, the customer page.
type paymentRequestRecord struct {
	ID            string         `json:"id"`
	Amount        json.Number    `json:"amount"`
	Title         string         `json:"title"`
	OrderID       string         `json:"orderId"`
	Currency      kassa.Currency `json:"currency"`
	Description   string         `json:"description"`
	ExpiryDate    string         `json:"expiryDate"`
	StoreID       string         `json:"storeId"`
	Status        string         `json:"status"`
	Type          string         `json:"type"`
	CreatedAt     string         `json:"createdAt"`
	UpdatedAt     string         `json:"updatedAt"`
	RedirectURL   string         `json:"redirectUrl"`
	CustomerEmail string         `json:"customerEmail"`
	Discount      json.Number    `json:"discount"`
	InternalNote  string         `json:"internalNote"`
	URL           string         `json:"url"`
}

// payLinkURL is the customer page of a pay link.
func (s *server) payLinkURL(id string) string {
	return s.publicURL + "/payment-requests/" + id
}

func (s *server) paymentRequestRecord(p *kassa.PaymentRequest) paymentRequestRecord {
	return paymentRequestRecord{
		ID:            p.ID,
		Amount:        number(p.Amount),
		Title:         p.Title,
		OrderID:       p.OrderID,
		Currency:      p.Currency,
		Description:   p.Description,
		ExpiryDate:    rfc3339(p.ExpiryDate),
		StoreID:       p.StoreID,
		Status:        p.Status(s.now()),
		Type:          kassa.PaymentRequestType,
		CreatedAt:     rfc3339(p.CreatedAt),
		UpdatedAt:     rfc3339(p.UpdatedAt),
		RedirectURL:   p.RedirectURL,
		CustomerEmail: p.CustomerEmail,
		Discount:      number(p.Discount),
		InternalNote:  p.InternalNote,
		URL:           s.payLinkURL(p.ID),
	}
}

// paymentRequestBody is the create and update request of a pay link.
// amount and discount are numbers or decimal strings; expiryDate is an
// ISO 8601 date or date-time, or Unix seconds.
type paymentRequestBody struct {
	Amount        json.RawMessage `json:"amount"`
	Title         string          `json:"title"`
	Currency      string          `json:"currency"`
	OrderID       flexString      `json:"orderId"`
	Description   string          `json:"description"`
	RedirectURL   string          `json:"redirectUrl"`
	CustomerEmail string          `json:"customerEmail"`
	Discount      json.RawMessage `json:"discount"`
	InternalNote  string          `json:"internalNote"`
	ExpiryDate    flexString      `json:"expiryDate"`
}

// input turns the body into a validated kassa.PaymentRequestInput,
// reporting every bad field at once.
func (s *server) paymentRequestInput(b *paymentRequestBody) (*kassa.PaymentRequestInput, error) {
	var fields []kassa.FieldError
	in := &kassa.PaymentRequestInput{
		Title:         b.Title,
		Currency:      kassa.Currency(b.Currency),
		OrderID:       string(b.OrderID),
		Description:   b.Description,
		RedirectURL:   b.RedirectURL,
		CustomerEmail: b.CustomerEmail,
		InternalNote:  b.InternalNote,
	}
	if !absent(b.Amount) {
		if amount, err := kassa.ParseAmount(b.Amount); err != nil {
			fields = append(fields, kassa.FieldError{Field: "amount", Message: amountMessage})
		} else {
			in.Amount, in.HasAmount = amount, true
		}
	}
	if discount, ok, err := parseDecimalField(b.Discount); err != nil {
		fields = append(fields, kassa.FieldError{Field: "discount", Message: "must be a number of percent, such as 5"})
	} else if ok {
		in.Discount = discount
	}
	if b.ExpiryDate != "" {
		if t, err := kassa.ParseDate(string(b.ExpiryDate)); err != nil {
			fields = append(fields, kassa.FieldError{Field: "expiryDate", Message: kassa.ErrorMessage(err)})
		} else {
			in.ExpiryDate = t
		}
	}
	fields = mergeFields(fields, in.ValidateAt(s.now()))
	if len(fields) > 0 {
		return nil, kassa.InvalidFields(fields)
	}
	return in, nil
}

// createdPaymentRequest is the create response of a pay link (docs/api.md, Pay links).
type createdPaymentRequest struct {
	ID  string `json:"id"`
	URL string `json:"url"`
}

func (s *server) createPaymentRequest(w http.ResponseWriter, r *http.Request) {
	var body paymentRequestBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Currency == "" {
		// The store's currency, so that the amount's decimals are checked
		// with every other field.
		body.Currency = string(callerFrom(r.Context()).store.Currency)
	}
	in, err := s.paymentRequestInput(&body)
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	p, err := s.PaymentRequests.CreatePaymentRequest(r.Context(), callerFrom(r.Context()).store.ID, in)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, createdPaymentRequest{ID: p.ID, URL: s.payLinkURL(p.ID)})
}

var errPaymentRequestNotFound = kassa.Errorf(kassa.NotFound, "payment request not found")

// storePaymentRequest returns the pay link named by the path when it
// belongs to the caller's store; otherwise NotFound.
func (s *server) storePaymentRequest(r *http.Request) (*kassa.PaymentRequest, error) {
	id, err := pathID(r, "id", "payment request")
	if err != nil {
		return nil, err
	}
	return s.paymentRequestOfStore(r.Context(), callerFrom(r.Context()).store.ID, id)
}

// paymentRequestOfStore reads pay link id and, unless storeID is empty,
// checks that it is storeID's.
func (s *server) paymentRequestOfStore(ctx context.Context, storeID, id string) (*kassa.PaymentRequest, error) {
	p, err := s.Reader.PaymentRequest(ctx, id)
	if kassa.ErrorCode(err) == kassa.NotFound || err == nil && storeID != "" && p.StoreID != storeID {
		return nil, errPaymentRequestNotFound
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

func (s *server) getPaymentRequest(w http.ResponseWriter, r *http.Request) {
	p, err := s.storePaymentRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, s.paymentRequestRecord(p))
}

func (s *server) updatePaymentRequest(w http.ResponseWriter, r *http.Request) {
	p, err := s.storePaymentRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body paymentRequestBody
	badTypes, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if body.Currency == "" {
		// A PUT without a currency keeps the pay link's (see
		// kassa.PaymentRequest.Update); the amount is checked against it
		// with every other field.
		body.Currency = string(p.Currency)
	}
	in, err := s.paymentRequestInput(&body)
	if err = fieldsError(badTypes, err); err != nil {
		s.writeError(w, r, err)
		return
	}
	if _, err := s.PaymentRequests.UpdatePaymentRequest(r.Context(), p.StoreID, p.ID, in); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, message{Message: "Payment request updated"})
}

func (s *server) archivePaymentRequest(w http.ResponseWriter, r *http.Request) {
	p, err := s.storePaymentRequest(r)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if err := s.PaymentRequests.ArchivePaymentRequest(r.Context(), p.StoreID, p.ID); err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, message{Message: "Payment request archived"})
}

// listPaymentRequests answers the store's pay links, newest first,
// within startDate and endDate, in pages of limit (listByID).
func (s *server) listPaymentRequests(w http.ResponseWriter, r *http.Request) {
	storeID := callerFrom(r.Context()).store.ID
	listByID(s, w, r,
		func(fn func(*kassa.PaymentRequest) error) error {
			return s.Reader.PaymentRequests(r.Context(), storeID, fn)
		},
		func(p *kassa.PaymentRequest) string { return p.ID },
		func(p *kassa.PaymentRequest) time.Time { return p.CreatedAt },
		func(p *kassa.PaymentRequest) any { return s.paymentRequestRecord(p) })
}
