package http

import (
	"encoding/json"
	"net/http"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// createStoreBody is the admin request that creates a store, as
// "kassa store create" sends it.
type createStoreBody struct {
	Name             string          `json:"name"`
	Currency         string          `json:"currency"`
	PercentFee       json.RawMessage `json:"percentFee"`
	Tolerance        json.RawMessage `json:"tolerance"`
	Xpub             string          `json:"xpub"`
	XpubType         string          `json:"xpubType"`
	LightningAddress string          `json:"lightningAddress"`
	// RatePrimary and RateFallback name the rate providers the store
	// prefers (empty: the median of every configured provider).
	RatePrimary  string `json:"ratePrimary"`
	RateFallback string `json:"rateFallback"`
	// Confirmations defaults to 1 when absent; 0 settles on mempool sight.
	Confirmations *int32 `json:"confirmations"`
	// MaxInvoiceAmount and OnchainMinAmount are in satoshis; absent or 0
	// takes the defaults (kassa.Store).
	MaxInvoiceAmount kassa.Sats `json:"maxInvoiceAmount"`
	OnchainMinAmount kassa.Sats `json:"onchainMinAmount"`
	// ForwardFeePercent and ForwardFeeMax (satoshis) bound the routing
	// fee of forwards to the store's Lightning address; absent takes
	// the defaults (1%, at most 5,000 sat).
	ForwardFeePercent json.RawMessage `json:"forwardFeePercent"`
	ForwardFeeMax     kassa.Sats      `json:"forwardFeeMax"`
	// LogoURL and BrandColor brand the customer pages (kassa.Store).
	LogoURL    string `json:"logoUrl"`
	BrandColor string `json:"brandColor"`
}

// createdStore is the answer to a store creation.
type createdStore struct {
	StoreID string `json:"storeId"`
	APIKey  string `json:"apiKey"`
}

func (s *server) adminCreateStore(w http.ResponseWriter, r *http.Request) {
	var body createStoreBody
	fields, err := decodeBody(w, r, &body)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	settings := kassa.StoreSettings{
		Name:                  body.Name,
		Currency:              kassa.Currency(body.Currency),
		Xpub:                  body.Xpub,
		XpubType:              body.XpubType,
		LightningAddress:      body.LightningAddress,
		RatePrimary:           body.RatePrimary,
		RateFallback:          body.RateFallback,
		ConfirmationsRequired: 1,
		MaxInvoiceAmount:      body.MaxInvoiceAmount,
		OnchainMinAmount:      body.OnchainMinAmount,
		ForwardFeeMax:         body.ForwardFeeMax,
		LogoURL:               body.LogoURL,
		BrandColor:            body.BrandColor,
	}
	if body.Confirmations != nil {
		settings.ConfirmationsRequired = *body.Confirmations
	}
	if d, ok, err := parseDecimalField(body.PercentFee); err != nil {
		fields = append(fields, kassa.FieldError{Field: "percentFee", Message: "must be a number of percent"})
	} else if ok {
		settings.PercentFee = d
	}
	if d, ok, err := parseDecimalField(body.Tolerance); err != nil {
		fields = append(fields, kassa.FieldError{Field: "tolerance", Message: "must be a number of percent"})
	} else if ok {
		settings.UnderpaymentTolerance = d
	}
	if d, ok, err := parseDecimalField(body.ForwardFeePercent); err != nil {
		fields = append(fields, kassa.FieldError{Field: "forwardFeePercent", Message: "must be a number of percent"})
	} else if ok {
		settings.ForwardFeePercent = &d
	}
	if fields = mergeFields(fields, settings.Validate()); len(fields) > 0 {
		s.writeError(w, r, kassa.InvalidFields(fields))
		return
	}
	st, err := s.Stores.CreateStore(r.Context(), settings)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := createdStore{StoreID: st.ID}
	if len(st.APIKeys) > 0 {
		out.APIKey = st.APIKeys[0].Key
	}
	writeJSON(w, http.StatusOK, out)
}

// topUpBody credits a store's prepaid balance by amount satoshis.
// Reference, when given, names the payment credited: the store credits
// a reference once (docs/api.md, Admin API).
type topUpBody struct {
	Amount    json.RawMessage `json:"amount"`
	Reference *string         `json:"reference"`
}

// toppedUp is the answer to a top-up: the ledger line and the balance
// after it.
type toppedUp struct {
	StoreID     string     `json:"storeId"`
	Transaction int64      `json:"transactionId"`
	Amount      kassa.Sats `json:"amount"`
	Balance     kassa.Sats `json:"balance"`
}

func (s *server) adminTopUp(w http.ResponseWriter, r *http.Request) {
	storeID, err := pathID(r, "storeId", "store")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	var body topUpBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	amount, ok, err := parseSatsField(body.Amount)
	switch {
	case err != nil:
		s.writeError(w, r, invalidField("amount", kassa.ErrorMessage(err)))
		return
	case !ok || amount <= 0:
		s.writeError(w, r, invalidField("amount", "must be a whole number of satoshis greater than 0"))
		return
	}
	// Without a reference in the body, an Idempotency-Key serves as one.
	reference := r.Header.Get("Idempotency-Key")
	if body.Reference != nil {
		reference = *body.Reference
	}
	if body.Reference != nil || reference != "" {
		if err := kassa.CheckReference(reference); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	tx, err := s.Stores.TopUp(r.Context(), storeID, amount, reference)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	if tx.Amount != amount {
		s.writeError(w, r, kassa.Errorf(kassa.Conflict, "reference %q was already credited, for %d sat (transaction %d)", reference, tx.Amount, tx.ID))
		return
	}
	balance, err := s.Reader.Balance(r.Context(), storeID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, toppedUp{StoreID: storeID, Transaction: tx.ID, Amount: tx.Amount, Balance: balance})
}

var errNoSimulation = kassa.Errorf(kassa.NotFound, "simulation routes are off: they exist only on a server started with kassa serve --dev")

// simPayBody pays an invoice in simulation. method is "lightning" or
// "onchain" (default: Lightning when the invoice accepts it); amount in
// satoshis defaults to the amount due.
type simPayBody struct {
	InvoiceID string          `json:"invoiceId"`
	Method    string          `json:"method"`
	Amount    json.RawMessage `json:"amount"`
}

// simPaid is the answer to a simulated payment.
type simPaid struct {
	TxID      string `json:"txid"`
	InvoiceID string `json:"invoiceId"`
	Method    string `json:"method"`
}

func (s *server) adminSimPay(w http.ResponseWriter, r *http.Request) {
	if s.Simulator == nil {
		s.writeError(w, r, errNoSimulation)
		return
	}
	var body simPayBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	if !kassa.ValidID(body.InvoiceID) {
		s.writeError(w, r, invalidField("invoiceId", "is required"))
		return
	}
	amount, _, err := parseSatsField(body.Amount)
	if err != nil || amount < 0 {
		s.writeError(w, r, invalidField("amount", "must be a whole number of satoshis"))
		return
	}
	inv, err := s.Reader.Invoice(r.Context(), body.InvoiceID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out, err := s.simPay(r, inv, body.Method, amount)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// simPay pays inv through the simulator by the named method.
func (s *server) simPay(r *http.Request, inv *kassa.Invoice, methodName string, amount kassa.Sats) (simPaid, error) {
	method := kassa.MethodLightning
	if !inv.Accepts(method) {
		method = kassa.MethodOnchain
	}
	if methodName != "" {
		m, err := kassa.ParsePaymentMethod(methodName)
		if err != nil {
			return simPaid{}, invalidField("method", "must be lightning or onchain")
		}
		method = m
	}
	txid, err := s.Simulator.Pay(r.Context(), inv, method, amount)
	if err != nil {
		return simPaid{}, err
	}
	return simPaid{TxID: txid, InvoiceID: inv.ID, Method: method.String()}, nil
}

// simMineBody mines blocks (default 1, at most 1000) in simulation.
type simMineBody struct {
	Blocks *int `json:"blocks"`
}

// simMined is the chain height after mining.
type simMined struct {
	Height int64 `json:"height"`
}

// maxSimBlocks bounds one mining request.
const maxSimBlocks = 1000

func (s *server) adminSimMine(w http.ResponseWriter, r *http.Request) {
	if s.Simulator == nil {
		s.writeError(w, r, errNoSimulation)
		return
	}
	var body simMineBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	blocks := 1
	if body.Blocks != nil {
		blocks = *body.Blocks
	}
	if blocks < 1 || blocks > maxSimBlocks {
		s.writeError(w, r, invalidField("blocks", "must be from 1 to 1000"))
		return
	}
	height, err := s.Simulator.Mine(r.Context(), blocks)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, simMined{Height: height})
}

// adminStore is one store as `kassa store list` shows it: no API key,
// which the store's own API serves.
type adminStore struct {
	StoreID   string     `json:"storeId"`
	Name      string     `json:"name"`
	Currency  string     `json:"currency"`
	Balance   kassa.Sats `json:"balance"`
	CreatedAt int64      `json:"createdAt"`
}

// adminStoreDetail is one store for the admin token: what the list
// shows and, in cluster mode, which node runs it and its last
// hand-overs (actors.StoreOwnership).
type adminStoreDetail struct {
	adminStore
	Cluster any `json:"cluster,omitempty"`
}

func (s *server) adminGetStore(w http.ResponseWriter, r *http.Request) {
	st, err := s.Reader.Store(r.Context(), chi.URLParam(r, "storeId"))
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	balance, err := s.Reader.Balance(r.Context(), st.ID)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := adminStoreDetail{adminStore: adminStore{StoreID: st.ID, Name: st.Name, Currency: string(st.Currency),
		Balance: balance, CreatedAt: unixSeconds(st.CreatedAt)}}
	if s.StoreOwner != nil {
		out.Cluster = s.StoreOwner(st.ID)
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, out)
}

func (s *server) adminListStores(w http.ResponseWriter, r *http.Request) {
	out := []adminStore{}
	err := s.Reader.Stores(r.Context(), func(st *kassa.Store) error {
		balance, err := s.Reader.Balance(r.Context(), st.ID)
		if err != nil {
			return err
		}
		out = append(out, adminStore{StoreID: st.ID, Name: st.Name, Currency: string(st.Currency),
			Balance: balance, CreatedAt: unixSeconds(st.CreatedAt)})
		return nil
	})
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}
