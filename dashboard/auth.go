package dashboard

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// Cookie names. The session cookie is scoped to the dashboard.
const (
	sessionCookie = "kassa_session"
	csrfCookie    = "kassa_csrf"
)

// loadSession puts the session of the request's cookie, if live, in the
// context.
func (h *Dashboard) loadSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		if c, err := r.Cookie(sessionCookie); err == nil {
			s, err := h.session(r.Context(), c.Value)
			if err != nil {
				h.serverError(w, r, err)
				return
			}
			if s != nil {
				r = r.WithContext(context.WithValue(r.Context(), sessionKey, s))
			}
		}
		next.ServeHTTP(w, r)
	})
}

// csrfToken is the token the request's forms carry: the session's once
// signed in, before that the one of a cookie set here.
func (h *Dashboard) csrfToken(w http.ResponseWriter, r *http.Request) string {
	if s := current(r.Context()); s != nil {
		return s.CSRF
	}
	if c, err := r.Cookie(csrfCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 100 {
		return c.Value
	}
	token := newToken()
	http.SetCookie(w, &http.Cookie{Name: csrfCookie, Value: token, Path: Prefix, HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteStrictMode})
	return token
}

// maxForm bounds a form's body.
const maxForm = 64 << 10

// checkCSRF refuses, with 403, every POST whose csrf field does not match
// the token of the session (or, before sign-in, of the CSRF cookie).
func (h *Dashboard) checkCSRF(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, maxForm)
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, http.StatusBadRequest, "err.form")
			return
		}
		var want string
		if s := current(r.Context()); s != nil {
			want = s.CSRF
		} else if c, err := r.Cookie(csrfCookie); err == nil {
			want = c.Value
		}
		got := r.PostForm.Get("csrf")
		if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
			h.fail(w, r, http.StatusForbidden, "err.csrf")
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Dashboard) setSessionCookie(w http.ResponseWriter, s *session) {
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: s.token, Path: Prefix, HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(sessionLifetime / time.Second)})
}

func (h *Dashboard) signupPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "signup", map[string]any{"Invite": r.URL.Query().Get("invite"), "Open": h.Signup == SignupOpen})
}

// signup makes an account and signs it in, with a session as login
// makes. An email that had an account already changes nothing and signs
// nobody in: the browser is sent to log in, after the same work (a
// password hash). An invitation is used up only by an account it made.
func (h *Dashboard) signup(w http.ResponseWriter, r *http.Request) {
	email, password, code := strings.TrimSpace(r.PostForm.Get("email")), r.PostForm.Get("password"), r.PostForm.Get("invite")
	data := map[string]any{"Invite": code, "Open": h.Signup == SignupOpen, "Email": email}
	if problem := checkAccount(requestLang(r), email, password); problem != "" {
		data["Error"] = problem
		h.render(w, r, http.StatusUnprocessableEntity, "signup", data)
		return
	}
	network, wide := h.clientNetworks(r)
	if wait := h.limits.take(limit{signupKey(network), maxSignupsAddress}, limit{signupWideKey(wide), maxSignupsWide}); wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		data["Error"] = tr(r, "err.ratelimit")
		h.render(w, r, http.StatusTooManyRequests, "signup", data)
		return
	}
	// With open sign-up an invitation is needed for nothing but a store
	// invitation's membership; one given is used all the same.
	if h.Signup != SignupOpen || code != "" {
		ok, err := h.inviteValid(r.Context(), code)
		if err != nil {
			h.serverError(w, r, err)
			return
		}
		if !ok {
			data["Error"] = tr(r, "err.invite")
			h.render(w, r, http.StatusForbidden, "signup", data)
			return
		}
	}
	acct := newAccount{email: email, password: password, firstIsAdmin: h.SignupOperator,
		gate: ticket{signup: true, network: network, wide: wide}}
	if h.Signup != SignupOpen || code != "" {
		acct.invite = code
	}
	u, err := h.createUser(kassa.WithClientAddr(r.Context(), kassahttp.ClientIP(r, h.ClientIPHeader)), acct)
	switch {
	case err == nil:
		h.startSession(w, r, u)
	case err == errUserExists:
		http.Redirect(w, r, Prefix+"/login?done=signup", http.StatusSeeOther)
	case err == errBusy:
		h.busy(w, r, "signup", data)
	case err == errBadInvite:
		data["Error"] = tr(r, "err.invite")
		h.render(w, r, http.StatusForbidden, "signup", data)
	case kassa.ErrorCode(err) == kassa.Invalid:
		data["Error"] = errorText(requestLang(r), err)
		h.render(w, r, http.StatusUnprocessableEntity, "signup", data)
	default:
		h.serverError(w, r, err)
	}
}

// busy answers 503 with Retry-After on page with data: every password
// hashing slot is taken.
func (h *Dashboard) busy(w http.ResponseWriter, r *http.Request, page string, data map[string]any) {
	w.Header().Set("Retry-After", busyRetry)
	data["Error"] = tr(r, "err.busy")
	h.render(w, r, http.StatusServiceUnavailable, page, data)
}

func (h *Dashboard) startSession(w http.ResponseWriter, r *http.Request, u *user) {
	s, err := h.newSession(r.Context(), u)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.setSessionCookie(w, s)
	http.Redirect(w, r, Prefix+"/stores", http.StatusSeeOther)
}

func (h *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	if current(r.Context()) != nil {
		http.Redirect(w, r, Prefix+"/stores", http.StatusSeeOther)
		return
	}
	h.render(w, r, http.StatusOK, "login", map[string]any{"Open": h.Signup == SignupOpen, "Passkey": h.passkeysOffered()})
}

// login signs a user in. With a device cookie of the account (see
// deviceCookie) the attempt is counted against the cookie and goes first
// to the hashing slots; else it is counted against the client's network,
// its wider prefix and the account from that network, and waits among
// strangers. Either count is taken before the password is hashed and
// given back if it succeeds; a stranger's attempt that finds no slot
// stays counted against its network. A success gives the browser a
// fresh device cookie.
func (h *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	email, password := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email"))), r.PostForm.Get("password")
	network, wide := h.clientNetworks(r)
	data := map[string]any{"Email": email, "Open": h.Signup == SignupOpen, "Passkey": h.passkeysOffered()}
	var u *user
	read := false // u is the account's record
	var counted []string
	t := ticket{network: network, wide: wide, account: email}
	if d, ok := h.deviceOf(r, email); ok {
		var err error
		if u, err = h.user(r.Context(), email); err != nil {
			h.serverError(w, r, err)
			return
		}
		read = true
		if u != nil && u.SessionGen == d.gen && h.limits.take(limit{d.failKey(), maxFailsDevice}) == 0 {
			counted = []string{d.failKey()}
			t = ticket{trusted: true, account: email}
		}
	}
	byAddress, byWide, byAccount := addressKey(network), wideKey(wide), accountKey(network, email)
	if !t.trusted {
		if wait := h.limits.take(limit{byAddress, maxFailsAddress}, limit{byWide, maxFailsWide}, limit{byAccount, maxFailsAccount}); wait > 0 {
			w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
			data["Error"] = tr(r, "err.ratelimit")
			h.render(w, r, http.StatusTooManyRequests, "login", data)
			return
		}
		counted = []string{byAddress, byWide, byAccount}
	}
	if !read {
		var err error
		if u, err = h.user(r.Context(), email); err != nil {
			h.limits.give(counted...)
			h.serverError(w, r, err)
			return
		}
	}
	hash := dummyHash()
	if u != nil {
		hash = u.PasswordHash
	}
	ok, err := h.check(r.Context(), t, hash, password)
	if err != nil {
		if t.trusted {
			h.limits.give(counted...)
		} else {
			h.limits.give(byAccount)
		}
		h.busy(w, r, "login", data)
		return
	}
	if !ok || u == nil || len(password) > maxPassword {
		data["Error"] = tr(r, "err.login")
		h.render(w, r, http.StatusUnauthorized, "login", data)
		return
	}
	if u.TwoFactor != nil {
		// The attempt did not fail, but the failures before it stand
		// until the second factor passes (twofactor.go).
		h.limits.give(counted...)
		h.startSecondFactor(w, r, u)
		return
	}
	if t.trusted {
		h.limits.forget(counted[0])
	} else {
		h.limits.give(byAddress, byWide)
		h.limits.forget(byAccount)
	}
	h.setDeviceCookie(w, r, u)
	h.startSession(w, r, u)
}

func (h *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	if s := current(r.Context()); s != nil {
		if err := h.endSession(r.Context(), s.token); err != nil {
			h.serverError(w, r, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: "", Path: Prefix, HttpOnly: true, Secure: h.secure,
		SameSite: http.SameSiteLaxMode, MaxAge: -1})
	http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
}

// clientIP is the address the login limits count, by the HTTP
// package's rule: the last line of ClientIPHeader behind a proxy (the
// one the proxy added), else the connection's; "?", one bucket for
// all, when it does not parse.
func (h *Dashboard) clientIP(r *http.Request) string {
	return kassahttp.ClientIP(r, h.ClientIPHeader)
}

// adminCreateUser makes an account for `kassa user create`: JSON
// {"email","password","admin"} with the admin token as bearer.
func (h *Dashboard) adminCreateUser(w http.ResponseWriter, r *http.Request) {
	if !h.adminRequest(w, r) {
		return
	}
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
		Admin    bool   `json:"admin"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxForm)).Decode(&in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"email\",\"password\",\"admin\"}")
		return
	}
	u, err := h.createUser(r.Context(), newAccount{email: strings.TrimSpace(in.Email), password: in.Password, admin: in.Admin, firstIsAdmin: true,
		gate: ticket{trusted: true, account: strings.ToLower(strings.TrimSpace(in.Email))}})
	if err != nil {
		h.writeAdminError(w, err, "create user", "could not create the account")
		return
	}
	w.WriteHeader(http.StatusCreated)
	json.NewEncoder(w).Encode(map[string]any{"email": u.Email, "admin": u.Admin})
}

// adminRequest checks the admin token of a request of the kassa command
// and answers 401 when it is not there.
func (h *Dashboard) adminRequest(w http.ResponseWriter, r *http.Request) bool {
	w.Header().Set("Content-Type", "application/json")
	scheme, token, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	if h.AdminToken == "" || !strings.EqualFold(scheme, "Bearer") ||
		subtle.ConstantTimeCompare([]byte(strings.TrimSpace(token)), []byte(h.AdminToken)) != 1 {
		writeJSONError(w, http.StatusUnauthorized, "needs Authorization: Bearer <admin token>")
		return false
	}
	return true
}

// adminSetPassword sets an account's password for `kassa user
// password`: JSON {"email","password"} with the admin token as bearer.
// Every session of the account ends.
func (h *Dashboard) adminSetPassword(w http.ResponseWriter, r *http.Request) {
	if !h.adminRequest(w, r) {
		return
	}
	var in struct {
		Email    string `json:"email"`
		Password string `json:"password"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxForm)).Decode(&in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"email\",\"password\"}")
		return
	}
	email := strings.TrimSpace(in.Email)
	err := h.setPassword(r.Context(), email, in.Password, nil, nil)
	if err != nil {
		h.writeAdminError(w, err, "set password", "could not set the password")
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"email": strings.ToLower(email), "sessionsEnded": true})
}

// writeAdminError answers a failed account command of the kassa
// command: busy hashing is 503 with Retry-After, an invalid, conflicting
// or unknown account says so (422, 409, 404), and anything else is
// logged and answered 500 with failure, not the error's text.
func (h *Dashboard) writeAdminError(w http.ResponseWriter, err error, what, failure string) {
	switch kassa.ErrorCode(err) {
	case kassa.Unavailable:
		if err == errBusy {
			w.Header().Set("Retry-After", busyRetry)
			writeJSONError(w, http.StatusServiceUnavailable, kassa.ErrorMessage(err))
			return
		}
	case kassa.Invalid:
		writeJSONError(w, http.StatusUnprocessableEntity, kassa.ErrorMessage(err))
		return
	case kassa.Conflict:
		writeJSONError(w, http.StatusConflict, kassa.ErrorMessage(err))
		return
	case kassa.NotFound:
		writeJSONError(w, http.StatusNotFound, kassa.ErrorMessage(err))
		return
	}
	h.log.Error("dashboard: "+what, "err", err)
	writeJSONError(w, http.StatusInternalServerError, failure)
}

func writeJSONError(w http.ResponseWriter, status int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"message": message})
}
