package greenfield

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"slices"
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
		r.Use(s.authenticate)
		r.Get("/api-keys/current", s.currentKey)
		r.Get("/server/info", s.serverInfo)
		r.With(s.needs(PermViewStoreSettings)).Get("/stores", s.listStores)
		r.Route("/stores/{storeId}", func(r chi.Router) {
			r.With(s.storeScope(PermViewStoreSettings)).Get("/", s.getStore)
			r.With(s.storeScope(PermViewStoreSettings)).Get("/payment-methods", s.storePaymentMethods)
			r.With(s.storeScope(PermViewInvoices)).Get("/invoices", s.listInvoices)
			r.With(s.storeScope(PermCreateInvoice)).Post("/invoices", s.createInvoice)
			r.With(s.storeScope(PermViewInvoices)).Get("/invoices/{invoiceId}", s.getInvoice)
			r.With(s.storeScope(PermModifyInvoices)).Delete("/invoices/{invoiceId}", s.archiveInvoice)
			r.With(s.storeScope(PermModifyInvoices)).Post("/invoices/{invoiceId}/status", s.markStatus)
			r.With(s.storeScope(PermViewInvoices)).Get("/invoices/{invoiceId}/payment-methods", s.invoicePaymentMethods)
			if s.Webhooks != nil {
				r.Route("/webhooks", func(r chi.Router) {
					r.Use(s.storeScope(PermModifyWebhooks), noStore)
					r.Get("/", s.listWebhooks)
					r.Post("/", s.createWebhook)
					r.Get("/{webhookId}", s.getWebhook)
					r.Put("/{webhookId}", s.updateWebhook)
					r.Delete("/{webhookId}", s.deleteWebhook)
					r.Get("/{webhookId}/deliveries", s.listDeliveries)
					r.Get("/{webhookId}/deliveries/{deliveryId}", s.getDelivery)
					r.Get("/{webhookId}/deliveries/{deliveryId}/request", s.deliveryRequest)
					r.Post("/{webhookId}/deliveries/{deliveryId}/redeliver", s.redeliver)
				})
			}
		})
	})
	return r
}

// noStore marks responses as not to be cached: a created webhook carries
// its signing secret.
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
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, &caller{store: store, key: k})))
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

// permissionError is BTCPay's 403 for a key that lacks perm on the store
// asked for.
func permissionError(w http.ResponseWriter, perm string) {
	writeJSON(w, http.StatusForbidden, apiError{
		Code:              "missing-permission",
		Message:           `Insufficient API Permissions. Please use an API key with permission "` + perm + `".`,
		MissingPermission: perm,
	})
}

// needs admits a request whose key holds perm on its store.
func (s *server) needs(perm string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !slices.Contains(StorePermissions, perm) {
				permissionError(w, perm)
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// storeScope admits a request for the key's own store that the key holds
// perm on; any other store id, existing or not, is 403 as BTCPay answers
// a key without a permission on that store.
func (s *server) storeScope(perm string) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return s.needs(perm)(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if chi.URLParam(r, "storeId") != callerFrom(r.Context()).store.ID {
				permissionError(w, perm)
				return
			}
			next.ServeHTTP(w, r)
		}))
	}
}

// permissions lists what the key may do on store, in BTCPay's strings.
func permissions(storeID string) []string {
	out := make([]string, len(StorePermissions))
	for i, p := range StorePermissions {
		out[i] = p + ":" + storeID
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
		"permissions": permissions(c.store.ID),
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
