package greenfield

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// Deps are what the handler consumes. Reader and Invoices are required.
type Deps struct {
	Reader   kassa.Reader
	Invoices kassa.InvoiceService
	// Webhooks registers webhooks; nil answers the webhook routes as
	// unsupported.
	Webhooks kassa.WebhookService
	// Keys makes API keys (POST /api/v1/api-keys); nil answers the route
	// as unsupported.
	Keys KeyService
	// Refunds and Payouts serve the refund routes (pull payments, the
	// invoice refund, payouts); nil answers them as unsupported.
	Refunds kassa.RefundService
	Payouts kassa.PayoutStore
	// Clock is the service's clock (nil: the system's).
	Clock kassa.Clock
	// Chain and Lightning report whether the backends are synced, for
	// server/info's fullySynched; nil counts as synced.
	Chain, Lightning interface {
		Info(context.Context) kassa.BackendInfo
	}
	// PublicURL is the base of checkout links, e.g. https://pay.example.com.
	PublicURL string
	Logger    *slog.Logger
	// Limiter limits requests per API key, in the buckets of Kassa's own
	// API (kassahttp.Deps.Limiter), and failed authentications per client
	// address; nil limits nothing. ClientIPHeader names the reverse
	// proxy's client address header, as kassahttp.Deps.ClientIPHeader.
	Limiter        *kassahttp.RateLimiter
	ClientIPHeader string
}

type server struct {
	Deps
	log       *slog.Logger
	publicURL string
}

// NewHandler returns BTCPay's Greenfield API: the routes of /api/v1 that
// BTCPay's shop plugins call, relative to where it is mounted (package
// http mounts it under /greenfield), and /i/{invoiceId}, the link
// btcpayserver-greenfield-php's plugins build to an invoice.
func NewHandler(d Deps) http.Handler {
	s := &server{Deps: d, log: d.Logger, publicURL: strings.TrimRight(d.PublicURL, "/")}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	r := chi.NewRouter()
	r.NotFound(s.unsupported)
	r.MethodNotAllowed(s.unsupported)
	r.Get("/i/{invoiceId}", s.invoiceLink)
	r.Get("/openapi.json", serveOpenAPI)
	r.Route("/api/v1", func(r chi.Router) {
		if s.refunds() {
			// Public in BTCPay: the pull payment's id is the customer's
			// link.
			r.Get(publicPullPayment, s.getPullPayment)
		}
		r.Group(func(r chi.Router) {
			r.Use(s.authenticate)
			for _, rt := range s.routes() {
				h := s.permit(rt.method, rt.pattern, rt.handler)
				if strings.HasPrefix(rt.pattern, "/stores/{storeId}/webhooks") || rt.pattern == "/api-keys" {
					h = noStore(h)
				}
				r.Method(rt.method, rt.pattern, h)
			}
		})
	})
	return r
}

// noStore marks responses as not to be cached: a created webhook carries
// its signing secret, a created key itself.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// apiError is Greenfield's error body (BTCPayServer.Client/Models/
// GreenfieldAPIError.cs, GreenfieldPermissionAPIError.cs).
type apiError struct {
	Code              string `json:"code"`
	Message           string `json:"message"`
	MissingPermission string `json:"missingPermission,omitempty"`
}

// validationError is one entry of Greenfield's 422 body
// (GreenfieldValidationError.cs).
type validationError struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"code":"generic-error","message":"internal error"}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeAPIError(w http.ResponseWriter, status int, code, message string) {
	writeJSON(w, status, apiError{Code: code, Message: message})
}

// writeValidation answers 422 with one entry per bad field.
func writeValidation(w http.ResponseWriter, errs []validationError) {
	writeJSON(w, http.StatusUnprocessableEntity, errs)
}

// statusOf maps kassa's error codes to HTTP statuses and Greenfield's
// error codes (generic-error where Greenfield has no name of its own).
var statusOf = map[string]struct {
	status int
	code   string
}{
	kassa.Invalid:          {http.StatusBadRequest, "generic-error"},
	kassa.Unauthorized:     {http.StatusUnauthorized, "unauthenticated"},
	kassa.PaymentRequired:  {http.StatusPaymentRequired, "payment-required"},
	kassa.Forbidden:        {http.StatusForbidden, "missing-permission"},
	kassa.NotFound:         {http.StatusNotFound, "not-found"},
	kassa.Conflict:         {http.StatusConflict, "conflict"},
	kassa.TooLarge:         {http.StatusRequestEntityTooLarge, "request-too-large"},
	kassa.UnsupportedMedia: {http.StatusUnsupportedMediaType, "unsupported-media-type"},
	kassa.RateLimited:      {http.StatusTooManyRequests, "rate-limited"},
	kassa.Unavailable:      {http.StatusServiceUnavailable, "service-unavailable"},
}

// fieldPaths names Kassa's request fields as Greenfield's JSON paths.
var fieldPaths = map[string]string{
	"amount":      "amount",
	"currency":    "currency",
	"buyerEmail":  "metadata.buyerEmail",
	"orderId":     "metadata.orderId",
	"redirectUrl": "checkout.redirectURL",
	"language":    "checkout.defaultLanguage",
	"metadata":    "metadata",

	"confirmationsRequired": "checkout.speedPolicy",
	"expiry":                "checkout.expirationMinutes",
}

// writeError answers a kassa error in Greenfield's shape: bad fields as
// 422, others by code; an error without a code is logged and answered
// "internal error".
func (s *server) writeError(w http.ResponseWriter, r *http.Request, err error) {
	var e *kassa.Error
	if !errors.As(err, &e) || e.Code == kassa.Internal {
		s.log.LogAttrs(r.Context(), slog.LevelError, "internal error",
			slog.String("method", r.Method), slog.String("err", err.Error()))
		writeAPIError(w, http.StatusInternalServerError, "generic-error", "internal error")
		return
	}
	if e.Code == kassa.Invalid && len(e.Fields) > 0 {
		errs := make([]validationError, 0, len(e.Fields))
		for _, f := range e.Fields {
			path, ok := fieldPaths[f.Field]
			if !ok {
				path = f.Field
			}
			errs = append(errs, validationError{Path: path, Message: f.Message})
		}
		writeValidation(w, errs)
		return
	}
	st, ok := statusOf[e.Code]
	if !ok {
		st.status, st.code = http.StatusInternalServerError, "generic-error"
	}
	if st.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", "2")
	}
	writeAPIError(w, st.status, st.code, e.Message)
}

// unsupported answers every route this API does not serve, in
// Greenfield's error shape, naming it.
func (s *server) unsupported(w http.ResponseWriter, r *http.Request) {
	writeAPIError(w, http.StatusNotFound, "unsupported-route",
		"Kassa's Greenfield API does not support "+r.Method+" "+r.URL.Path)
}

// invoiceLink sends the customer from <base>/i/{invoiceId}, where BTCPay
// plugins link an invoice (GreenfieldApiHelper::getInvoiceRedirectUrl),
// to Kassa's checkout page.
func (s *server) invoiceLink(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "invoiceId")
	if !kassa.ValidID(id) {
		s.unsupported(w, r)
		return
	}
	http.Redirect(w, r, s.checkoutLink(id), http.StatusFound)
}

func (s *server) checkoutLink(invoiceID string) string {
	return s.publicURL + "/checkout/" + invoiceID
}

// caller is who a request authenticated as.
type caller struct {
	store *kassa.Store
	key   kassa.APIKey
}

type callerKey struct{}

func callerFrom(ctx context.Context) *caller {
	c, _ := ctx.Value(callerKey{}).(*caller)
	return c
}

// authenticate admits a request whose "Authorization: token <key>" names
// a store's key (BTCPay's API-key scheme).
func (s *server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, key, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
		key = strings.TrimSpace(key)
		if !strings.EqualFold(scheme, "token") || key == "" {
			if s.limited(w, "authfail/"+kassahttp.ClientAddress(r, s.ClientIPHeader)) {
				return
			}
			writeAPIError(w, http.StatusUnauthorized, "unauthenticated", "Authentication is required for accessing this endpoint: send Authorization: token <API key>")
			return
		}
		store, k, err := kassahttp.StoreByKey(r.Context(), s.Reader, key)
		if err != nil {
			if kassa.ErrorCode(err) == kassa.Unauthorized {
				if s.limited(w, "authfail/"+kassahttp.ClientAddress(r, s.ClientIPHeader)) {
					return
				}
				writeAPIError(w, http.StatusUnauthorized, "unauthenticated", "unknown API key")
				return
			}
			s.writeError(w, r, err)
			return
		}
		if s.limited(w, kassahttp.KeyBucket(store.ID, k.ID)) {
			return
		}
		ctx := kassa.WithPrincipal(context.WithValue(r.Context(), callerKey{}, &caller{store: store, key: k}), kassa.KeyPrincipal(store.ID, k))
		ctx = kassa.WithClientAddr(ctx, kassahttp.ClientIP(r, s.ClientIPHeader))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// limited takes a token from bucket and, when there is none, answers 429
// with Retry-After (whole seconds, at least 1) and returns true.
func (s *server) limited(w http.ResponseWriter, bucket string) bool {
	ok, wait := s.Limiter.Allow(bucket)
	if ok {
		return false
	}
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	writeAPIError(w, http.StatusTooManyRequests, "rate-limited", fmt.Sprintf("too many requests: retry in %d s", secs))
	return true
}

// route is one route of /api/v1 and its handler.
type route struct {
	method, pattern string
	handler         http.HandlerFunc
}

// routes are the routes of /api/v1 this API serves; each has its
// permission in routePermissions.
func (s *server) routes() []route {
	rs := []route{
		{http.MethodGet, "/api-keys/current", s.currentKey},
		{http.MethodGet, "/server/info", s.serverInfo},
		{http.MethodGet, "/stores", s.listStores},
		{http.MethodGet, "/stores/{storeId}", s.getStore},
		{http.MethodGet, "/stores/{storeId}/payment-methods", s.storePaymentMethods},
		{http.MethodGet, "/stores/{storeId}/invoices", s.listInvoices},
		{http.MethodPost, "/stores/{storeId}/invoices", s.createInvoice},
		{http.MethodGet, "/stores/{storeId}/invoices/{invoiceId}", s.getInvoice},
		{http.MethodDelete, "/stores/{storeId}/invoices/{invoiceId}", s.archiveInvoice},
		{http.MethodPost, "/stores/{storeId}/invoices/{invoiceId}/status", s.markStatus},
		{http.MethodGet, "/stores/{storeId}/invoices/{invoiceId}/payment-methods", s.invoicePaymentMethods},
	}
	if s.Keys != nil {
		rs = append(rs, route{http.MethodPost, "/api-keys", s.createKey})
	}
	if s.Webhooks != nil {
		rs = append(rs,
			route{http.MethodGet, "/stores/{storeId}/webhooks", s.listWebhooks},
			route{http.MethodPost, "/stores/{storeId}/webhooks", s.createWebhook},
			route{http.MethodGet, "/stores/{storeId}/webhooks/{webhookId}", s.getWebhook},
			route{http.MethodPut, "/stores/{storeId}/webhooks/{webhookId}", s.updateWebhook},
			route{http.MethodDelete, "/stores/{storeId}/webhooks/{webhookId}", s.deleteWebhook},
			route{http.MethodGet, "/stores/{storeId}/webhooks/{webhookId}/deliveries", s.listDeliveries},
			route{http.MethodGet, "/stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}", s.getDelivery},
			route{http.MethodGet, "/stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}/request", s.deliveryRequest},
			route{http.MethodPost, "/stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", s.redeliver},
		)
	}
	if s.refunds() {
		rs = append(rs, s.refundRoutes()...)
	}
	return rs
}

// publicPullPayment is the route of a pull payment, served without a
// key.
const publicPullPayment = "/pull-payments/{pullPaymentId}"

// refunds reports whether the refund routes are served.
func (s *server) refunds() bool { return s.Refunds != nil && s.Payouts != nil }

// routePermissions is the permission each route of /api/v1 needs, keyed
// "METHOD pattern" (the pattern under /api/v1); "" needs only a key,
// but for GET publicPullPayment, which needs none.
// BTCPay asks the same permissions of the same routes (its
// [Authorize(Policy = …)] attributes).
var routePermissions = map[string]kassa.Permission{
	"GET /api-keys/current":                                                         "",
	"POST /api-keys":                                                                kassa.PermManageAPIKeys,
	"GET /server/info":                                                              "",
	"GET /stores":                                                                   kassa.PermViewStoreSettings,
	"GET /stores/{storeId}":                                                         kassa.PermViewStoreSettings,
	"GET /stores/{storeId}/payment-methods":                                         kassa.PermViewStoreSettings,
	"GET /stores/{storeId}/invoices":                                                kassa.PermViewInvoices,
	"POST /stores/{storeId}/invoices":                                               kassa.PermCreateInvoice,
	"GET /stores/{storeId}/invoices/{invoiceId}":                                    kassa.PermViewInvoices,
	"DELETE /stores/{storeId}/invoices/{invoiceId}":                                 kassa.PermModifyInvoices,
	"POST /stores/{storeId}/invoices/{invoiceId}/status":                            kassa.PermModifyInvoices,
	"GET /stores/{storeId}/invoices/{invoiceId}/payment-methods":                    kassa.PermViewInvoices,
	"GET /stores/{storeId}/webhooks":                                                kassa.PermModifyWebhooks,
	"POST /stores/{storeId}/webhooks":                                               kassa.PermModifyWebhooks,
	"GET /stores/{storeId}/webhooks/{webhookId}":                                    kassa.PermModifyWebhooks,
	"PUT /stores/{storeId}/webhooks/{webhookId}":                                    kassa.PermModifyWebhooks,
	"DELETE /stores/{storeId}/webhooks/{webhookId}":                                 kassa.PermModifyWebhooks,
	"GET /stores/{storeId}/webhooks/{webhookId}/deliveries":                         kassa.PermModifyWebhooks,
	"GET /stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}":            kassa.PermModifyWebhooks,
	"GET /stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}/request":    kassa.PermModifyWebhooks,
	"POST /stores/{storeId}/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver": kassa.PermModifyWebhooks,
	// A refund and a pull payment wait for the merchant's approval of
	// each payout (cancreatenonapprovedpullpayments, which the
	// WooCommerce plugin checks for by that name); approving one spends
	// the store's balance (canmanagepayouts).
	"POST /stores/{storeId}/invoices/{invoiceId}/refund":  kassa.PermCreateNonApprovedPullPayments,
	"GET /stores/{storeId}/pull-payments":                 kassa.PermViewPullPayments,
	"POST /stores/{storeId}/pull-payments":                kassa.PermCreateNonApprovedPullPayments,
	"GET " + publicPullPayment:                            "",
	"GET /stores/{storeId}/payouts":                       kassa.PermViewPayouts,
	"GET /stores/{storeId}/payouts/{payoutId}":            kassa.PermViewPayouts,
	"POST /stores/{storeId}/payouts/{payoutId}":           kassa.PermManagePayouts,
	"DELETE /stores/{storeId}/payouts/{payoutId}":         kassa.PermManagePayouts,
	"POST /stores/{storeId}/payouts/{payoutId}/mark-paid": kassa.PermManagePayouts,
}

// permissionError is BTCPay's 403 for a key that lacks perm on the store
// asked for.
func permissionError(w http.ResponseWriter, perm kassa.Permission) {
	writeJSON(w, http.StatusForbidden, apiError{
		Code:              "missing-permission",
		Message:           `Insufficient API Permissions. Please use an API key with permission "` + string(perm) + `".`,
		MissingPermission: string(perm),
	})
}

// permit wraps the handler of a route with the check of its permission
// in routePermissions, asked of the request's principal
// (kassa.Principal.Can) on the store in the path, or on the key's own
// store for a route without one. A route missing from the table is a
// programming error and panics when the handler is built.
func (s *server) permit(method, pattern string, next http.HandlerFunc) http.Handler {
	perm, ok := routePermissions[method+" "+pattern]
	if !ok {
		panic("greenfield: route " + method + " " + pattern + " has no permission in routePermissions")
	}
	if perm == "" {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		storeID := callerFrom(r.Context()).store.ID
		if strings.Contains(pattern, "{storeId}") {
			storeID = chi.URLParam(r, "storeId")
		}
		if !kassa.PrincipalFrom(r.Context()).Can(storeID, perm) {
			permissionError(w, perm)
			return
		}
		next(w, r)
	})
}

// permissions lists what the key may do on store, in BTCPay's strings:
// a key made with permissions, exactly those; one made without (which
// holds kassa.DefaultKeyPermissions), StorePermissions, which every
// route of this API needs and BTCPay's plugins check for exactly.
func permissions(storeID string, k kassa.APIKey) []string {
	held := k.Permissions
	if len(held) == 0 {
		held = StorePermissions
	}
	out := make([]string, len(held))
	for i, p := range held {
		out[i] = kassa.Grant{Permission: p, StoreID: storeID}.String()
	}
	return out
}

// currentKey answers GET /api/v1/api-keys/current (swagger.template.
// api-keys.json, ApiKeyData).
func (s *server) currentKey(w http.ResponseWriter, r *http.Request) {
	c := callerFrom(r.Context())
	writeJSON(w, http.StatusOK, map[string]any{
		"apiKey":      c.key.Key,
		"label":       c.key.Label,
		"permissions": permissions(c.store.ID, c.key),
	})
}

// serverInfo answers GET /api/v1/server/info (swagger.template.
// serverinfo.json, ApplicationServerInfoData): fullySynched is whether
// every backend reports itself synced, as Kassa's health check reads it.
func (s *server) serverInfo(w http.ResponseWriter, r *http.Request) {
	synced := true
	for _, b := range []interface {
		Info(context.Context) kassa.BackendInfo
	}{s.Chain, s.Lightning} {
		if b != nil && !b.Info(r.Context()).Synced {
			synced = false
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"version":                 BTCPayVersion,
		"onion":                   nil,
		"supportedPaymentMethods": []string{MethodChain, MethodLightning},
		"fullySynched":            synced,
		"syncStatus":              []any{},
	})
}
