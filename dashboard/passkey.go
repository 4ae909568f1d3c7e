package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Passkeys (WebAuthn) as a second factor, beside the TOTP code: an
// account with two factors registers passkeys on its account page, and
// a pending sign-in (twofactor.go) may end with one instead of a code.
// The relying party is PublicURL's host name; a relying party cannot be
// an IP address, so without a host name there are no passkeys. Each
// ceremony's challenge is kept in a record that its finish uses up.

// maxPasskeys bounds an account's passkeys, and so its record.
const maxPasskeys = 10

func passkeyRegKey(email string) string    { return "dash/2fa-wa-reg/" + strings.ToLower(email) }
func passkeyLoginKey(token string) string  { return "dash/2fa-wa-login/" + hashHex(token) }
func (h *Dashboard) passkeysOffered() bool { return h.relyingParty() != nil }

// relyingParty is the WebAuthn relying party of PublicURL, or nil when
// its host is an IP address or missing.
func (h *Dashboard) relyingParty() *webauthn.WebAuthn {
	u, err := url.Parse(h.PublicURL)
	if err != nil || u.Hostname() == "" || net.ParseIP(u.Hostname()) != nil {
		return nil
	}
	wa, err := webauthn.New(&webauthn.Config{RPID: u.Hostname(), RPDisplayName: "Kassa", RPOrigins: []string{u.Scheme + "://" + u.Host}})
	if err != nil {
		h.log.Warn("dashboard: passkeys", "err", err)
		return nil
	}
	return wa
}

// passkeyUser is an account as WebAuthn sees it.
type passkeyUser struct{ u *user }

func (p passkeyUser) WebAuthnID() []byte          { return p.u.TwoFactor.Handle }
func (p passkeyUser) WebAuthnName() string        { return p.u.Email }
func (p passkeyUser) WebAuthnDisplayName() string { return p.u.Email }
func (p passkeyUser) WebAuthnCredentials() []webauthn.Credential {
	return p.u.TwoFactor.Passkeys
}

// passkeyError answers a passkey request that failed with status and a
// message for the page's script.
func passkeyError(w http.ResponseWriter, r *http.Request, status int, key string) {
	writeJSONError(w, status, tr(r, key))
}

// writeCeremony stores session under key until expires and answers the
// options for the browser.
func (h *Dashboard) writeCeremony(w http.ResponseWriter, r *http.Request, key string, session *webauthn.SessionData, expires time.Time, options any) {
	if err := h.putJSON(r.Context(), key, session, expires); err != nil {
		h.log.Error("dashboard: passkey ceremony", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(options)
}

// takeCeremony reads and uses up the ceremony of key.
func (h *Dashboard) takeCeremony(ctx context.Context, key string) (*webauthn.SessionData, error) {
	var s webauthn.SessionData
	ok, err := h.getJSON(ctx, key, &s)
	if err != nil || !ok || len(s.Challenge) == 0 {
		return nil, err
	}
	return &s, h.KV.PutValue(ctx, key, []byte("{}"), h.Clock.Now().Add(-time.Second))
}

// beginPasskey starts registering a passkey for the signed-in account,
// which must have two factors.
func (h *Dashboard) beginPasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	wa := h.relyingParty()
	switch {
	case wa == nil:
		passkeyError(w, r, http.StatusConflict, "passkey.nohost")
		return
	case s.user.TwoFactor == nil:
		passkeyError(w, r, http.StatusConflict, "passkey.needtotp")
		return
	case len(s.user.TwoFactor.Passkeys) >= maxPasskeys:
		passkeyError(w, r, http.StatusConflict, "passkey.toomany")
		return
	}
	u := s.user
	if len(u.TwoFactor.Handle) == 0 {
		handle := make([]byte, 32)
		rand.Read(handle)
		var err error
		if u, err = h.changeTwoFactor(r.Context(), s.Email, func(tf *twoFactor) {
			if len(tf.Handle) == 0 {
				tf.Handle = handle
			}
		}); err != nil || u == nil {
			passkeyError(w, r, http.StatusConflict, "passkey.needtotp")
			return
		}
	}
	var exclude []protocol.CredentialDescriptor
	for _, c := range u.TwoFactor.Passkeys {
		exclude = append(exclude, c.Descriptor())
	}
	creation, session, err := wa.BeginRegistration(passkeyUser{u}, webauthn.WithExclusions(exclude),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementDiscouraged))
	if err != nil {
		h.log.Error("dashboard: begin passkey registration", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	h.writeCeremony(w, r, passkeyRegKey(s.Email), session, h.Clock.Now().Add(pendingLifetime), creation)
}

// finishPasskey stores the passkey the browser made, when it answers the
// ceremony begun for this account on this site.
func (h *Dashboard) finishPasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	wa := h.relyingParty()
	if wa == nil || s.user.TwoFactor == nil {
		passkeyError(w, r, http.StatusConflict, "passkey.needtotp")
		return
	}
	session, err := h.takeCeremony(r.Context(), passkeyRegKey(s.Email))
	if err != nil {
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if session == nil {
		passkeyError(w, r, http.StatusUnprocessableEntity, "passkey.expired")
		return
	}
	parsed, err := protocol.ParseCredentialCreationResponseBody(strings.NewReader(r.PostForm.Get("credential")))
	if err != nil {
		passkeyError(w, r, http.StatusUnprocessableEntity, "passkey.refused")
		return
	}
	cred, err := wa.CreateCredential(passkeyUser{s.user}, *session, parsed)
	if err != nil {
		h.log.Info("dashboard: passkey registration refused", "err", err)
		passkeyError(w, r, http.StatusUnprocessableEntity, "passkey.refused")
		return
	}
	u, err := h.changeTwoFactor(r.Context(), s.Email, func(tf *twoFactor) {
		if len(tf.Passkeys) < maxPasskeys && !slices.ContainsFunc(tf.Passkeys, func(c webauthn.Credential) bool { return bytes.Equal(c.ID, cred.ID) }) {
			tf.Passkeys = append(tf.Passkeys, *cred)
		}
	})
	if err != nil || u == nil {
		passkeyError(w, r, http.StatusConflict, "passkey.needtotp")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"redirect": Prefix + "/account/2fa?done=passkey"})
}

// changeTwoFactor applies change to email's second factor under
// usersMu and stores the account; nil when it has none.
func (h *Dashboard) changeTwoFactor(ctx context.Context, email string, change func(*twoFactor)) (*user, error) {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.user(ctx, email)
	if err != nil || u == nil || u.TwoFactor == nil {
		return nil, err
	}
	change(u.TwoFactor)
	return u, h.putJSON(ctx, userKey(u.Email), u, forever)
}

// beginPasskeySignIn starts a pending sign-in's passkey ceremony.
func (h *Dashboard) beginPasskeySignIn(w http.ResponseWriter, r *http.Request) {
	p, token, err := h.pendingOf(r)
	if err != nil || p == nil {
		passkeyError(w, r, http.StatusUnauthorized, "err.2fa.expired")
		return
	}
	wa := h.relyingParty()
	u, err := h.user(r.Context(), p.Email)
	if wa == nil || err != nil || u == nil || u.TwoFactor == nil || len(u.TwoFactor.Passkeys) == 0 {
		passkeyError(w, r, http.StatusConflict, "passkey.none")
		return
	}
	assertion, session, err := wa.BeginLogin(passkeyUser{u})
	if err != nil {
		h.log.Error("dashboard: begin passkey sign-in", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	h.writeCeremony(w, r, passkeyLoginKey(token), session, p.Expires, assertion)
}

// finishPasskeySignIn completes a pending sign-in with a passkey. The
// attempt is counted as a code is (signInCounts).
func (h *Dashboard) finishPasskeySignIn(w http.ResponseWriter, r *http.Request) {
	p, token, err := h.pendingOf(r)
	if err != nil || p == nil {
		passkeyError(w, r, http.StatusUnauthorized, "err.2fa.expired")
		return
	}
	counted, trusted, wait, err := h.signInCounts(r, p.Email)
	if err != nil {
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		passkeyError(w, r, http.StatusTooManyRequests, "err.ratelimit")
		return
	}
	u, ok, err := h.usePasskey(r, p, token)
	if err != nil {
		h.limits.give(counted...)
		h.log.Error("dashboard: passkey sign-in", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if !ok {
		passkeyError(w, r, http.StatusUnauthorized, "passkey.refused")
		return
	}
	if trusted {
		h.limits.forget(counted[0])
	} else {
		h.limits.give(counted[0], counted[1])
		h.limits.forget(counted[2])
	}
	if !h.endPending(w, r, token) {
		return
	}
	h.setDeviceCookie(w, r, u)
	sess, err := h.newSession(r.Context(), u)
	if err != nil {
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	h.setSessionCookie(w, sess)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"redirect": Prefix + "/stores"})
}

// usePasskey checks the passkey answer of r against the ceremony of the
// pending sign-in and, when it passes, stores the passkey's new
// counter. A passkey whose counter went back (a cloned authenticator)
// is refused.
func (h *Dashboard) usePasskey(r *http.Request, p *pendingSignIn, token string) (*user, bool, error) {
	wa := h.relyingParty()
	if wa == nil {
		return nil, false, nil
	}
	session, err := h.takeCeremony(r.Context(), passkeyLoginKey(token))
	if err != nil || session == nil {
		return nil, false, err
	}
	parsed, err := protocol.ParseCredentialRequestResponseBody(strings.NewReader(r.PostForm.Get("credential")))
	if err != nil {
		return nil, false, nil
	}
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.user(r.Context(), p.Email)
	if err != nil || u == nil || u.TwoFactor == nil || u.SessionGen != p.Gen {
		return nil, false, err
	}
	cred, err := wa.ValidateLogin(passkeyUser{u}, *session, parsed)
	if err != nil {
		h.log.Info("dashboard: passkey refused", "err", err)
		return nil, false, nil
	}
	if cred.Authenticator.CloneWarning {
		return nil, false, nil
	}
	for i := range u.TwoFactor.Passkeys {
		if bytes.Equal(u.TwoFactor.Passkeys[i].ID, cred.ID) {
			u.TwoFactor.Passkeys[i] = *cred
		}
	}
	return u, true, h.putJSON(r.Context(), userKey(u.Email), u, forever)
}
