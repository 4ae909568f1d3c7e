package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// enrolPasskey turns two-factor sign-in on for c's account (which has
// none) with k alone, and returns the recovery codes shown.
func enrolPasskey(t *testing.T, c *client, k *softKey) []string {
	t.Helper()
	_, page, _ := c.get("/dashboard/account/2fa")
	if !strings.Contains(page, `id="passkey-enrol"`) {
		t.Fatal("the account page without two factors offers no passkey")
	}
	code, body, _ := c.post("/dashboard/account/2fa/passkey/begin", nil)
	if code != http.StatusOK {
		t.Fatalf("begin passkey enrolment: %d %s", code, body)
	}
	code, body, _ = c.post("/dashboard/account/2fa/passkey/enrol", url.Values{"credential": {k.create(passkeyOptions(t, body))}})
	var codes []string
	for _, m := range recoveryCodes.FindAllStringSubmatch(body, -1) {
		codes = append(codes, m[1])
	}
	if code != http.StatusOK || len(codes) != recoveryCount {
		t.Fatalf("finish passkey enrolment: %d, %d recovery codes: %s", code, len(codes), body)
	}
	return codes
}

// TestPasskeyOnlyEnrolment: an account without two factors turns them
// on with a passkey alone: a registration begun and not finished, or
// finished with a passkey of another site, changes nothing; a finished
// one shows ten recovery codes once (stored hashed), ends the other
// sessions, and the account page says two-factor sign-in is on with
// passkeys only.
func TestPasskeyOnlyEnrolment(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	other := e.client()
	if code := other.login("shop@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("second session: %d", code)
	}
	key := newSoftKey(t, "localhost", e.dash.PublicURL)

	// Begun, not finished; then finished with another site's passkey.
	c.get("/dashboard/account/2fa")
	if code, _, _ := c.post("/dashboard/account/2fa/passkey/begin", nil); code != http.StatusOK {
		t.Fatalf("begin: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Fatalf("a begun registration changed the account: %+v", u.TwoFactor)
	}
	_, body, _ := c.post("/dashboard/account/2fa/passkey/begin", nil)
	evil := newSoftKey(t, "evil.example", "https://evil.example")
	if code, _, _ := c.post("/dashboard/account/2fa/passkey/enrol", url.Values{"credential": {evil.create(passkeyOptions(t, body))}}); code != http.StatusUnprocessableEntity {
		t.Errorf("enrolment with another site's passkey: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Fatalf("a refused registration changed the account: %+v", u.TwoFactor)
	}

	codes := enrolPasskey(t, c, key)
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if u.TwoFactor == nil || u.TwoFactor.Secret != "" || len(u.TwoFactor.Passkeys) != 1 || len(u.TwoFactor.Recovery) != recoveryCount {
		t.Fatalf("after the passkey enrolment: %+v", u.TwoFactor)
	}
	raw, _, _ := e.db.GetValue(t.Context(), userKey("shop@example.com"))
	for _, code := range codes {
		if strings.Contains(string(raw), strings.ReplaceAll(code, "-", "")) {
			t.Error("a recovery code is stored in the clear")
		}
	}
	if !signedIn(c) {
		t.Error("the enrolling browser was signed out")
	}
	if signedIn(other) {
		t.Error("another session outlived the enrolment")
	}
	_, page, _ := c.get("/dashboard/account/2fa")
	if !strings.Contains(page, `id="twofactor-passkeys"`) || !strings.Contains(page, msg("2fa.onpasskey")) || recoveryCodes.MatchString(page) {
		t.Errorf("the account page after a passkey enrolment: passkey-only state %v, codes shown again %v",
			strings.Contains(page, msg("2fa.onpasskey")), recoveryCodes.MatchString(page))
	}
	// Enrolling again is refused; another passkey is added as before.
	_, body, _ = c.post("/dashboard/account/2fa/passkey/begin", nil)
	second := newSoftKey(t, "localhost", e.dash.PublicURL)
	if code, _, _ := c.post("/dashboard/account/2fa/passkey/enrol", url.Values{"credential": {second.create(passkeyOptions(t, body))}}); code != http.StatusConflict {
		t.Errorf("a second enrolment: %d, want 409", code)
	}
	registerPasskey(t, c, second)
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); len(u.TwoFactor.Passkeys) != 2 || len(u.TwoFactor.Recovery) != recoveryCount {
		t.Errorf("after adding a second passkey: %d passkeys, %d codes", len(u.TwoFactor.Passkeys), len(u.TwoFactor.Recovery))
	}
}

// TestPasskeyOnlySignIn: the password of a passkey-only account yields
// no session; the second step offers the passkey, refuses a six-digit
// code (there is no app) and a passkey not the account's, and the
// account's passkey signs in, as does the passkey alone.
func TestPasskeyOnlySignIn(t *testing.T) {
	e := newEnv(t, onLocalhost)
	owner := e.client()
	owner.signup("shop@example.com")
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	enrolPasskey(t, owner, key)

	c := e.client()
	if code, loc := passwordStep(c, "shop@example.com"); code != http.StatusSeeOther || loc != "/dashboard/login/2fa" {
		t.Fatalf("password step: %d to %q", code, loc)
	}
	if signedIn(c) {
		t.Fatal("the password alone signed in a passkey-only account")
	}
	_, page, _ := c.get("/dashboard/login/2fa")
	if !strings.Contains(page, `id="passkey-use"`) || !strings.Contains(page, msg("2fa.steppasskey")) {
		t.Errorf("the second step of a passkey-only account does not ask for the passkey")
	}
	if code, _, _ := c.post("/dashboard/login/2fa", url.Values{"code": {"123456"}}); code != http.StatusUnauthorized || signedIn(c) {
		t.Errorf("a six-digit code for a passkey-only account: %d", code)
	}
	if code, _ := passkeyStep(t, c, newSoftKey(t, "localhost", e.dash.PublicURL)); code != http.StatusUnauthorized || signedIn(c) {
		t.Errorf("a passkey not the account's: %d", code)
	}
	if code, body := passkeyStep(t, c, key); code != http.StatusOK || !signedIn(c) {
		t.Fatalf("the account's passkey: %d %s", code, body)
	}
	alone := e.client()
	if code, _ := passkeyAlone(t, alone, key, "198.51.100.1"); code != http.StatusOK || !signedIn(alone) {
		t.Errorf("the passkey alone: %d", code)
	}
}

// TestPasskeyOnlyRecoveryCode: a recovery code of a passkey-only
// account signs in once after the password, and makes new codes.
func TestPasskeyOnlyRecoveryCode(t *testing.T) {
	e := newEnv(t, onLocalhost)
	owner := e.client()
	owner.signup("shop@example.com")
	codes := enrolPasskey(t, owner, newSoftKey(t, "localhost", e.dash.PublicURL))

	c := e.client()
	passwordStep(c, "shop@example.com")
	if code, _, _ := c.post("/dashboard/login/2fa", url.Values{"code": {codes[2]}}); code != http.StatusSeeOther || !signedIn(c) {
		t.Fatalf("a recovery code: %d", code)
	}
	again := e.client()
	passwordStep(again, "shop@example.com")
	if code, _, _ := again.post("/dashboard/login/2fa", url.Values{"code": {codes[2]}}); code != http.StatusUnauthorized || signedIn(again) {
		t.Errorf("a used recovery code: %d", code)
	}
	owner.get("/dashboard/account/2fa")
	if code, body, _ := owner.post("/dashboard/account/2fa/recovery", url.Values{"password": {"correct horse battery"}, "code": {codes[5]}}); code != http.StatusOK || len(recoveryCodes.FindAllString(body, -1)) != recoveryCount {
		t.Errorf("new recovery codes given a recovery code: %d", code)
	}
}

// removePasskey posts the removal of k's passkey with password and code.
func removePasskey(c *client, k *softKey, password, code string) (int, string) {
	c.get("/dashboard/account/2fa")
	status, body, _ := c.post("/dashboard/account/2fa/passkey/remove", url.Values{"passkey": {b64url.EncodeToString(k.id)}, "password": {password}, "code": {code}})
	return status, body
}

// TestRemoveLastPasskey: a passkey of several goes with the password; the
// last one of a passkey-only account turns two-factor sign-in off only
// with the password and a code, as turning the app off does, and not
// while a store of the account requires two factors.
func TestRemoveLastPasskey(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	first, second := newSoftKey(t, "localhost", e.dash.PublicURL), newSoftKey(t, "localhost", e.dash.PublicURL)
	codes := enrolPasskey(t, c, first)
	registerPasskey(t, c, second)

	if code, _ := removePasskey(c, second, "wrong password!", ""); code != http.StatusUnprocessableEntity {
		t.Errorf("removal with a wrong password: %d", code)
	}
	if code, _ := removePasskey(c, second, "correct horse battery", ""); code != http.StatusSeeOther {
		t.Fatalf("removing one of two passkeys: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor == nil || len(u.TwoFactor.Passkeys) != 1 {
		t.Fatalf("after removing one of two: %+v", u.TwoFactor)
	}

	// The last one.
	if code, _ := removePasskey(c, first, "correct horse battery", ""); code != http.StatusUnprocessableEntity {
		t.Errorf("removing the last passkey without a code: %d", code)
	}
	if code, _ := removePasskey(c, first, "correct horse battery", "aaaa-aaaa-aaaa-aaaa"); code != http.StatusUnprocessableEntity {
		t.Errorf("removing the last passkey with a wrong code: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor == nil || len(u.TwoFactor.Passkeys) != 1 {
		t.Fatalf("the last passkey went without the code: %+v", u.TwoFactor)
	}
	st := c.createStore("Shop")
	c.get("/dashboard/stores/" + st.ID + "/twofactor")
	if code, _, _ := c.post("/dashboard/stores/"+st.ID+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("requiring two factors: %d", code)
	}
	if code, body := removePasskey(c, first, "correct horse battery", codes[0]); code != http.StatusConflict || !strings.Contains(body, msg("err.2fa.storeneeds")) {
		t.Errorf("removing the last passkey while a store requires two factors: %d", code)
	}
	c.get("/dashboard/stores/" + st.ID + "/twofactor")
	c.post("/dashboard/stores/"+st.ID+"/twofactor", url.Values{})
	if code, _ := removePasskey(c, first, "correct horse battery", codes[1]); code != http.StatusSeeOther {
		t.Fatalf("removing the last passkey: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Fatalf("two factors still on after the last passkey went: %+v", u.TwoFactor)
	}
	if code, loc := passwordStep(e.client(), "shop@example.com"); code != http.StatusSeeOther || loc != "/dashboard/stores" {
		t.Errorf("sign-in after the last passkey went: %d to %q", code, loc)
	}
}

// TestTOTPOffKeepsPasskeys: turning the app off while a passkey remains
// leaves two-factor sign-in on with the passkey only: the password is
// not enough, a code of the app no longer signs in, the passkey does.
func TestTOTPOffKeepsPasskeys(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	secret, _ := enrol(t, c)
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	registerPasskey(t, c, key)
	c.get("/dashboard/account/2fa")
	if code, _, hdr := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/account/2fa?done=totpoff" {
		t.Fatalf("turning the app off: %d to %q", code, hdr.Get("Location"))
	}
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if u.TwoFactor == nil || u.TwoFactor.Secret != "" || len(u.TwoFactor.Passkeys) != 1 {
		t.Fatalf("after turning the app off: %+v", u.TwoFactor)
	}
	if _, page, _ := c.get("/dashboard/account/2fa?done=totpoff"); !strings.Contains(page, msg("done.totpoff")) || !strings.Contains(page, msg("2fa.onpasskey")) {
		t.Error("the account page does not say two-factor sign-in stays on with passkeys")
	}
	other := e.client()
	if code, loc := passwordStep(other, "shop@example.com"); code != http.StatusSeeOther || loc != "/dashboard/login/2fa" {
		t.Fatalf("password step: %d to %q", code, loc)
	}
	e.clock.Advance(30 * time.Second)
	if code, _, _ := other.post("/dashboard/login/2fa", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusUnauthorized || signedIn(other) {
		t.Errorf("a code of the app turned off: %d", code)
	}
	if code, _ := passkeyStep(t, other, key); code != http.StatusOK || !signedIn(other) {
		t.Errorf("the passkey after the app went: %d", code)
	}
}

// TestPasskeyOnlyAddsApp: a passkey-only account adds the app: its
// codes then sign in too, its recovery codes stay (none shown anew), and
// its other sessions stay, as two factors were on already.
func TestPasskeyOnlyAddsApp(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	enrolPasskey(t, c, key)
	other := e.client()
	passwordStep(other, "shop@example.com")
	passkeyStep(t, other, key)
	secret := startEnrolment(t, c)
	code, body, _ := c.post("/dashboard/account/2fa/confirm", url.Values{"code": {totpAt(t, secret, e.clock.Now())}})
	if code != http.StatusOK || recoveryCodes.MatchString(body) {
		t.Fatalf("adding the app: %d, recovery codes shown %v", code, recoveryCodes.MatchString(body))
	}
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if u.TwoFactor == nil || u.TwoFactor.Secret == "" || len(u.TwoFactor.Passkeys) != 1 || len(u.TwoFactor.Recovery) != recoveryCount {
		t.Fatalf("after adding the app: %+v", u.TwoFactor)
	}
	if !signedIn(other) {
		t.Error("adding the app ended another session")
	}
	e.clock.Advance(30 * time.Second)
	app := e.client()
	passwordStep(app, "shop@example.com")
	if code, _, _ := app.post("/dashboard/login/2fa", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther || !signedIn(app) {
		t.Errorf("a code of the added app: %d", code)
	}
}

// TestRemoveLastPasskeyWriteFails: when the write that removes the last
// passkey fails, the page says so (500) and the passkey stays; it never
// answers that two-factor sign-in is off.
func TestRemoveLastPasskeyWriteFails(t *testing.T) {
	var failUser atomic.Bool
	e := newEnv(t, onLocalhost, func(d *Deps) {
		d.KV = &faultyKV{KeyValue: d.KV, putErr: func(key string) error {
			if failUser.Load() && key == userKey("shop@example.com") {
				return errors.New("injected: the account write failed")
			}
			return nil
		}}
	})
	c := e.client()
	c.signup("shop@example.com")
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	codes := enrolPasskey(t, c, key)
	failUser.Store(true)
	if code, _ := removePasskey(c, key, "correct horse battery", codes[0]); code != http.StatusInternalServerError {
		t.Errorf("removing the last passkey while its write fails: %d, want 500", code)
	}
	failUser.Store(false)
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor == nil || len(u.TwoFactor.Passkeys) != 1 {
		t.Fatalf("after a failed removal: %+v", u.TwoFactor)
	}
}
