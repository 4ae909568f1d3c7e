package http

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/http/apidocs"
	"github.com/kassapay/kassa/metrics"
)

// Deps are what the handler consumes. Reader, Stores, Invoices,
// PaymentRequests and Rates are required; the others may be left zero.
type Deps struct {
	Reader          kassa.Reader
	Stores          kassa.StoreService
	Invoices        kassa.InvoiceService
	PaymentRequests kassa.PaymentRequestService
	Rates           kassa.Rates
	Webhooks        kassa.WebhookService // nil: the webhook routes answer 404
	// Refunds and Payouts serve the refund routes (pull payments and
	// payouts); nil: they answer 404.
	Refunds kassa.RefundService
	Payouts kassa.PayoutStore
	// Keys makes API keys (POST …/api-keys); nil: that route answers 404.
	Keys             KeyService
	Chain, Lightning interface {
		Info(context.Context) kassa.BackendInfo
	}
	// Simulated says the backends are simulated: the pages carry the
	// SIMULATION banner and health says so.
	Simulated bool
	// Simulator drives the simulated backends for the simulation routes
	// (the admin API's sim/pay and sim/mine, the checkout page's buttons);
	// cmd/kassa sets it only with --dev, so that a server a stranger can
	// reach never settles an invoice nobody paid. Nil: no such routes.
	Simulator kassa.Simulator
	KV        kassa.KeyValue // idempotency keys
	Clock     kassa.Clock
	Logger    *slog.Logger
	// Metrics counts the requests (nil: a Set of the handler's own,
	// unserved).
	Metrics *metrics.Set
	// PublicURL is the base of checkoutLink and pay-link URLs, e.g.
	// http://127.0.0.1:8080.
	PublicURL string
	// AdminToken is the bearer token of the admin API; empty disables it.
	AdminToken string
	Version    string
	// RateLimit is the number of requests per second per API key; 0
	// turns rate limiting off. RateBurst is the bucket size (at least 1).
	RateLimit float64
	RateBurst int
	// Limiter, when set, is the per-key limiter in place of one of
	// RateLimit and RateBurst: the one BTCPay's Greenfield API shares.
	Limiter *RateLimiter
	// PublicLimits are the per-address and per-pay-link limits of the
	// customer pages; the zero value means DefaultPublicLimits.
	PublicLimits PublicLimits
	// ClientIPHeader names the header whose last address is the client's
	// (X-Forwarded-For behind a reverse proxy); empty: the connection's
	// address. Set it only behind a proxy that sets the header, or clients
	// choose their own address.
	ClientIPHeader string
	// Dashboard, when set, is the merchant dashboard, served under
	// /dashboard (package dashboard).
	Dashboard http.Handler
	// Greenfield, when set, is BTCPay's Greenfield API (package
	// greenfield), served under GreenfieldPath; the Greenfield-only paths
	// asked under /api/v1 then answer 404 naming its base URL.
	Greenfield http.Handler
	// Storage reports the store's failure for the health check: Err
	// answers nil while writes work. Nil leaves storage out of health.
	Storage interface{ Err() error }
	// Operator is the operator page (package operator), served behind the
	// admin token under /admin/v1/operator/; nil leaves it out.
	Operator http.Handler
	// Backup takes a consistent snapshot of the data for `kassa backup`
	// (POST /admin/v1/backup); nil answers 404.
	Backup BackupFunc
	// JournalFaults lists the actor journals this node found not to
	// replay (actors.Runtime.JournalFaults), one line each, for the health
	// check; nil leaves them out.
	JournalFaults func() []string
	// Cluster reports this node of a cluster for the health check; nil
	// (or a nil report) on a single node.
	Cluster func() any
	// StoreOwner says, in cluster mode, which node runs a store and its
	// last hand-overs (GET /admin/v1/stores/{storeId}); nil on a single
	// node.
	StoreOwner func(storeID string) any
	// TicketKey signs the pay-link tickets (paylinkpool.go): the nodes
	// of a cluster share it, so that a ticket one node issued holds on
	// every other. Nil or shorter than 32 bytes: a key of this handler's
	// own, good until it stops.
	TicketKey []byte
	// HealthTTL is how long a backend's reading serves the health check
	// (zero: 5 s); the backends are read in the background.
	HealthTTL time.Duration
}

// server holds the dependencies of every handler.
type server struct {
	Deps
	log       *slog.Logger
	publicURL string
	limiter   *rateLimiter
	public    publicLimiters
	idemLocks keyedMutex
	router    *chi.Mux
	// payLinkPool and cookieKey keep pay links open under a flood
	// (paylinkpool.go).
	payLinkPool payLinkPool
	cookieKey   []byte
	// chainProbe and lightningProbe cache the backends' readings for
	// the health check (health.go).
	chainProbe, lightningProbe *backendProbe
	// storageProbe caches whether the store answers (health.go).
	storageProbe storageProbe
}

// NewHandler returns the HTTP handler of the whole service: the merchant
// API under /api/v1 (webhooks included when Deps.Webhooks is set), the
// admin API under /admin/v1 and the customer pages.
func NewHandler(d Deps) http.Handler {
	s := &server{Deps: d, log: d.Logger, publicURL: strings.TrimRight(d.PublicURL, "/")}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	if s.Clock == nil {
		s.Clock = kassa.SystemClock{}
	}
	s.Metrics = metrics.Or(s.Metrics)
	s.limiter = newRateLimiter(d.RateLimit, d.RateBurst, s.Clock)
	if d.Limiter != nil {
		s.limiter = d.Limiter.l
	}
	if s.PublicLimits == (PublicLimits{}) {
		s.PublicLimits = DefaultPublicLimits()
	}
	s.public = newPublicLimiters(s.PublicLimits, s.Clock)
	s.cookieKey = d.TicketKey
	if len(s.cookieKey) < minTicketKey {
		s.cookieKey = NewTicketKey()
	}
	ttl := d.HealthTTL
	if ttl <= 0 {
		ttl = healthTTL
	}
	s.chainProbe, s.lightningProbe = newBackendProbe(d.Chain, ttl), newBackendProbe(d.Lightning, ttl)
	s.router = s.routes()
	return s.router
}

// routes builds the router. NotFound and MethodNotAllowed are set first so
// that every sub-router inherits them.
func (s *server) routes() *chi.Mux {
	r := chi.NewRouter()
	r.NotFound(s.notFound)
	r.MethodNotAllowed(s.methodNotAllowed)
	r.Use(s.observe, s.recoverPanic)

	r.Route("/api/v1", func(r chi.Router) {
		r.Get("/health", s.health)
		r.Get("/openapi.json", apidocs.ServeOpenAPI)
		if s.Greenfield != nil {
			r.Get("/api-keys/current", s.greenfieldOnly)
			r.Get("/server/info", s.greenfieldOnly)
			r.Get("/stores/{storeId}/payment-methods", s.greenfieldOnly)
			r.Get("/stores/{storeId}/invoices/{invoiceId}/payment-methods", s.greenfieldOnly)
			r.Post("/stores/{storeId}/invoices/{invoiceId}/status", s.greenfieldOnly)
		}
		r.Group(func(r chi.Router) {
			r.Use(s.authenticate, s.rateLimit)
			on := s.permitted(r, "/api/v1")
			on(http.MethodGet, "/stores", s.listStores)
			on(http.MethodGet, "/stores/", s.listStores)
			r.Route("/stores/{storeId}", func(r chi.Router) {
				r.Use(s.storeScope)
				on := s.permitted(r, "/api/v1/stores/{storeId}")
				on(http.MethodGet, "/", s.getStore)
				on(http.MethodPut, "/", s.updateStore)
				on(http.MethodGet, "/rates", s.getRates)

				on(http.MethodGet, "/invoices", s.listInvoices)
				on(http.MethodPost, "/invoices", s.createInvoice, s.idempotentCreate)
				on(http.MethodGet, "/invoices/{invoiceId}", s.getInvoice)
				on(http.MethodGet, "/invoices/{invoiceId}/payments", s.listInvoicePayments)

				on(http.MethodGet, "/payment-requests", s.listPaymentRequests)
				on(http.MethodPost, "/payment-requests", s.createPaymentRequest, s.idempotentCreate)
				on(http.MethodGet, "/payment-requests/{id}", s.getPaymentRequest)
				on(http.MethodPut, "/payment-requests/{id}", s.updatePaymentRequest)
				on(http.MethodDelete, "/payment-requests/{id}", s.archivePaymentRequest)

				on(http.MethodPost, "/api-keys", s.createAPIKey, noStore, s.idempotent)

				on(http.MethodGet, "/transactions", s.listTransactions)
				on(http.MethodGet, "/transactions/{id}", s.getTransaction)

				r.Group(func(r chi.Router) {
					r.Use(s.refundsAvailable)
					s.refundRoutes(r)
				})

				r.Group(func(r chi.Router) {
					r.Use(s.webhooksAvailable, noStore)
					on := s.permitted(r, "/api/v1/stores/{storeId}")
					on(http.MethodGet, "/webhooks", s.listWebhooks)
					on(http.MethodPost, "/webhooks", s.createWebhook, s.idempotent)
					on(http.MethodGet, "/webhooks/{webhookId}", s.getWebhook)
					on(http.MethodPut, "/webhooks/{webhookId}", s.updateWebhook)
					on(http.MethodDelete, "/webhooks/{webhookId}", s.deleteWebhook)
					on(http.MethodGet, "/webhooks/{webhookId}/deliveries", s.listDeliveries)
					on(http.MethodGet, "/webhooks/{webhookId}/deliveries/{deliveryId}", s.getDelivery)
					// The interface spells the segment "paylods" (docs/api.md); it is served as spelled.
					on(http.MethodPost, "/webhooks/{webhookId}/paylods/{payloadId}/redeliver", s.redeliver, s.idempotent)
				})
			})
		})
	})

	// The API reference page and its assets (http/apidocs).
	r.Get("/docs/api", apidocs.ServeDocs)
	r.Get("/docs/api/*", apidocs.ServeDocs)

	r.Route("/admin/v1", func(r chi.Router) {
		r.Use(s.adminOnly)
		r.Get("/stores", s.adminListStores)
		r.Get("/stores/{storeId}", s.adminGetStore)
		r.Post("/stores", s.adminCreateStore)
		r.Post("/stores/{storeId}/topup", s.adminTopUp)
		r.With(noStore).Post("/stores/{storeId}/api-keys", s.adminCreateAPIKey)
		r.Post("/sim/pay", s.adminSimPay)
		r.Post("/sim/mine", s.adminSimMine)
		if s.Operator != nil {
			r.Mount("/operator", http.StripPrefix("/admin/v1/operator", s.Operator))
		}
		r.Post("/backup", s.adminBackup)
	})

	r.Get("/modal/btcpay.js", s.serveModalScript)
	if s.Greenfield != nil {
		r.Get(GreenfieldPath+"/modal/btcpay.js", s.serveModalScript)
		if s.Dashboard != nil {
			r.Get(GreenfieldPath+"/api-keys/authorize", authorizeForward)
		}
		r.Mount(GreenfieldPath, s.Greenfield)
	}

	if s.Dashboard != nil {
		r.Mount("/dashboard", s.Dashboard)
		r.Get("/api-keys/authorize", authorizeForward)
		r.Get("/", s.root)
	}

	r.Get(assetPrefix+"{name}", s.asset)
	r.Group(func(r chi.Router) {
		r.Use(s.limitPages)
		r.Get("/i/{invoiceId}", s.invoiceShortLink)
		r.Get("/checkout/{invoiceId}", s.checkoutPage)
		r.Get("/checkout/{invoiceId}/status", s.checkoutStatus)
		if s.Simulator != nil {
			r.Post("/checkout/{invoiceId}/sim/pay", s.checkoutSimPay)
			r.Post("/checkout/{invoiceId}/sim/mine", s.checkoutSimMine)
		}
		r.Get("/payment-requests/{id}", s.payLinkPage)
		r.Post("/payment-requests/{id}/pay", s.payLinkPay) // limits its own new invoices
		if s.Refunds != nil && s.Payouts != nil {
			r.Get("/pull-payments/{pullPaymentId}", s.claimPage)
			r.Post("/pull-payments/{pullPaymentId}/claim", s.claimPost) // limits its own claims
			r.Get("/pull-payments/{pullPaymentId}/payouts/{payoutId}/status", s.claimStatus)
		}
	})
	return r
}

// noStore marks responses as not to be cached: webhooks carry their
// signing secret.
func noStore(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// root sends a browser that opens the service's address (Accept names
// text/html) to the dashboard; an API client keeps the JSON 404.
func (s *server) root(w http.ResponseWriter, r *http.Request) {
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		s.notFound(w, r)
		return
	}
	http.Redirect(w, r, "/dashboard/", http.StatusSeeOther)
}

// authorizeForward sends /api-keys/authorize (at the root and under
// GreenfieldPath: a plugin builds it from the base URL it was given),
// where BTCPay's plugins send a merchant to authorize them (Greenfield's interactive key flow),
// to the dashboard's page of it, with the query: the dashboard's session
// is scoped to /dashboard.
func authorizeForward(w http.ResponseWriter, r *http.Request) {
	target := "/dashboard/api-keys/authorize"
	if r.URL.RawQuery != "" {
		target += "?" + r.URL.RawQuery
	}
	http.Redirect(w, r, target, http.StatusSeeOther)
}

// GreenfieldPath is where BTCPay's Greenfield API is served: a BTCPay
// plugin is given <public URL>/greenfield as its server URL
// (docs/decisions.md, "BTCPay's Greenfield API under its own base
// URL").
const GreenfieldPath = "/greenfield"

// greenfieldOnly answers a path that only BTCPay's Greenfield API has,
// asked at this API's root: 404, naming where Greenfield is served.
func (s *server) greenfieldOnly(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, kassa.Errorf(kassa.NotFound,
		"no route %s %s: this is Kassa's Coinsnap API; BTCPay's Greenfield API is served at %s%s (give BTCPay plugins that URL)",
		r.Method, r.URL.Path, s.publicURL, GreenfieldPath))
}

// notFound answers routes that do not exist.
func (s *server) notFound(w http.ResponseWriter, r *http.Request) {
	s.writeError(w, r, kassa.Errorf(kassa.NotFound, "no route %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed answers a route that exists for other methods, and
// lists them in the Allow header.
func (s *server) methodNotAllowed(w http.ResponseWriter, r *http.Request) {
	var allowed []string
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if s.router.Match(chi.NewRouteContext(), m, r.URL.Path) {
			allowed = append(allowed, m)
		}
	}
	if len(allowed) > 0 {
		w.Header().Set("Allow", strings.Join(allowed, ", "))
	}
	s.writeError(w, r, kassa.Errorf(kassa.MethodNotAllowed, "method %s is not allowed on %s", r.Method, r.URL.Path))
}

// now is the handler's clock reading.
func (s *server) now() time.Time { return s.Clock.Now() }

// pathID returns the path parameter name when it is a valid id, or a
// NotFound error that names what was looked for.
func pathID(r *http.Request, name, what string) (string, error) {
	id := chi.URLParam(r, name)
	if !kassa.ValidID(id) {
		return "", kassa.Errorf(kassa.NotFound, "%s not found", what)
	}
	return id, nil
}
