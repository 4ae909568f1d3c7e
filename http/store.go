package http

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/kassapay/kassa"
)

// storeRecord is a store as docs/api.md's Store table shows it. apiKey
// is the key the caller authenticated with. id repeats storeId, for shop
// plugins that read the store's id from it.
type storeRecord struct {
	ID                    string         `json:"id"`
	StoreID               string         `json:"storeId"`
	Name                  string         `json:"name"`
	WalletMinSendable     kassa.MSat     `json:"walletMinSendable"`
	WalletMaxSendable     kassa.MSat     `json:"walletMaxSendable"`
	APIKey                string         `json:"apiKey"`
	PercentFee            json.Number    `json:"percentFee"`
	UnderpaymentTolerance json.Number    `json:"underpaymentTolerance"`
	Currency              kassa.Currency `json:"currency"`
	// RefundAutoApproveMax is kassa.Store.RefundAutoApproveMax (0: none).
	RefundAutoApproveMax kassa.Sats `json:"refundAutoApproveMax"`
}

func newStoreRecord(st *kassa.Store, key kassa.APIKey) storeRecord {
	return storeRecord{
		ID:                    st.ID,
		StoreID:               st.ID,
		Name:                  st.Name,
		WalletMinSendable:     st.WalletMinSendable,
		WalletMaxSendable:     st.WalletMaxSendable,
		APIKey:                key.Key,
		PercentFee:            number(st.PercentFee),
		UnderpaymentTolerance: number(st.UnderpaymentTolerance),
		Currency:              st.Currency,
		RefundAutoApproveMax:  st.RefundAutoApproveMax,
	}
}

// listStores answers an array holding the key's own store. The record
// carries the API key: it must not be cached.
func (s *server) listStores(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c := callerFrom(r.Context())
	writeJSON(w, http.StatusOK, []storeRecord{newStoreRecord(c.store, c.key)})
}

func (s *server) getStore(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	c := callerFrom(r.Context())
	writeJSON(w, http.StatusOK, newStoreRecord(c.store, c.key))
}

// storeUpdateBody is the body of PUT /api/v1/stores/{storeId}: the
// settings this API changes. A field left out, or null, keeps its value.
type storeUpdateBody struct {
	RefundAutoApproveMax *int64 `json:"refundAutoApproveMax"`
}

// updateStore changes the store's settings of the body, bounded by the
// domain (kassa.Store.Apply): a refused value is 400 on its field and
// nothing is stored. It answers the store as getStore does.
func (s *server) updateStore(w http.ResponseWriter, r *http.Request) {
	var body storeUpdateBody
	badTypes, err := decodeBody(w, r, &body)
	if err == nil {
		err = fieldsError(badTypes, nil)
	}
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	c := callerFrom(r.Context())
	st := c.store
	if body.RefundAutoApproveMax != nil {
		// Only the setting of the body is named: a concurrent change of
		// the others is kept. The others carry their values as read, for
		// a node that predates field names and applies every one.
		u := st.Settings()
		u.RefundAutoApproveMax = kassa.Sats(*body.RefundAutoApproveMax)
		if st, err = s.Stores.UpdateStore(r.Context(), st.ID, u, kassa.StoreRefundAutoApproveMax); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	w.Header().Set("Cache-Control", "no-store")
	writeJSON(w, http.StatusOK, newStoreRecord(st, c.key))
}

// rateRecord is one exchange rate entry of docs/api.md (Exchange rates); rate is a decimal
// string.
type rateRecord struct {
	CurrencyPair string   `json:"currencyPair"`
	Rate         string   `json:"rate"`
	Errors       []string `json:"errors"`
}

// parseCurrencyPair reads BTC_EUR or BTC/EUR (any letter case) and
// returns the fiat currency.
func parseCurrencyPair(pair string) (kassa.Currency, bool) {
	base, quote, ok := strings.Cut(pair, "_")
	if !ok {
		base, quote, ok = strings.Cut(pair, "/")
	}
	if !ok || !strings.EqualFold(strings.TrimSpace(base), "BTC") {
		return "", false
	}
	c, err := kassa.ParseCurrency(quote)
	if err != nil || !c.IsFiat() {
		return "", false
	}
	return c, true
}

// getRates answers one entry per fiat pair, or only the pairs asked for
// by currencyPair (repeated, or comma-separated).
func (s *server) getRates(w http.ResponseWriter, r *http.Request) {
	var wanted []kassa.Currency
	for _, v := range r.URL.Query()["currencyPair"] {
		for _, pair := range strings.Split(v, ",") {
			if pair = strings.TrimSpace(pair); pair == "" {
				continue
			}
			c, ok := parseCurrencyPair(pair)
			if !ok {
				s.writeError(w, r, invalidField("currencyPair", "unknown currency pair "+pair+": use BTC_ and an ISO 4217 code, such as BTC_EUR; without currencyPair this endpoint lists every pair served"))
				return
			}
			wanted = append(wanted, c)
		}
	}
	entries := s.Rates.Entries(r.Context())
	byCurrency := make(map[kassa.Currency]kassa.RateEntry, len(entries))
	for _, e := range entries {
		byCurrency[e.Currency] = e
	}
	if len(wanted) == 0 {
		for _, e := range entries {
			wanted = append(wanted, e.Currency)
		}
	}
	records := make([]rateRecord, 0, len(wanted))
	for _, c := range wanted {
		e, ok := byCurrency[c]
		if !ok {
			e = kassa.RateEntry{Currency: c, Errors: []string{"no rate source for " + string(c)}}
		}
		errs := e.Errors
		if errs == nil {
			errs = []string{}
		}
		records = append(records, rateRecord{CurrencyPair: "BTC_" + string(c), Rate: e.Rate.String(), Errors: errs})
	}
	writeJSON(w, http.StatusOK, records)
}
