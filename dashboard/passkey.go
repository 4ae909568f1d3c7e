package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/protocol"
	"github.com/go-webauthn/webauthn/webauthn"
)

// Passkeys (WebAuthn): an account registers passkeys on its account
// page, as discoverable credentials; the first second factor may be a
// passkey as well as an app (TOTP), and an account whose passkeys are
// its only second factor has no TOTP secret (twoFactor.Secret empty).
// The authenticator keeps the account's user handle. A passkey then signs in two ways:
// after the password, instead of the code (a pending sign-in,
// twofactor.go); or alone, from the login page, without an email: the
// user handle it answers names the account (passkeyOwnerKey), and the
// user verification it must show (a PIN, a fingerprint) beside the
// possession of the key makes it two factors. The relying party is
// PublicURL's host name; a relying party cannot be an IP address, so
// without a host name there are no passkeys. Each ceremony's challenge
// is kept in a record that its finish uses up.

// maxPasskeys bounds an account's passkeys, and so its record.
const maxPasskeys = 10

func passkeyRegKey(email string) string    { return "dash/2fa-wa-reg/" + strings.ToLower(email) }
func passkeyLoginKey(token string) string  { return "dash/2fa-wa-login/" + hashHex(token) }
func passkeyAloneKey(token string) string  { return "dash/wa-signin/" + hashHex(token) }
func passkeyOwnerKey(handle []byte) string { return "dash/wa-owner/" + hex.EncodeToString(handle) }
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

// beginPasskey starts registering a passkey for the signed-in account:
// one more, or its first second factor (enrolPasskey). The account's
// user handle, or a new one, is kept in the ceremony alone until its
// finish: a registration begun and not finished changes nothing.
func (h *Dashboard) beginPasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	wa := h.relyingParty()
	tf := s.user.TwoFactor
	switch {
	case wa == nil:
		passkeyError(w, r, http.StatusConflict, "passkey.nohost")
		return
	case tf != nil && len(tf.Passkeys) >= maxPasskeys:
		passkeyError(w, r, http.StatusConflict, "passkey.toomany")
		return
	}
	handle := make([]byte, 32)
	rand.Read(handle)
	var exclude []protocol.CredentialDescriptor
	if tf != nil {
		if len(tf.Handle) > 0 {
			handle = tf.Handle
		}
		for _, c := range tf.Passkeys {
			exclude = append(exclude, c.Descriptor())
		}
	}
	u := *s.user
	u.TwoFactor = &twoFactor{Handle: handle}
	creation, session, err := wa.BeginRegistration(passkeyUser{&u}, webauthn.WithExclusions(exclude),
		webauthn.WithResidentKeyRequirement(protocol.ResidentKeyRequirementRequired))
	if err != nil {
		h.log.Error("dashboard: begin passkey registration", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	h.writeCeremony(w, r, passkeyRegKey(s.Email), session, h.Clock.Now().Add(pendingLifetime), creation)
}

// newPasskey checks the passkey the browser made against the ceremony
// begun for this account on this site (using it up) and, when it
// passes, records its user handle's owner. It returns the passkey and
// the handle, or the status and message key of the refusal.
func (h *Dashboard) newPasskey(r *http.Request) (*webauthn.Credential, []byte, int, string) {
	s := current(r.Context())
	wa := h.relyingParty()
	if wa == nil {
		return nil, nil, http.StatusConflict, "passkey.nohost"
	}
	session, err := h.takeCeremony(r.Context(), passkeyRegKey(s.Email))
	if err != nil {
		h.log.Error("dashboard: passkey ceremony", "err", err)
		return nil, nil, http.StatusInternalServerError, "err.internal"
	}
	if session == nil || len(session.UserID) == 0 || len(session.UserID) > 64 {
		return nil, nil, http.StatusUnprocessableEntity, "passkey.expired"
	}
	parsed, err := protocol.ParseCredentialCreationResponseBody(strings.NewReader(r.PostForm.Get("credential")))
	if err != nil {
		return nil, nil, http.StatusUnprocessableEntity, "passkey.refused"
	}
	u := *s.user
	u.TwoFactor = &twoFactor{Handle: session.UserID}
	cred, err := wa.CreateCredential(passkeyUser{&u}, *session, parsed)
	if err != nil {
		h.log.Info("dashboard: passkey registration refused", "err", err)
		return nil, nil, http.StatusUnprocessableEntity, "passkey.refused"
	}
	// The handle names the account to a passkey sign-in without an
	// email; a record of a handle the account never takes names no
	// passkey of it (checkPasskey compares the account's handle).
	if err := h.putJSON(r.Context(), passkeyOwnerKey(session.UserID), s.user.Email, forever); err != nil {
		h.log.Error("dashboard: passkey owner", "err", err)
		return nil, nil, http.StatusInternalServerError, "err.internal"
	}
	return cred, session.UserID, 0, ""
}

// addPasskey adds cred, of handle, to tf, unless the account took
// another handle meanwhile or has its most passkeys.
func addPasskey(tf *twoFactor, handle []byte, cred *webauthn.Credential) bool {
	if len(tf.Handle) == 0 {
		tf.Handle = handle
	}
	if !bytes.Equal(tf.Handle, handle) || len(tf.Passkeys) >= maxPasskeys {
		return false
	}
	if !slices.ContainsFunc(tf.Passkeys, func(c webauthn.Credential) bool { return bytes.Equal(c.ID, cred.ID) }) {
		tf.Passkeys = append(tf.Passkeys, *cred)
	}
	return true
}

// finishPasskey stores one more passkey of an account with two factors,
// when it answers the ceremony begun for this account on this site.
func (h *Dashboard) finishPasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	if s.user.TwoFactor == nil {
		passkeyError(w, r, http.StatusConflict, "passkey.needenrol")
		return
	}
	cred, handle, status, key := h.newPasskey(r)
	if cred == nil {
		passkeyError(w, r, status, key)
		return
	}
	added := false
	u, err := h.changeTwoFactor(r.Context(), s.Email, func(tf *twoFactor) { added = addPasskey(tf, handle, cred) })
	if err != nil {
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if u == nil || !added {
		passkeyError(w, r, http.StatusConflict, "passkey.expired")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]string{"redirect": Prefix + "/account/2fa?done=passkey"})
}

// enrolPasskey turns two factors on for an account without them, with
// the passkey the browser made (posted as a form, not by script, so
// that the recovery codes are shown once on the page it answers and
// kept nowhere but hashed). As confirmEnrolment does, it ends the
// account's other sessions, which began without a second factor.
func (h *Dashboard) enrolPasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	refuse := func(status int, key string) {
		data := h.twoFactorData(s.user)
		data["Error"] = tr(r, key)
		h.render(w, r, status, "twofactor", data)
	}
	if s.user.TwoFactor != nil {
		refuse(http.StatusConflict, "err.2fa.on")
		return
	}
	cred, handle, status, key := h.newPasskey(r)
	if cred == nil {
		refuse(status, key)
		return
	}
	shown, hashes := newRecoveryCodes()
	h.usersMu.Lock()
	u, err := h.existingUser(r.Context(), s.Email, "account not found")
	if err == nil && u.TwoFactor != nil {
		err = errNoEnrolment
	}
	if err == nil {
		u.TwoFactor = &twoFactor{Handle: handle, Passkeys: []webauthn.Credential{*cred}, Recovery: hashes, Since: h.Clock.Now().UTC()}
		err = h.endOtherSessions(r.Context(), u, s)
	}
	h.usersMu.Unlock()
	if err == errNoEnrolment {
		refuse(http.StatusConflict, "err.2fa.on")
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data := h.twoFactorData(u)
	data["Codes"], data["Flash"] = shown, tr(r, "done.2faon")
	h.render(w, r, http.StatusOK, "twofactor", data)
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
	if !h.passkeyOutcome(w, r, ok, err, counted, trusted) {
		return
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
// pending sign-in.
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
	return h.checkPasskey(r.Context(), wa, session, parsed, p.Email, p.Gen)
}

// checkPasskey checks a passkey answer against email's passkeys and the
// ceremony of session (one begun for the account, or a discoverable
// one, whose answer must name the account's user handle) and, when it
// passes, stores the passkey's new counter, under usersMu. gen, when not
// negative, is the SessionGen the account must still have. A passkey
// whose counter went back (a cloned authenticator) is refused.
func (h *Dashboard) checkPasskey(ctx context.Context, wa *webauthn.WebAuthn, session *webauthn.SessionData, parsed *protocol.ParsedCredentialAssertionData, email string, gen int) (*user, bool, error) {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.user(ctx, email)
	if err != nil || u == nil || u.TwoFactor == nil || gen >= 0 && u.SessionGen != gen {
		return nil, false, err
	}
	var cred *webauthn.Credential
	if len(session.UserID) == 0 {
		cred, err = wa.ValidateDiscoverableLogin(func(_, handle []byte) (webauthn.User, error) {
			if len(u.TwoFactor.Handle) == 0 || !bytes.Equal(handle, u.TwoFactor.Handle) {
				return nil, errNotOwner
			}
			return passkeyUser{u}, nil
		}, *session, parsed)
	} else {
		cred, err = wa.ValidateLogin(passkeyUser{u}, *session, parsed)
	}
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
	return u, true, h.putJSON(ctx, userKey(u.Email), u, forever)
}

var errNotOwner = errors.New("the passkey's user handle is not the account's")

// passkeyCookie names the ceremony of a sign-in with a passkey alone.
const passkeyCookie = "kassa_passkey"

// beginPasskeyAlone starts a sign-in with a passkey alone: a
// discoverable ceremony (no email asked, no passkeys listed) that
// requires user verification. Each begins a record, so they are counted
// against the client's network as a signed-in account's forms are.
func (h *Dashboard) beginPasskeyAlone(w http.ResponseWriter, r *http.Request) {
	wa := h.relyingParty()
	if wa == nil {
		passkeyError(w, r, http.StatusConflict, "passkey.nohost")
		return
	}
	network, _ := h.clientNetworks(r)
	if wait := h.writes.take("passkey:" + network); wait > 0 {
		w.Header().Set("Retry-After", itoa(retryAfter(wait)))
		passkeyError(w, r, http.StatusTooManyRequests, "err.ratelimit")
		return
	}
	assertion, session, err := wa.BeginDiscoverableLogin(webauthn.WithUserVerification(protocol.VerificationRequired))
	if err != nil {
		h.log.Error("dashboard: begin passkey sign-in", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	token := newToken()
	expires := h.Clock.Now().Add(pendingLifetime)
	http.SetCookie(w, &http.Cookie{Name: passkeyCookie, Value: token, Path: Prefix + "/login", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(pendingLifetime / time.Second)})
	h.writeCeremony(w, r, passkeyAloneKey(token), session, expires, assertion)
}

// finishPasskeyAlone signs in the account whose passkey answered the
// ceremony of beginPasskeyAlone. The attempt is counted as a password
// is (signInCounts), against the account the answer names; a passkey
// sign-in is two factors, so it opens stores that require them.
func (h *Dashboard) finishPasskeyAlone(w http.ResponseWriter, r *http.Request) {
	wa := h.relyingParty()
	c, err := r.Cookie(passkeyCookie)
	if wa == nil || err != nil || c.Value == "" || len(c.Value) > 100 {
		passkeyError(w, r, http.StatusUnauthorized, "passkey.expired")
		return
	}
	parsed, perr := protocol.ParseCredentialRequestResponseBody(strings.NewReader(r.PostForm.Get("credential")))
	email := ""
	if perr == nil && len(parsed.Response.UserHandle) > 0 && len(parsed.Response.UserHandle) <= 64 {
		if _, err := h.getJSON(r.Context(), passkeyOwnerKey(parsed.Response.UserHandle), &email); err != nil {
			passkeyError(w, r, http.StatusInternalServerError, "err.internal")
			return
		}
	}
	counted, trusted, wait, err := h.signInCounts(r, email)
	if err != nil {
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		passkeyError(w, r, http.StatusTooManyRequests, "err.ratelimit")
		return
	}
	session, err := h.takeCeremony(r.Context(), passkeyAloneKey(c.Value))
	if err != nil {
		h.limits.give(counted...)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return
	}
	if session == nil || len(session.UserID) != 0 {
		passkeyError(w, r, http.StatusUnauthorized, "passkey.expired")
		return
	}
	if perr != nil || email == "" {
		passkeyError(w, r, http.StatusUnauthorized, "passkey.refused")
		return
	}
	u, ok, err := h.checkPasskey(r.Context(), wa, session, parsed, email, -1)
	if !h.passkeyOutcome(w, r, ok, err, counted, trusted) {
		return
	}
	http.SetCookie(w, &http.Cookie{Name: passkeyCookie, Value: "", Path: Prefix + "/login", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: -1})
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

// passkeyOutcome answers a passkey sign-in's check: an error is 500 with
// the attempt given back, a refused answer 401 (the attempt stays
// counted, as a wrong password's); a passing one settles the sign-in
// limits as a right password does (signInCounts' keys). It reports
// whether the sign-in goes on.
func (h *Dashboard) passkeyOutcome(w http.ResponseWriter, r *http.Request, ok bool, err error, counted []string, trusted bool) bool {
	if err != nil {
		h.limits.give(counted...)
		h.log.Error("dashboard: passkey sign-in", "err", err)
		passkeyError(w, r, http.StatusInternalServerError, "err.internal")
		return false
	}
	if !ok {
		passkeyError(w, r, http.StatusUnauthorized, "passkey.refused")
		return false
	}
	if trusted {
		h.limits.forget(counted[0])
	} else {
		h.limits.give(counted[0], counted[1])
		h.limits.forget(counted[2])
	}
	return true
}

// removePasskey removes one of the account's passkeys, given the
// password (counted as changePassword counts it). The last second
// factor, the only passkey of an account without the app, goes as
// disableTwoFactor turns two factors off: with a code as well (a
// recovery code), and not while a store of the account requires two
// factors (lastFactorMustStay). Every other session of the account
// ends, as one may have signed in with the passkey.
func (h *Dashboard) removePasskey(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	data := h.twoFactorData(s.user)
	id, err := base64.RawURLEncoding.DecodeString(r.PostForm.Get("passkey"))
	match := func(c webauthn.Credential) bool { return bytes.Equal(c.ID, id) }
	if err != nil || len(id) == 0 || s.user.TwoFactor == nil || !slices.ContainsFunc(s.user.TwoFactor.Passkeys, match) {
		data["Error"] = tr(r, "passkey.unknown")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return
	}
	counted, ok := h.checkPasswordAgain(w, r, s, data)
	if !ok {
		return
	}
	verified := s.user.PasswordHash
	removed := false
	remove := func(u *user) bool {
		if u.PasswordHash != verified || u.TwoFactor == nil || !slices.ContainsFunc(u.TwoFactor.Passkeys, match) {
			return false
		}
		tf := *u.TwoFactor
		tf.Passkeys = slices.DeleteFunc(slices.Clone(tf.Passkeys), match)
		u.TwoFactor, removed = &tf, true
		if tf.Secret == "" && len(tf.Passkeys) == 0 {
			u.TwoFactor = nil
		}
		return true
	}
	var u *user
	if data["LastFactor"] == true {
		var stays bool
		stays, err = h.lastFactorMustStay(r.Context(), s.user)
		if err != nil {
			h.limits.give(counted...)
			h.serverError(w, r, err)
			return
		}
		if stays {
			h.limits.give(counted...)
			h.refuseLastFactor(w, r, data)
			return
		}
		u, ok, err = h.useSecondFactor(r.Context(), s.Email, -1, r.PostForm.Get("code"), remove, s)
	} else {
		// Not the last second factor: were it the last by now (another
		// removed meanwhile), it stays.
		h.usersMu.Lock()
		u, err = h.existingUser(r.Context(), s.Email, "account not found")
		if err == nil && u.TwoFactor != nil && (u.TwoFactor.Secret != "" || len(u.TwoFactor.Passkeys) > 1) {
			if remove(u) {
				err = h.endOtherSessions(r.Context(), u, s)
			}
		}
		h.usersMu.Unlock()
		ok = true
	}
	if !h.codeOutcome(w, r, ok, err, counted, data) {
		return
	}
	if !removed {
		data["Error"] = tr(r, "err.current")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return
	}
	if u.TwoFactor == nil {
		http.Redirect(w, r, Prefix+"/account/2fa?done=2faoff", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/account/2fa?done=passkeygone", http.StatusSeeOther)
}
