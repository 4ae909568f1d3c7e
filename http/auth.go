package http

import (
	"context"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// caller is who a request authenticated as: a store and the key used.
type caller struct {
	store *kassa.Store
	key   kassa.APIKey
}

type callerKey struct{}

// callerFrom returns the authenticated caller of the request. Handlers
// behind authenticate always have one.
func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// maxKeyLength bounds the API key a caller may present; longer keys are
// unknown without a look-up.
const maxKeyLength = 256

// presentedKey returns the API key of the request: the x-api-key header,
// or an Authorization header "X-Api-Key <key>", "token <key>" or
// "Bearer <key>" (as some shop plugins send it).
func presentedKey(r *http.Request) string {
	if k := strings.TrimSpace(r.Header.Get("X-Api-Key")); k != "" {
		return k
	}
	scheme, key, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if !ok {
		return ""
	}
	if strings.EqualFold(scheme, "X-Api-Key") || strings.EqualFold(scheme, "token") || strings.EqualFold(scheme, "Bearer") {
		return strings.TrimSpace(key)
	}
	return ""
}

var (
	errNoKey      = kassa.Errorf(kassa.Unauthorized, "missing API key: send it in the x-api-key header or as Authorization: Bearer <key>")
	errUnknownKey = kassa.Errorf(kassa.Unauthorized, "unknown API key")
	errOtherStore = kassa.Errorf(kassa.Forbidden, "this API key does not belong to the store in the path")
)

// authenticate finds the store of the presented API key (StoreByKey).
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := presentedKey(r)
		if key == "" {
			s.writeError(w, r, errNoKey)
			return
		}
		store, k, err := StoreByKey(r.Context(), s.Reader, key)
		if err != nil {
			s.writeError(w, r, err)
			return
		}
		c := &caller{store: store, key: k}
		ctx := kassa.WithPrincipal(context.WithValue(r.Context(), callerKey{}, c), kassa.KeyPrincipal(store.ID, k))
		ctx = kassa.WithClientAddr(ctx, ClientIP(r, s.ClientIPHeader))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// StoreByKey returns the store that owns key and that key's record, or
// an Unauthorized error for a key no store has. The key is compared in
// constant time with the stored one and never logged; a key longer than
// any issued one is unknown without a look-up. Both APIs (this one and
// package greenfield) authenticate with it.
func StoreByKey(ctx context.Context, reader kassa.Reader, key string) (*kassa.Store, kassa.APIKey, error) {
	if len(key) > maxKeyLength {
		return nil, kassa.APIKey{}, errUnknownKey
	}
	store, err := reader.StoreByAPIKey(ctx, key)
	if kassa.ErrorCode(err) == kassa.NotFound {
		return nil, kassa.APIKey{}, errUnknownKey
	}
	if err != nil {
		return nil, kassa.APIKey{}, err
	}
	var found kassa.APIKey
	ok := false
	for _, k := range store.APIKeys {
		if subtle.ConstantTimeCompare([]byte(k.Key), []byte(key)) == 1 {
			found, ok = k, true
		}
	}
	if !ok {
		return nil, kassa.APIKey{}, errUnknownKey
	}
	return store, found, nil
}

// storeScope admits a request only to the store of its key: another
// store's id is 403 whether or not that store exists.
func (s *server) storeScope(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "storeId")
		if !kassa.ValidID(id) {
			s.writeError(w, r, kassa.Errorf(kassa.NotFound, "store not found"))
			return
		}
		if id != callerFrom(r.Context()).store.ID {
			s.writeError(w, r, errOtherStore)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// routePermissions is the permission each route of the API needs,
// keyed "METHOD pattern" as the router names the route. Every
// authenticated route is registered through permitted, which refuses a
// route missing here.
var routePermissions = map[string]kassa.Permission{
	"GET /api/v1/stores":                                                               kassa.PermViewStoreSettings,
	"GET /api/v1/stores/":                                                              kassa.PermViewStoreSettings,
	"GET /api/v1/stores/{storeId}/":                                                    kassa.PermViewStoreSettings,
	"PUT /api/v1/stores/{storeId}/":                                                    kassa.PermModifyStoreSettings,
	"GET /api/v1/stores/{storeId}/rates":                                               kassa.PermViewStoreSettings,
	"GET /api/v1/stores/{storeId}/invoices":                                            kassa.PermViewInvoices,
	"POST /api/v1/stores/{storeId}/invoices":                                           kassa.PermCreateInvoice,
	"GET /api/v1/stores/{storeId}/invoices/{invoiceId}":                                kassa.PermViewInvoices,
	"GET /api/v1/stores/{storeId}/invoices/{invoiceId}/payments":                       kassa.PermViewInvoices,
	"GET /api/v1/stores/{storeId}/payment-requests":                                    kassa.PermViewPaymentRequests,
	"POST /api/v1/stores/{storeId}/payment-requests":                                   kassa.PermModifyPaymentRequests,
	"GET /api/v1/stores/{storeId}/payment-requests/{id}":                               kassa.PermViewPaymentRequests,
	"PUT /api/v1/stores/{storeId}/payment-requests/{id}":                               kassa.PermModifyPaymentRequests,
	"DELETE /api/v1/stores/{storeId}/payment-requests/{id}":                            kassa.PermModifyPaymentRequests,
	"POST /api/v1/stores/{storeId}/api-keys":                                           kassa.PermManageAPIKeys,
	"GET /api/v1/stores/{storeId}/transactions":                                        kassa.PermViewReports,
	"GET /api/v1/stores/{storeId}/transactions/{id}":                                   kassa.PermViewReports,
	"GET /api/v1/stores/{storeId}/webhooks":                                            kassa.PermModifyWebhooks,
	"POST /api/v1/stores/{storeId}/webhooks":                                           kassa.PermModifyWebhooks,
	"GET /api/v1/stores/{storeId}/webhooks/{webhookId}":                                kassa.PermModifyWebhooks,
	"PUT /api/v1/stores/{storeId}/webhooks/{webhookId}":                                kassa.PermModifyWebhooks,
	"DELETE /api/v1/stores/{storeId}/webhooks/{webhookId}":                             kassa.PermModifyWebhooks,
	"GET /api/v1/stores/{storeId}/webhooks/{webhookId}/deliveries":                     kassa.PermModifyWebhooks,
	"GET /api/v1/stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}":        kassa.PermModifyWebhooks,
	"POST /api/v1/stores/{storeId}/webhooks/{webhookId}/paylods/{payloadId}/redeliver": kassa.PermModifyWebhooks,
	// A refund, a pull payment and a claim make payouts that wait for
	// approval; approving (paying) one needs canmanagepayouts.
	"POST /api/v1/stores/{storeId}/invoices/{invoiceId}/refund":           kassa.PermCreateNonApprovedPullPayments,
	"GET /api/v1/stores/{storeId}/pull-payments":                          kassa.PermViewPullPayments,
	"POST /api/v1/stores/{storeId}/pull-payments":                         kassa.PermCreateNonApprovedPullPayments,
	"GET /api/v1/stores/{storeId}/pull-payments/{pullPaymentId}":          kassa.PermViewPullPayments,
	"POST /api/v1/stores/{storeId}/pull-payments/{pullPaymentId}/payouts": kassa.PermCreateNonApprovedPullPayments,
	"GET /api/v1/stores/{storeId}/payouts":                                kassa.PermViewPayouts,
	"GET /api/v1/stores/{storeId}/payouts/{payoutId}":                     kassa.PermViewPayouts,
	"POST /api/v1/stores/{storeId}/payouts/{payoutId}/approve":            kassa.PermManagePayouts,
	"POST /api/v1/stores/{storeId}/payouts/{payoutId}/cancel":             kassa.PermManagePayouts,
	"POST /api/v1/stores/{storeId}/payouts/{payoutId}/mark-paid":          kassa.PermManagePayouts,
}

// permitted returns a function that registers a route on r, whose
// routes are under prefix, behind the check of the route's permission
// in routePermissions, then mw, then h. The check asks the request's
// kassa.Principal whether it may do the permission on the store in the
// path (the key's own store on a route without one): 403 naming the
// permission if not. A route missing from the table panics when the
// handler is built.
func (s *server) permitted(r chi.Router, prefix string) func(method, path string, h http.HandlerFunc, mw ...func(http.Handler) http.Handler) {
	return func(method, path string, h http.HandlerFunc, mw ...func(http.Handler) http.Handler) {
		route := method + " " + prefix + path
		perm, ok := routePermissions[route]
		if !ok {
			panic("http: route " + route + " has no permission in routePermissions")
		}
		check := func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				storeID := chi.URLParam(r, "storeId")
				if storeID == "" {
					storeID = callerFrom(r.Context()).store.ID
				}
				if !kassa.PrincipalFrom(r.Context()).Can(storeID, perm) {
					s.writeError(w, r, missingPermission(perm))
					return
				}
				next.ServeHTTP(w, r)
			})
		}
		r.With(append([]func(http.Handler) http.Handler{check}, mw...)...).Method(method, path, h)
	}
}

// missingPermission refuses a request whose key lacks perm.
func missingPermission(perm kassa.Permission) error {
	return kassa.Errorf(kassa.Forbidden, "this API key lacks the permission %s (%s)", perm, perm.Describe())
}

// adminOnly admits requests that carry "Authorization: Bearer <token>"
// with the admin token. An empty admin token admits nobody.
func (s *server) adminOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.isAdmin(r) {
			s.writeError(w, r, kassa.Errorf(kassa.Unauthorized, "admin API needs Authorization: Bearer <admin token>"))
			return
		}
		next.ServeHTTP(w, r)
	})
}
