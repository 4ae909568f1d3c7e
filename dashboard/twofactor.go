package dashboard

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base32"
	"encoding/base64"
	"encoding/json"
	"errors"
	"html/template"
	"io"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/go-webauthn/webauthn/webauthn"
	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/qr"
)

// Two-factor sign-in (docs/decisions.md "Two-factor sign-in"): a TOTP
// code (RFC 6238: SHA-1, 6 digits, 30-second steps, as every
// authenticator app reads an otpauth:// QR code), a passkey
// (passkey.go) or a one-time recovery code after the password. The
// second factors are the app, the passkeys, or both; recovery codes
// are made when the first of them is added. The password step yields a
// pending sign-in (a cookie naming a short-lived record), not a
// session; the session is made when the second factor passes. Wrong codes are counted with wrong
// passwords (limits.go); a time step is accepted at most once per
// account.

// twoFactor is an account's second factor: at least one of an app
// (Secret) and a passkey.
type twoFactor struct {
	// Secret is the TOTP secret, sealed (sealSecret); empty when the
	// account's passkeys are its only second factor.
	Secret string `json:"secret"`
	// LastStep is the last time step a code was accepted for: a code of
	// that step or an earlier one is refused.
	LastStep int64 `json:"lastStep"`
	// Recovery holds hashHex of each unused recovery code (normalised).
	Recovery []string  `json:"recovery"`
	Since    time.Time `json:"since"`
	// Handle is the account's WebAuthn user handle (random), Passkeys
	// its registered passkeys (passkey.go).
	Handle   []byte                `json:"handle,omitempty"`
	Passkeys []webauthn.Credential `json:"passkeys,omitempty"`
}

// TOTP parameters, and how many steps either side of now a code may be
// from (a phone's clock a little off).
const (
	totpPeriod = 30
	totpSkew   = 1
	// recoveryCount is how many recovery codes an enrolment makes;
	// recoveryLen their length in base32 characters (80 bits).
	recoveryCount = 10
	recoveryLen   = 16
	// enrolLifetime is how long a secret shown for enrolment waits for
	// its first code; pendingLifetime how long a pending sign-in waits
	// for its second factor.
	enrolLifetime   = 15 * time.Minute
	pendingLifetime = 5 * time.Minute
	// pendingCookie names the pending sign-in of a browser.
	pendingCookie = "kassa_2fa"
)

var totpOpts = hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

func enrolKey(email string) string       { return "dash/2fa-enrol/" + strings.ToLower(email) }
func pendingKey(token string) string     { return "dash/2fa-pending/" + hashHex(token) }
func storeTwoFactorKey(id string) string { return "dash/store-2fa/" + id }

// enrolment is a secret shown for enrolment, not confirmed yet.
type enrolment struct {
	Secret  string    `json:"secret"` // sealed
	Expires time.Time `json:"expires"`
}

// pendingSignIn is a sign-in whose password passed, waiting for its
// second factor.
type pendingSignIn struct {
	Email   string    `json:"email"`
	Gen     int       `json:"gen"`
	Expires time.Time `json:"expires"`
}

// storeRequirement is a store's two-factor setting, kept by the
// dashboard: its members must have two factors to open it.
type storeRequirement struct {
	Required bool      `json:"required"`
	By       string    `json:"by"`
	At       time.Time `json:"at"`
}

// sealKey is the key that seals TOTP secrets: derived from the device
// cookie's key, so it lives in the same record and needs no other.
func (h *Dashboard) sealKey(ctx context.Context) (cipher.AEAD, error) {
	key, err := h.deviceKey(ctx)
	if err != nil {
		return nil, err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("kassa-2fa-secret"))
	block, err := aes.NewCipher(m.Sum(nil))
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// sealSecret encrypts a TOTP secret of email with AES-256-GCM, bound to
// the account: the records and their copies (backups, logs of a record)
// never hold it in the clear.
func (h *Dashboard) sealSecret(ctx context.Context, email, secret string) (string, error) {
	aead, err := h.sealKey(ctx)
	if err != nil {
		return "", err
	}
	nonce := make([]byte, aead.NonceSize())
	rand.Read(nonce)
	out := aead.Seal(nonce, nonce, []byte(secret), []byte("kassa-2fa\x00"+strings.ToLower(email)))
	return base64.RawURLEncoding.EncodeToString(out), nil
}

var errSealed = errors.New("dashboard: a sealed two-factor secret does not open")

// openSecret reverses sealSecret.
func (h *Dashboard) openSecret(ctx context.Context, email, sealed string) (string, error) {
	aead, err := h.sealKey(ctx)
	if err != nil {
		return "", err
	}
	raw, err := base64.RawURLEncoding.DecodeString(sealed)
	if err != nil || len(raw) < aead.NonceSize() {
		return "", errSealed
	}
	plain, err := aead.Open(nil, raw[:aead.NonceSize()], raw[aead.NonceSize():], []byte("kassa-2fa\x00"+strings.ToLower(email)))
	if err != nil {
		return "", errSealed
	}
	return string(plain), nil
}

// totpStep returns the time step code is for, within totpSkew steps of
// now and after last, or false. Every candidate is computed and compared
// in constant time.
func totpStep(secret, code string, now time.Time, last int64) (int64, bool) {
	code = strings.ReplaceAll(code, " ", "")
	if len(code) != 6 {
		return 0, false
	}
	current := now.Unix() / totpPeriod
	var found int64
	ok := false
	for s := current - totpSkew; s <= current+totpSkew; s++ {
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), totpOpts)
		if err != nil {
			return 0, false
		}
		if subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 && s > last && !ok {
			found, ok = s, true
		}
	}
	return found, ok
}

// normaliseRecovery is a recovery code as it is hashed: lower case,
// without spaces and dashes.
func normaliseRecovery(code string) string {
	return strings.ToLower(strings.NewReplacer("-", "", " ", "").Replace(code))
}

var recoveryEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// newRecoveryCodes returns recoveryCount codes as shown (xxxx-xxxx-…)
// and their hashes as stored.
func newRecoveryCodes() (shown, hashes []string) {
	for range recoveryCount {
		b := make([]byte, recoveryLen*5/8)
		rand.Read(b)
		code := strings.ToLower(recoveryEncoding.EncodeToString(b))
		var parts []string
		for i := 0; i < len(code); i += 4 {
			parts = append(parts, code[i:i+4])
		}
		shown = append(shown, strings.Join(parts, "-"))
		hashes = append(hashes, hashHex(code))
	}
	return shown, hashes
}

// useRecovery returns tf's recovery hashes without the one of code, and
// whether code was one of them; every hash is compared, in constant
// time.
func useRecovery(tf *twoFactor, code string) ([]string, bool) {
	code = normaliseRecovery(code)
	if len(code) != recoveryLen {
		return tf.Recovery, false
	}
	got := hashHex(code)
	at := -1
	for i, h := range tf.Recovery {
		if subtle.ConstantTimeCompare([]byte(h), []byte(got)) == 1 {
			at = i
		}
	}
	if at < 0 {
		return tf.Recovery, false
	}
	left := make([]string, 0, len(tf.Recovery)-1)
	left = append(left, tf.Recovery[:at]...)
	return append(left, tf.Recovery[at+1:]...), true
}

// useSecondFactor checks code (a TOTP code or a recovery code) against
// email's second factor and, if it passes, uses it up (the TOTP step,
// or the recovery code), applies change to the account, and stores it,
// all under usersMu; when change reports that it took a credential
// away, the account's sessions but keep end (endOtherSessions). gen,
// when not negative, is the SessionGen the account must still have. It
// returns the account as stored and whether the code passed.
func (h *Dashboard) useSecondFactor(ctx context.Context, email string, gen int, code string, change func(*user) bool, keep *session) (*user, bool, error) {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.user(ctx, email)
	if err != nil {
		return nil, false, err
	}
	if u == nil || u.TwoFactor == nil || gen >= 0 && u.SessionGen != gen {
		return nil, false, nil
	}
	tf := *u.TwoFactor
	code = strings.TrimSpace(code)
	if len(code) > 64 {
		return nil, false, nil
	}
	if len(strings.ReplaceAll(code, " ", "")) == 6 {
		if tf.Secret == "" {
			return nil, false, nil
		}
		secret, err := h.openSecret(ctx, u.Email, tf.Secret)
		if err != nil {
			return nil, false, err
		}
		step, ok := totpStep(secret, code, h.Clock.Now(), tf.LastStep)
		if !ok {
			return nil, false, nil
		}
		tf.LastStep = step
	} else {
		left, ok := useRecovery(&tf, code)
		if !ok {
			return nil, false, nil
		}
		tf.Recovery = left
	}
	u.TwoFactor = &tf
	if change != nil && change(u) {
		return u, true, h.endOtherSessions(ctx, u, keep)
	}
	return u, true, h.putJSON(ctx, userKey(u.Email), u, forever)
}

// signInCounts takes a sign-in attempt for email from r as login does:
// against a valid device cookie of the account, else against the
// client's network, wider prefix and the account from that network. It
// returns the keys counted and whether the cookie's, or how long to
// wait when a limit is reached.
func (h *Dashboard) signInCounts(r *http.Request, email string) (counted []string, trusted bool, wait time.Duration, err error) {
	if d, ok := h.deviceOf(r, email); ok {
		u, err := h.user(r.Context(), email)
		if err != nil {
			return nil, false, 0, err
		}
		if u != nil && u.SessionGen == d.gen && h.limits.take(limit{d.failKey(), maxFailsDevice}) == 0 {
			return []string{d.failKey()}, true, 0, nil
		}
	}
	network, wide := h.clientNetworks(r)
	byAddress, byWide, byAccount := addressKey(network), wideKey(wide), accountKey(network, email)
	if wait := h.limits.take(limit{byAddress, maxFailsAddress}, limit{byWide, maxFailsWide}, limit{byAccount, maxFailsAccount}); wait > 0 {
		return nil, false, wait, nil
	}
	return []string{byAddress, byWide, byAccount}, false, 0, nil
}

// startSecondFactor answers a right password of an account with two
// factors: a pending sign-in and the page that asks for the code.
func (h *Dashboard) startSecondFactor(w http.ResponseWriter, r *http.Request, u *user) {
	token := newToken()
	p := pendingSignIn{Email: u.Email, Gen: u.SessionGen, Expires: h.Clock.Now().Add(pendingLifetime)}
	if err := h.putJSON(r.Context(), pendingKey(token), p, p.Expires); err != nil {
		h.serverError(w, r, err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: pendingCookie, Value: token, Path: Prefix + "/login", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: int(pendingLifetime / time.Second)})
	http.Redirect(w, r, Prefix+"/login/2fa", http.StatusSeeOther)
}

// pendingOf returns the request's live pending sign-in and its token,
// or nil.
func (h *Dashboard) pendingOf(r *http.Request) (*pendingSignIn, string, error) {
	c, err := r.Cookie(pendingCookie)
	if err != nil || c.Value == "" || len(c.Value) > 100 {
		return nil, "", nil
	}
	var p pendingSignIn
	ok, err := h.getJSON(r.Context(), pendingKey(c.Value), &p)
	if err != nil || !ok || !h.Clock.Now().Before(p.Expires) {
		return nil, "", err
	}
	return &p, c.Value, nil
}

// expiredSignIn answers a second step without a live pending sign-in.
func (h *Dashboard) expiredSignIn(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusUnauthorized, "login", map[string]any{"Open": h.Signup == SignupOpen, "Passkey": h.passkeysOffered(), "Error": tr(r, "err.2fa.expired")})
}

func (h *Dashboard) secondStepPage(w http.ResponseWriter, r *http.Request) {
	p, _, err := h.pendingOf(r)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if p == nil {
		h.expiredSignIn(w, r)
		return
	}
	data := map[string]any{"Email": p.Email}
	if u, err := h.user(r.Context(), p.Email); err == nil && u != nil && u.TwoFactor != nil {
		data["Passkey"] = len(u.TwoFactor.Passkeys) > 0 && h.passkeysOffered()
		data["PasskeyOnly"] = u.TwoFactor.Secret == ""
	}
	h.render(w, r, http.StatusOK, "login_2fa", data)
}

// secondStep completes a pending sign-in with a TOTP or recovery code.
// The attempt is counted as a password is (signInCounts); a right code
// gives it back and forgets the account's failures, as login does.
func (h *Dashboard) secondStep(w http.ResponseWriter, r *http.Request) {
	p, token, err := h.pendingOf(r)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if p == nil {
		h.expiredSignIn(w, r)
		return
	}
	data := map[string]any{"Email": p.Email}
	counted, trusted, wait, err := h.signInCounts(r, p.Email)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		data["Error"] = tr(r, "err.ratelimit")
		h.render(w, r, http.StatusTooManyRequests, "login_2fa", data)
		return
	}
	u, ok, err := h.useSecondFactor(r.Context(), p.Email, p.Gen, r.PostForm.Get("code"), nil, nil)
	if err != nil {
		h.limits.give(counted...)
		h.serverError(w, r, err)
		return
	}
	if !ok {
		data["Error"] = tr(r, "err.2fa.code")
		h.render(w, r, http.StatusUnauthorized, "login_2fa", data)
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
	h.startSession(w, r, u)
}

// endPending ends the pending sign-in of token, record and cookie; it
// answers 500 and returns false when the record cannot be written.
func (h *Dashboard) endPending(w http.ResponseWriter, r *http.Request, token string) bool {
	if err := h.KV.PutValue(r.Context(), pendingKey(token), []byte("{}"), h.Clock.Now().Add(-time.Second)); err != nil {
		h.serverError(w, r, err)
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: pendingCookie, Value: "", Path: Prefix + "/login", HttpOnly: true,
		Secure: h.secure, SameSite: http.SameSiteLaxMode, MaxAge: -1})
	return true
}

// The account's two-factor page.

// passkeyRow is a passkey as the account page lists it.
type passkeyRow struct{ ID, Label string }

// twoFactorData is the account page's state: two factors off, or on
// with the app (App), passkeys (PasskeyList), or both; LastFactor when
// a single passkey is the only second factor.
func (h *Dashboard) twoFactorData(u *user) map[string]any {
	d := map[string]any{"Enabled": u.TwoFactor != nil, "Passkeys": h.passkeysOffered()}
	if tf := u.TwoFactor; tf != nil {
		d["Left"] = len(tf.Recovery)
		d["Since"] = tf.Since
		d["PasskeyCount"] = len(tf.Passkeys)
		d["App"] = tf.Secret != ""
		d["LastFactor"] = tf.Secret == "" && len(tf.Passkeys) == 1
		var rows []passkeyRow
		for i, c := range tf.Passkeys {
			id := base64.RawURLEncoding.EncodeToString(c.ID)
			rows = append(rows, passkeyRow{ID: id, Label: itoa(int64(i+1)) + " · " + id[:min(8, len(id))]})
		}
		d["PasskeyList"] = rows
	}
	return d
}

func (h *Dashboard) twoFactorPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "twofactor", h.twoFactorData(current(r.Context()).user))
}

// startEnrolment makes a new secret, keeps it sealed for enrolLifetime
// and shows it, as a QR code and as text, with the form for its first
// code.
func (h *Dashboard) startEnrolment(w http.ResponseWriter, r *http.Request) {
	u := current(r.Context()).user
	if u.TwoFactor != nil && u.TwoFactor.Secret != "" {
		data := h.twoFactorData(u)
		data["Error"] = tr(r, "err.2fa.on")
		h.render(w, r, http.StatusConflict, "twofactor", data)
		return
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Kassa", AccountName: u.Email, Period: totpPeriod, SecretSize: 20,
		Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	sealed, err := h.sealSecret(r.Context(), u.Email, key.Secret())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	e := enrolment{Secret: sealed, Expires: h.Clock.Now().Add(enrolLifetime)}
	if err := h.putJSON(r.Context(), enrolKey(u.Email), e, e.Expires); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.renderEnrolment(w, r, http.StatusOK, u, key.Secret(), "")
}

// renderEnrolment shows secret for enrolment, with problem if any.
func (h *Dashboard) renderEnrolment(w http.ResponseWriter, r *http.Request, status int, u *user, secret, problem string) {
	key, err := totp.Generate(totp.GenerateOpts{Issuer: "Kassa", AccountName: u.Email, Period: totpPeriod,
		Secret: decodeSecret(secret), Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	// Not qr's cache: the secret must not outlive the page in memory.
	img, err := qr.DataURI(key.URL())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	var groups []string
	for i := 0; i < len(secret); i += 4 {
		groups = append(groups, secret[i:min(i+4, len(secret))])
	}
	data := map[string]any{"Enrol": true, "QR": template.URL(img), "Secret": strings.Join(groups, " ")}
	if problem != "" {
		data["Error"] = problem
	}
	h.render(w, r, status, "twofactor", data)
}

// decodeSecret is the bytes of a base32 TOTP secret as otp makes them.
func decodeSecret(s string) []byte {
	b, _ := base32.StdEncoding.WithPadding(base32.NoPadding).DecodeString(s)
	return b
}

// checkPasswordAgain asks the signed-in account's password again before
// a change to its second factors: one attempt counted against the
// account and the network (the keys returned, to give back if the
// change does not happen for another reason); it has answered the page
// when it returns false.
func (h *Dashboard) checkPasswordAgain(w http.ResponseWriter, r *http.Request, s *session, data map[string]any) ([]string, bool) {
	counted := h.takeAccountAttempt(w, r, "twofactor", data)
	if counted == nil {
		return nil, false
	}
	password := r.PostForm.Get("password")
	ok, err := h.check(r.Context(), ticket{trusted: true, account: s.Email}, s.user.PasswordHash, password)
	if err != nil {
		h.limits.give(counted...)
		h.busy(w, r, "twofactor", data)
		return nil, false
	}
	if !ok || len(password) > maxPassword {
		data["Error"] = tr(r, "err.current")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return nil, false
	}
	return counted, true
}

// codeOutcome answers a change to the second factors that a code must
// pass (useSecondFactor): an error is 500 with the attempt given back,
// a wrong code 422 (the attempt stays counted); a right one gives the
// attempt back. It reports whether the change goes on.
func (h *Dashboard) codeOutcome(w http.ResponseWriter, r *http.Request, ok bool, err error, counted []string, data map[string]any) bool {
	if err != nil {
		h.limits.give(counted...)
		h.serverError(w, r, err)
		return false
	}
	if !ok {
		data["Error"] = tr(r, "err.2fa.code")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return false
	}
	h.limits.give(counted...)
	return true
}

// takeAccountAttempt counts a code or password entered by a signed-in
// user as changePassword does: against the network and the account
// from it. It answers 429 and returns nil when a limit is reached.
func (h *Dashboard) takeAccountAttempt(w http.ResponseWriter, r *http.Request, page string, data map[string]any) []string {
	network, _ := h.clientNetworks(r)
	keys := []string{addressKey(network), accountKey(network, current(r.Context()).Email)}
	if wait := h.limits.take(limit{keys[0], maxFailsAddress}, limit{keys[1], maxFailsAccount}); wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		data["Error"] = tr(r, "err.ratelimit")
		h.render(w, r, http.StatusTooManyRequests, page, data)
		return nil
	}
	return keys
}

// confirmEnrolment turns two factors on when the code fits the secret
// being enrolled, and shows the recovery codes, once; for an account
// whose passkeys are its second factor it adds the app, and its
// recovery codes stay. A wrong code changes nothing and counts as a
// wrong password.
func (h *Dashboard) confirmEnrolment(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	var e enrolment
	ok, err := h.getJSON(r.Context(), enrolKey(s.Email), &e)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if !ok || !h.Clock.Now().Before(e.Expires) || s.user.TwoFactor != nil && s.user.TwoFactor.Secret != "" {
		data := h.twoFactorData(s.user)
		data["Error"] = tr(r, "err.2fa.noenrol")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return
	}
	secret, err := h.openSecret(r.Context(), s.Email, e.Secret)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	counted := h.takeAccountAttempt(w, r, "twofactor", h.twoFactorData(s.user))
	if counted == nil {
		return
	}
	step, ok := totpStep(secret, r.PostForm.Get("code"), h.Clock.Now(), 0)
	if !ok {
		h.renderEnrolment(w, r, http.StatusUnprocessableEntity, s.user, secret, tr(r, "err.2fa.code"))
		return
	}
	h.limits.give(counted...)
	shown, hashes := newRecoveryCodes()
	h.usersMu.Lock()
	u, err := h.existingUser(r.Context(), s.Email, "account not found")
	added := false
	if err == nil && u.TwoFactor != nil {
		if u.TwoFactor.Secret != "" {
			err = errNoEnrolment
		} else {
			// Two factors were on already (passkeys): sessions stay.
			u.TwoFactor.Secret, u.TwoFactor.LastStep, added = e.Secret, step, true
			if err = h.putJSON(r.Context(), userKey(s.Email), u, forever); err == nil {
				s.user = u
			}
		}
	}
	if err == nil && !added {
		// Every other session began without the second factor: it ends.
		u.TwoFactor = &twoFactor{Secret: e.Secret, LastStep: step, Recovery: hashes, Since: h.Clock.Now().UTC()}
		err = h.endOtherSessions(r.Context(), u, s)
	}
	h.usersMu.Unlock()
	if err == errNoEnrolment {
		data := h.twoFactorData(u)
		data["Error"] = tr(r, "err.2fa.on")
		h.render(w, r, http.StatusConflict, "twofactor", data)
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	// The enrolment's record goes; were this write lost, it would expire.
	if err := h.KV.PutValue(r.Context(), enrolKey(s.Email), []byte("{}"), h.Clock.Now().Add(-time.Second)); err != nil {
		h.log.Warn("dashboard: end a two-factor enrolment", "err", err)
	}
	data := h.twoFactorData(u)
	data["Flash"] = tr(r, "done.2faon")
	if !added {
		data["Codes"] = shown
	}
	h.render(w, r, http.StatusOK, "twofactor", data)
}

var errNoEnrolment = kassa.Errorf(kassa.Conflict, "two-factor sign-in is on already")

// newRecovery replaces the account's recovery codes, given the password
// again (checkPasswordAgain) and a code, and ends the account's other
// sessions: a signed-in session with a code alone cannot sign the
// owner's other browsers out.
func (h *Dashboard) newRecovery(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	counted, ok := h.checkPasswordAgain(w, r, s, h.twoFactorData(s.user))
	if !ok {
		return
	}
	shown, hashes := newRecoveryCodes()
	// The old codes go: a session one of them opened ends.
	u, ok, err := h.useSecondFactor(r.Context(), s.Email, -1, r.PostForm.Get("code"), func(u *user) bool {
		u.TwoFactor.Recovery = hashes
		return true
	}, s)
	if !h.codeOutcome(w, r, ok, err, counted, h.twoFactorData(s.user)) {
		return
	}
	data := h.twoFactorData(u)
	data["Codes"] = shown
	h.render(w, r, http.StatusOK, "twofactor", data)
}

// disableTwoFactor turns the app off, given the password and a code:
// two factors go off with it, unless passkeys remain, which stay the
// second factor (removePasskey takes the last of them). The app as the
// last second factor stays while a store of the account requires two
// factors (lastFactorMustStay), checked before the code is used and
// again under usersMu, in case the passkeys went meanwhile. Every other
// session of the account ends with the app.
func (h *Dashboard) disableTwoFactor(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	data := h.twoFactorData(s.user)
	if s.user.TwoFactor == nil {
		h.render(w, r, http.StatusOK, "twofactor", data)
		return
	}
	if s.user.TwoFactor.Secret == "" {
		data["Error"] = tr(r, "err.2fa.noapp")
		h.render(w, r, http.StatusConflict, "twofactor", data)
		return
	}
	counted, ok := h.checkPasswordAgain(w, r, s, data)
	if !ok {
		return
	}
	stays, err := h.lastFactorMustStay(r.Context(), s.user)
	if err != nil {
		h.limits.give(counted...)
		h.serverError(w, r, err)
		return
	}
	if stays && len(s.user.TwoFactor.Passkeys) == 0 {
		h.limits.give(counted...)
		h.refuseLastFactor(w, r, data)
		return
	}
	verified, kept := s.user.PasswordHash, false
	// The app goes, and with it every other session: one may have
	// signed in with it.
	u, ok, err := h.useSecondFactor(r.Context(), s.Email, -1, r.PostForm.Get("code"), func(u *user) bool {
		switch {
		case u.PasswordHash != verified:
			return false
		case len(u.TwoFactor.Passkeys) > 0:
			u.TwoFactor.Secret, u.TwoFactor.LastStep = "", 0
		case stays:
			kept = true
			return false
		default:
			u.TwoFactor = nil
		}
		return true
	}, s)
	if !h.codeOutcome(w, r, ok, err, counted, data) {
		return
	}
	if kept {
		h.refuseLastFactor(w, r, data)
		return
	}
	if u.TwoFactor != nil && u.TwoFactor.Secret != "" { // the password changed since it was checked
		data["Error"] = tr(r, "err.current")
		h.render(w, r, http.StatusUnprocessableEntity, "twofactor", data)
		return
	}
	if u.TwoFactor != nil {
		http.Redirect(w, r, Prefix+"/account/2fa?done=totpoff", http.StatusSeeOther)
		return
	}
	http.Redirect(w, r, Prefix+"/account/2fa?done=2faoff", http.StatusSeeOther)
}

// adminResetTwoFactor turns an account's second factor off for `kassa
// user reset-2fa` (a lost device): JSON {"email"} with the admin token
// as bearer. Every session and device cookie of the account ends.
func (h *Dashboard) adminResetTwoFactor(w http.ResponseWriter, r *http.Request) {
	if !h.adminRequest(w, r) {
		return
	}
	var in struct {
		Email string `json:"email"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, maxForm)).Decode(&in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "body must be JSON {\"email\"}")
		return
	}
	email := strings.ToLower(strings.TrimSpace(in.Email))
	err := func() error {
		h.usersMu.Lock()
		defer h.usersMu.Unlock()
		u, err := h.existingUser(r.Context(), email, "no account has this email")
		if err != nil {
			return err
		}
		u.TwoFactor = nil
		return h.endOtherSessions(r.Context(), u, nil)
	}()
	if err != nil {
		h.writeAdminError(w, err, "reset two-factor sign-in", "could not reset two-factor sign-in")
		return
	}
	json.NewEncoder(w).Encode(map[string]any{"email": email, "twoFactor": false, "sessionsEnded": true})
}

// A store's requirement.

// storeTwoFactor reports whether the store requires two factors of its
// members.
func (h *Dashboard) storeTwoFactor(ctx context.Context, storeID string) (bool, error) {
	var req storeRequirement
	_, err := h.getJSON(ctx, storeTwoFactorKey(storeID), &req)
	return req.Required, err
}

// lastFactorMustStay is the rule of the last second factor: the account
// u may not remove it (its last passkey, or the app without passkeys)
// while a store it belongs to requires two factors of its members, as
// it would be shut out of the store. The operator's reset
// (adminResetTwoFactor, a lost device) does not apply it.
func (h *Dashboard) lastFactorMustStay(ctx context.Context, u *user) (bool, error) {
	for _, id := range u.StoreIDs {
		required, err := h.storeTwoFactor(ctx, id)
		if err != nil || required {
			return required, err
		}
	}
	return false, nil
}

// refuseLastFactor answers, on the account page, that the last second
// factor stays (lastFactorMustStay).
func (h *Dashboard) refuseLastFactor(w http.ResponseWriter, r *http.Request, data map[string]any) {
	data["Error"] = tr(r, "err.2fa.storeneeds")
	h.render(w, r, http.StatusConflict, "twofactor", data)
}

// requireTwoFactor sends a user without two factors who opens a store
// that requires them to enrol (a GET), or refuses the request (403).
func (h *Dashboard) requireTwoFactor(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := current(r.Context()).user
		if u.TwoFactor == nil {
			required, err := h.storeTwoFactor(r.Context(), currentStore(r.Context()).ID)
			if err != nil {
				h.serverError(w, r, err)
				return
			}
			if required {
				if r.Method == http.MethodGet || r.Method == http.MethodHead {
					http.Redirect(w, r, Prefix+"/account/2fa?done=need2fa", http.StatusSeeOther)
					return
				}
				h.fail(w, r, http.StatusForbidden, "err.2fa.required")
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (h *Dashboard) storeTwoFactorPage(w http.ResponseWriter, r *http.Request) {
	required, err := h.storeTwoFactor(r.Context(), currentStore(r.Context()).ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "store_twofactor", map[string]any{"Required": required})
}

// setStoreTwoFactor turns the store's requirement on or off. Only a
// user with two factors may turn it on (else they would shut
// themselves out).
func (h *Dashboard) setStoreTwoFactor(w http.ResponseWriter, r *http.Request) {
	s, st := current(r.Context()), currentStore(r.Context())
	on := r.PostForm.Get("required") == "on"
	if on && s.user.TwoFactor == nil {
		h.render(w, r, http.StatusConflict, "store_twofactor", map[string]any{"Required": false, "Error": tr(r, "err.2fa.ownerfirst")})
		return
	}
	req := storeRequirement{Required: on, By: s.Email, At: h.Clock.Now().UTC()}
	if err := h.putJSON(r.Context(), storeTwoFactorKey(st.ID), req, forever); err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/twofactor", "saved")
}

func init() { maps.Copy(strs, twoFactorStrs) }

// twoFactorStrs are the strings of two-factor sign-in (English; the
// German catalogue falls back to them).
var twoFactorStrs = map[string]string{
	"2fa.title":          "Two-factor sign-in",
	"2fa.link":           "Two-factor sign-in (authenticator app)",
	"2fa.off":            "Two-factor sign-in is off. With it on, signing in needs a code from an authenticator app after the password.",
	"2fa.on":             "Two-factor sign-in is on.",
	"2fa.left":           "Unused recovery codes:",
	"2fa.start":          "Set up two-factor sign-in",
	"2fa.scan":           "Scan this QR code with an authenticator app, or type the key in. Then enter the app's current code.",
	"2fa.qr":             "QR code of the two-factor key",
	"2fa.key":            "Key",
	"2fa.code":           "Code from the app (6 digits) or a recovery code",
	"2fa.confirm":        "Turn on",
	"2fa.codes":          "Recovery codes: each signs in once when you do not have your device. They are shown only now: write them down or print them.",
	"2fa.newcodes":       "New recovery codes",
	"2fa.newcodeshint":   "Makes ten new recovery codes; the old ones stop working.",
	"2fa.disable":        "Turn off two-factor sign-in",
	"2fa.apponly":        "Code from the app (6 digits) or a recovery code",
	"2fa.step":           "Enter the code from your authenticator app, or one of your recovery codes.",
	"2fa.submit":         "Sign in",
	"2fa.lost":           "Lost your device and your recovery codes? The operator can turn two-factor sign-in off for your account.",
	"2fa.store":          "Require two-factor sign-in of everyone who opens this store. Users without it are sent to set it up first.",
	"2fa.require":        "Require two-factor sign-in",
	"2fa.save":           "Save",
	"2fa.storelink":      "Two-factor sign-in for this store",
	"err.2fa.code":       "Wrong code (or a code used already).",
	"err.2fa.expired":    "This sign-in expired. Enter your password again.",
	"err.2fa.noenrol":    "No set-up is under way (or it expired). Start again.",
	"err.2fa.on":         "Two-factor sign-in is on already.",
	"err.2fa.required":   "This store requires two-factor sign-in. Set it up on your account page first.",
	"err.2fa.ownerfirst": "Turn on two-factor sign-in for your own account first.",
	"done.need2fa":       "A store you opened requires two-factor sign-in: set it up first.",
	"done.2faon":         "Two-factor sign-in is on.",
	"done.2faoff":        "Two-factor sign-in is off.",
	"done.passkey":       "Passkey added.",
	"passkey.title":      "Passkeys",
	"passkey.hint":       "A passkey (a security key, or the phone or computer's own) signs in instead of the code after the password.",
	"passkey.count":      "Passkeys registered:",
	"passkey.add":        "Add a passkey",
	"passkey.use":        "Use a passkey",
	"passkey.signin":     "Sign in with a passkey",
	"passkey.alone":      "A passkey also signs in alone, without the password: “Sign in with a passkey” on the login page.",
	"passkey.failed":     "The passkey did not work:",
	"passkey.nohost":     "Passkeys need the dashboard under a host name, not an IP address.",
	"passkey.toomany":    "An account may have at most 10 passkeys.",
	"passkey.expired":    "The passkey request expired. Try again.",
	"passkey.refused":    "The passkey was refused (not one of this account, or of another site).",
	"passkey.none":       "This account has no passkey.",
	"2fa.onpasskey":      "Two-factor sign-in is on, with passkeys only (no authenticator app).",
	"2fa.offpasskey":     "Or use a passkey (a security key, or the phone or computer's own) as the second factor, without an app.",
	"2fa.steppasskey":    "Use your passkey, or enter one of your recovery codes.",
	"2fa.recoveryonly":   "Recovery code",
	"2fa.addapp":         "Add an authenticator app",
	"2fa.disableapp":     "Remove the authenticator app",
	"2fa.disableapphint": "Your passkeys stay: two-factor sign-in stays on with them.",
	"err.2fa.noapp":      "This account has no authenticator app to remove; remove its passkeys instead.",
	"err.2fa.storeneeds": "A store you belong to requires two-factor sign-in: add another second factor before removing this one.",
	"done.totpoff":       "The authenticator app is removed; two-factor sign-in stays on with your passkeys.",
	"done.passkeygone":   "Passkey removed.",
	"passkey.enrol":      "Set up with a passkey",
	"passkey.needenrol":  "Turn on two-factor sign-in first, with a passkey or an app.",
	"passkey.remove":     "Remove a passkey",
	"passkey.removelast": "This is your only second factor: removing it turns two-factor sign-in off, and needs one of your recovery codes.",
	"passkey.which":      "Passkey",
	"passkey.unknown":    "This account has no such passkey.",
}
