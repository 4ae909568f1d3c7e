package dashboard

import (
	"context"
	"embed"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
	"github.com/kassapay/kassa/topup"
)

// StoreSettingsService changes an existing store's settings and API
// keys (the dashboard uses it; every change goes through the store's
// actor like any other).
type StoreSettingsService interface {
	UpdateStore(ctx context.Context, storeID string, u kassa.StoreUpdate, only ...kassa.StoreField) (*kassa.Store, error)
	// CreateAPIKey adds a key with label to the store, holding perms
	// (none: kassa.DefaultKeyPermissions).
	CreateAPIKey(ctx context.Context, storeID, label string, perms ...kassa.Permission) (*kassa.APIKey, error)
	// DeleteAPIKey removes a key: requests with it fail from then on.
	DeleteAPIKey(ctx context.Context, storeID, keyID string) error
	// RevealAPIKey returns a key in full and records in the store's
	// history that the account by was shown it.
	RevealAPIKey(ctx context.Context, storeID, keyID, by string) (*kassa.APIKey, error)
	// ChangeMembers changes the store's team (kassa.MemberChange),
	// with its line in the store's history, and returns the store.
	ChangeMembers(ctx context.Context, storeID string, ch kassa.MemberChange) (*kassa.Store, error)
}

// Services are the write paths the dashboard uses: the same ones the API
// uses (in cmd/kassa, the actor system).
type Services interface {
	kassa.StoreService
	StoreSettingsService
	kassa.InvoiceService
	kassa.PaymentRequestService
	kassa.WebhookService
}

// TopUps create and list the top-ups of stores' prepaid balances: the
// money rule is package topup's (a *topup.Ledger); the dashboard asks.
type TopUps interface {
	// Create makes a top-up of amount for the store; an amount out of
	// range is topup.ErrAmount.
	Create(ctx context.Context, storeID string, amount kassa.Sats) (*kassa.Invoice, error)
	// List credits the store's paid top-ups not credited yet and
	// returns its top-ups, newest first.
	List(ctx context.Context, storeID string) ([]*topup.TopUp, error)
	// Get returns the top-up of the invoice, and whether it is one.
	Get(ctx context.Context, invoiceID string) (*topup.TopUp, bool, error)
	// OperatorStoreIDs returns the ids of the store top-ups are paid to.
	OperatorStoreIDs(ctx context.Context) ([]string, error)
}

// Signup modes.
const (
	// SignupOpen lets anyone create an account.
	SignupOpen = "open"
	// SignupInvite needs an invitation an operator made.
	SignupInvite = "invite"
)

// Deps are what the dashboard consumes.
type Deps struct {
	Reader   kassa.Reader
	Services Services
	// KV keeps users, sessions and invitations.
	KV        kassa.KeyValue
	TopUps    TopUps
	Simulator kassa.Simulator // nil unless simulated under --dev
	// Simulated says the chain or Lightning backend is simulated: every
	// page shows the simulation banner, with or without Simulator.
	Simulated bool
	Clock     kassa.Clock
	Logger    *slog.Logger
	// PublicURL is the service's base URL; an https URL makes the session
	// cookie Secure.
	PublicURL string
	// AdminToken authenticates `kassa user create` (POST /dashboard/admin/users).
	AdminToken string
	// Signup is SignupOpen or SignupInvite (the default). Operators are
	// made with `kassa user create --admin`, and invite others.
	Signup string
	// SignupOperator makes the first account made by sign-up, when no
	// account exists yet, an operator (kassa serve --dev, with open
	// sign-up): without it, a stranger who signs up first would see
	// every store.
	SignupOperator bool
	// PercentFee is the service fee of stores created in the dashboard.
	PercentFee decimal.Decimal
	// ClientIPHeader names the header whose last address is the client's
	// (behind a reverse proxy), for the login rate limit.
	ClientIPHeader string
	// Dev is kassa serve --dev: the device cookie is not Secure, so that
	// it works over plain http.
	Dev bool
	// Operator, when set, is mounted at /dashboard/operator for operators.
	Operator http.Handler
	// Currencies are the fiat currencies the forms offer (the rates
	// backend's Currencies); nil offers EUR, USD, CAD, JPY, GBP and CHF.
	Currencies []kassa.Currency
	// Limits bound each account's stores, writes and searches; zero
	// fields take DefaultLimits.
	Limits Limits
	// Refunds and Payouts serve an invoice's Refund form and the
	// Payouts page (refunds.go); nil: neither is offered.
	Refunds kassa.RefundService
	Payouts kassa.PayoutStore
	// History reads stores' histories for the History page; nil: the
	// Reader's, when it reads them.
	History kassa.HistoryReader
}

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Dashboard is the dashboard's HTTP handler.
type Dashboard struct {
	Deps
	log     *slog.Logger
	secure  bool
	pages   map[string]map[string]*template.Template // language, page
	router  *chi.Mux
	limits  *attemptLimiter
	gate    *hashGate
	devKeys deviceKeys
	// writes and searches limit each account (Limits); storeRes holds
	// the stores being created.
	writes, searches *rateLimiter
	storeRes         storeReservations
	usersMu          sync.Mutex // serialises changes to user records
	// invitesMu serialises changes to the list of invitations.
	invitesMu sync.Mutex
}

// New returns the dashboard, to be mounted at /dashboard.
func New(d Deps) *Dashboard {
	if d.Clock == nil {
		d.Clock = kassa.SystemClock{}
	}
	if d.Signup == "" {
		d.Signup = SignupInvite
	}
	h := &Dashboard{Deps: d, log: d.Logger, secure: strings.HasPrefix(d.PublicURL, "https://")}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	h.Limits = d.Limits.withDefaults()
	h.writes = newRateLimiter(d.Clock, h.Limits.WritesPerMinute, h.Limits.WriteBurst)
	h.searches = newRateLimiter(d.Clock, h.Limits.SearchesPerMinute, h.Limits.SearchBurst)
	h.limits = newAttemptLimiter(d.Clock)
	h.gate = newHashGate(defaultHashSlots(), d.Clock)
	h.pages = parsePages(d.Currencies)
	h.router = h.routes()
	return h
}

func (h *Dashboard) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.router.ServeHTTP(w, r) }

// Prefix is where the dashboard is mounted.
const Prefix = "/dashboard"

func (h *Dashboard) routes() *chi.Mux {
	r := chi.NewRouter()
	r.Use(securityHeaders)
	static, _ := fs.Sub(staticFS, "static")
	r.Handle("/static/*", http.StripPrefix(Prefix+"/static/", cacheStatic(http.FileServerFS(static))))
	r.Post("/admin/users", h.adminCreateUser)
	r.Post("/admin/users/password", h.adminSetPassword)
	r.Post("/admin/users/reset-2fa", h.adminResetTwoFactor)

	r.Group(func(r chi.Router) {
		r.Use(h.loadSession, h.checkCSRF)
		r.NotFound(h.notFound)
		r.Get("/", h.home)
		r.Get("/signup", h.signupPage)
		r.Post("/signup", h.signup)
		r.Get("/login", h.loginPage)
		r.Post("/login", h.login)
		r.Get("/login/2fa", h.secondStepPage)
		r.Post("/login/2fa", h.secondStep)
		r.Post("/login/2fa/passkey/begin", h.beginPasskeySignIn)
		r.Post("/login/2fa/passkey/finish", h.finishPasskeySignIn)
		r.Post("/login/passkey/begin", h.beginPasskeyAlone)
		r.Post("/login/passkey/finish", h.finishPasskeyAlone)
		r.Post("/logout", h.logout)
		r.Get("/join", h.joinPage)

		r.Group(func(r chi.Router) {
			r.Use(h.requireUser)
			r.Get("/stores", h.listStores)
			r.Get("/stores/new", h.newStorePage)
			r.With(h.limitWrites).Post("/stores", h.createStore)
			r.Get("/api-keys/authorize", h.authorizePage)
			r.With(h.limitWrites).Post("/api-keys/authorize", h.authorize)
			r.Get("/account", h.accountPage)
			r.With(h.limitWrites).Post("/account/password", h.changePassword)
			r.Get("/account/2fa", h.twoFactorPage)
			r.With(h.limitWrites).Post("/account/2fa/start", h.startEnrolment)
			r.With(h.limitWrites).Post("/account/2fa/confirm", h.confirmEnrolment)
			r.With(h.limitWrites).Post("/account/2fa/recovery", h.newRecovery)
			r.With(h.limitWrites).Post("/account/2fa/disable", h.disableTwoFactor)
			r.With(h.limitWrites).Post("/account/2fa/passkey/begin", h.beginPasskey)
			r.With(h.limitWrites).Post("/account/2fa/passkey/finish", h.finishPasskey)
			r.With(h.limitWrites).Post("/account/2fa/passkey/enrol", h.enrolPasskey)
			r.With(h.limitWrites).Post("/account/2fa/passkey/remove", h.removePasskey)
			r.With(h.limitWrites).Post("/join", h.join)
			r.Get("/invites", h.invitesPage)
			r.With(h.limitWrites).Post("/invites", h.createInvite)
			r.With(h.limitWrites).Post("/invites/{inviteId}/revoke", h.revokeInvitePost)
			if h.Operator != nil {
				r.With(h.requireAdmin, operatorCSP, h.limitWrites).Mount("/operator", http.StripPrefix(Prefix+"/operator", h.Operator))
			}
			r.Route("/stores/{storeId}", func(r chi.Router) {
				// Writes are counted once the store is the account's and
				// the route's permission its role's: a refused one is a
				// 404 as for any other store, or a 403.
				r.Use(h.storeAccess, h.requireTwoFactor, h.requirePermission(r), h.limitWrites)
				h.memberRoutes(r)
				r.Get("/", h.storeSettings)
				r.Get("/overview", h.overviewPage)
				r.Post("/settings", h.updateSettings)
				r.Get("/twofactor", h.storeTwoFactorPage)
				r.Post("/twofactor", h.setStoreTwoFactor)

				r.Get("/keys", h.keysPage)
				r.Post("/keys", h.createKey)
				r.Post("/keys/{keyId}/delete", h.deleteKey)
				r.Post("/keys/{keyId}/reveal", h.revealKey)

				r.Get("/webhooks", h.webhooksPage)
				r.Post("/webhooks", h.createWebhook)
				r.Get("/webhooks/{webhookId}", h.webhookPage)
				r.Post("/webhooks/{webhookId}", h.updateWebhook)
				r.Post("/webhooks/{webhookId}/toggle", h.toggleWebhook)
				r.Post("/webhooks/{webhookId}/delete", h.deleteWebhook)
				r.Post("/webhooks/{webhookId}/deliveries/{deliveryId}/redeliver", h.redeliver)

				r.Get("/invoices", h.invoicesPage)
				r.Get("/invoices/new", h.newInvoicePage)
				r.Post("/invoices", h.createInvoice)
				r.Get("/invoices/{invoiceId}", h.invoicePage)
				r.Post("/invoices/{invoiceId}/invalid", h.markInvalid)

				r.Get("/paylinks", h.payLinksPage)
				r.Post("/paylinks", h.createPayLink)
				r.Get("/paylinks/{payLinkId}", h.payLinkPage)
				r.Post("/paylinks/{payLinkId}", h.updatePayLink)
				r.Post("/paylinks/{payLinkId}/archive", h.archivePayLink)

				r.Get("/transactions", h.transactionsPage)
				r.Get("/transactions.csv", h.exportCSV)

				r.Get("/balance", h.balancePage)
				r.Post("/balance/topup", h.createTopUp)
				r.Post("/balance/topup/{invoiceId}/simpay", h.simPayTopUp)

				h.refundRoutes(r)
				h.historyRoutes(r)
			})
		})
	})
	return r
}

// csp allows the dashboard's own style sheet, script and images only;
// no inline script or style, no frames, forms only to itself.
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
	"form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// operatorCSP is the policy of the operator page (package operator),
// which carries its style inline: no script at all, inline style only.
func operatorCSP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src 'self'; "+
			"form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		next.ServeHTTP(w, r)
	})
}

func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", csp)
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Referrer-Policy", "same-origin")
		next.ServeHTTP(w, r)
	})
}

func cacheStatic(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=3600")
		next.ServeHTTP(w, r)
	})
}

type ctxKey int

const (
	sessionKey ctxKey = iota
	storeKey
)

// current is the signed-in user's session, or nil.
func current(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey).(*session)
	return s
}

// currentStore is the store of a /stores/{storeId} route, checked by
// storeAccess.
func currentStore(ctx context.Context) *kassa.Store {
	s, _ := ctx.Value(storeKey).(*kassa.Store)
	return s
}

// requireUser sends visitors who are not signed in to the login page.
func (h *Dashboard) requireUser(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if current(r.Context()) == nil {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			h.fail(w, r, http.StatusUnauthorized, "err.signin")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Dashboard) requireAdmin(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !current(r.Context()).user.Admin {
			h.notFound(w, r)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// storeAccess admits a user to the stores they belong to, with their
// role's permissions as the request's principal, and an operator to
// every store as Owner. A store the user may not see answers 404 as if
// it did not exist.
func (h *Dashboard) storeAccess(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := chi.URLParam(r, "storeId")
		u := current(r.Context()).user
		if !kassa.ValidID(id) {
			h.notFound(w, r)
			return
		}
		st, p, err := h.storeMember(r.Context(), u, id)
		if kassa.ErrorCode(err) == kassa.NotFound || err == nil && p == nil {
			h.notFound(w, r)
			return
		}
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		ctx := kassa.WithPrincipal(context.WithValue(r.Context(), storeKey, st), p)
		ctx = kassa.WithClientAddr(ctx, kassahttp.ClientIP(r, h.ClientIPHeader))
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// storeMember reads store id with its team and returns who u is there:
// nil when u is not a member. The store's team is the truth: u's record
// is repaired when it disagrees; a store that does not hold its team yet
// imports it when a member by its record opens it.
func (h *Dashboard) storeMember(ctx context.Context, u *user, id string) (*kassa.Store, *kassa.Principal, error) {
	p, indexed := memberPrincipal(u, id)
	st, err := h.Reader.Store(ctx, id)
	if err != nil || !st.MembersKept && !indexed {
		return st, nil, err
	}
	if !st.MembersKept {
		if err := h.ensureIndexed(ctx, u, id); err != nil {
			return nil, nil, err
		}
		if st, err = h.team(ctx, st); err != nil {
			return nil, nil, err
		}
	}
	role, member := st.MemberRole(u.Email)
	if was, had := u.role(id); member != had || member && was != role {
		h.usersMu.Lock()
		err := h.reindex(ctx, st, u.Email)
		h.usersMu.Unlock()
		if err != nil {
			return nil, nil, err
		}
		if member {
			u.join(id, role)
		} else {
			u.leave(id)
		}
	}
	switch {
	case u.Admin:
		return st, p, nil
	case member:
		return st, kassa.MemberPrincipal(u.Email, map[string]kassa.Role{id: role}), nil
	}
	return st, nil, nil
}

func (h *Dashboard) home(w http.ResponseWriter, r *http.Request) {
	if current(r.Context()) == nil {
		http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/stores", http.StatusSeeOther)
}
