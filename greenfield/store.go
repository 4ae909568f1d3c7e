package greenfield

import (
	"encoding/json"
	"net/http"

	"github.com/kassapay/kassa"
)

// storeData is a store as StoreData of swagger.template.stores.json
// (BTCPay 2.4.1) names it: only the fields Kassa's store has.
type storeData struct {
	ID               string      `json:"id"`
	Name             string      `json:"name"`
	DefaultCurrency  string      `json:"defaultCurrency"`
	SpeedPolicy      string      `json:"speedPolicy,omitempty"`
	PaymentTolerance json.Number `json:"paymentTolerance"`
	LogoURL          *string     `json:"logoUrl"`
	BrandColor       *string     `json:"brandColor"`
	Archived         bool        `json:"archived"`
	// RedirectAutomatically is the default of the store's invoices.
	RedirectAutomatically bool `json:"redirectAutomatically"`
}

// speedPolicy names confirmations as BTCPay's SpeedPolicy does
// (swagger.template.json: HighSpeed 0, MediumSpeed 1, LowMediumSpeed 2,
// LowSpeed 6); a count it has no name for is left out.
func speedPolicy(confirmations int32) string {
	switch confirmations {
	case 0:
		return "HighSpeed"
	case 1:
		return "MediumSpeed"
	case 2:
		return "LowMediumSpeed"
	case 6:
		return "LowSpeed"
	}
	return ""
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toStoreData(st *kassa.Store) storeData {
	return storeData{
		ID: st.ID, Name: st.Name, DefaultCurrency: string(st.Currency),
		SpeedPolicy: speedPolicy(st.ConfirmationsRequired), PaymentTolerance: json.Number(st.UnderpaymentTolerance.String()),
		LogoURL: optional(st.LogoURL), BrandColor: optional(st.BrandColor),
		RedirectAutomatically: st.DefaultRedirectAutomatically,
	}
}

// listStores answers GET /api/v1/stores: the key's one store.
func (s *server) listStores(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, []storeData{toStoreData(callerFrom(r.Context()).store)})
}

// getStore answers GET /api/v1/stores/{storeId}.
func (s *server) getStore(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, toStoreData(callerFrom(r.Context()).store))
}

// storePaymentMethods answers GET /api/v1/stores/{storeId}/payment-methods
// (GenericPaymentMethodData): the methods an invoice of the store takes
// when its request names none (kassa.InvoiceRequest.Validate's default),
// each enabled. includeConfig needs canmodifystoresettings and adds
// nothing (Kassa's methods have no configuration to show);
// onlyEnabled=false lists the disabled ones, none.
func (s *server) storePaymentMethods(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if q.Get("includeConfig") == "true" && !kassa.PrincipalFrom(r.Context()).Can(callerFrom(r.Context()).store.ID, kassa.PermModifyStoreSettings) {
		permissionError(w, kassa.PermModifyStoreSettings)
		return
	}
	type method struct {
		Enabled         bool   `json:"enabled"`
		PaymentMethodID string `json:"paymentMethodId"`
	}
	out := []method{}
	if q.Get("onlyEnabled") != "false" {
		req := kassa.InvoiceRequest{}
		if err := req.Validate(); err != nil {
			s.writeError(w, r, err)
			return
		}
		for _, m := range req.EnabledMethods {
			out = append(out, method{Enabled: true, PaymentMethodID: methodID(m)})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// methodID names a payment method as BTCPay 2.4.1 does.
func methodID(m kassa.PaymentMethod) string {
	if m == kassa.MethodLightning {
		return MethodLightning
	}
	return MethodChain
}
