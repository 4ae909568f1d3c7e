package dashboard

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/totp"
)

var (
	secretText    = regexp.MustCompile(`id="totp-secret">([A-Z2-7 ]+)<`)
	recoveryCodes = regexp.MustCompile(`class="mono recovery">([a-z2-7-]+)<`)
)

// totpAt is the code of secret at t, as an authenticator app shows it.
func totpAt(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	code, err := totp.GenerateCodeCustom(strings.ReplaceAll(secret, " ", ""), at,
		totp.ValidateOpts{Period: 30, Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1})
	if err != nil {
		t.Fatal(err)
	}
	return code
}

// wrongCode is a six-digit code that is not secret's at, nor at the
// steps next to it.
func wrongCode(t *testing.T, secret string, at time.Time) string {
	t.Helper()
	near := map[string]bool{}
	for _, d := range []time.Duration{-30 * time.Second, 0, 30 * time.Second} {
		near[totpAt(t, secret, at.Add(d))] = true
	}
	for i := 0; ; i++ {
		if c := fmt.Sprintf("%06d", i); !near[c] {
			return c
		}
	}
}

// postFrom sends form from the client address ip (the env reads
// X-Forwarded-For when ClientIPHeader is set).
func (c *client) postFrom(path, ip string, form url.Values) (int, string, http.Header) {
	c.e.t.Helper()
	form.Set("csrf", c.csrf)
	req, _ := http.NewRequest("POST", c.e.srv.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	code, body, hdr := c.read(c.http.Do(req))
	c.remember(body)
	return code, body, hdr
}

// startEnrolment asks for a new secret on the account page and returns
// it as shown (groups of four).
func startEnrolment(t *testing.T, c *client) string {
	t.Helper()
	c.get("/dashboard/account/2fa")
	code, body, _ := c.post("/dashboard/account/2fa/start", nil)
	m := secretText.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil || !strings.Contains(body, `src="data:image/png;base64,`) {
		t.Fatalf("start enrolment: %d, secret %v, QR %v", code, m != nil, strings.Contains(body, "data:image/png"))
	}
	return m[1]
}

// enrol sets up two-factor sign-in for c's account and returns the
// secret and the recovery codes. The clock moves past the time step of
// the confirming code.
func enrol(t *testing.T, c *client) (string, []string) {
	t.Helper()
	secret := startEnrolment(t, c)
	code, body, _ := c.post("/dashboard/account/2fa/confirm", url.Values{"code": {totpAt(t, secret, c.e.clock.Now())}})
	if code != http.StatusOK {
		t.Fatalf("confirm enrolment: %d %s", code, body)
	}
	var codes []string
	for _, m := range recoveryCodes.FindAllStringSubmatch(body, -1) {
		codes = append(codes, m[1])
	}
	if len(codes) != 10 {
		t.Fatalf("%d recovery codes shown, want 10", len(codes))
	}
	c.e.clock.Advance(30 * time.Second)
	return secret, codes
}

// signedIn reports whether c has a session.
func signedIn(c *client) bool {
	code, _, _ := c.get("/dashboard/stores")
	return code == http.StatusOK
}

// passwordStep posts the password and returns the answer.
func passwordStep(c *client, email string) (int, string) {
	c.e.t.Helper()
	c.get("/dashboard/login")
	code, _, hdr := c.post("/dashboard/login", url.Values{"email": {email}, "password": {"correct horse battery"}})
	return code, hdr.Get("Location")
}

// TestTwoFactorEnrolment: the account page shows a new secret as a QR
// code and as text; a wrong code does not complete the enrolment and
// changes nothing; the right one does, shows ten recovery codes once, and
// the secret is not stored in the clear.
func TestTwoFactorEnrolment(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	other := e.client()
	if code := other.login("shop@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("second session: %d", code)
	}
	secret := startEnrolment(t, c)
	wrong := wrongCode(t, strings.ReplaceAll(secret, " ", ""), e.clock.Now())
	code, body, _ := c.post("/dashboard/account/2fa/confirm", url.Values{"code": {wrong}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, msg("err.2fa.code")) {
		t.Errorf("confirm with a wrong code: %d, says %q: %v", code, msg("err.2fa.code"), strings.Contains(body, msg("err.2fa.code")))
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Fatal("a wrong code enabled two-factor sign-in")
	}
	code, body, _ = c.post("/dashboard/account/2fa/confirm", url.Values{"code": {totpAt(t, secret, e.clock.Now())}})
	if code != http.StatusOK || len(recoveryCodes.FindAllStringSubmatch(body, -1)) != 10 {
		t.Fatalf("confirm with the right code: %d, %d recovery codes", code, len(recoveryCodes.FindAllStringSubmatch(body, -1)))
	}
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if u.TwoFactor == nil {
		t.Fatal("two-factor sign-in not enabled")
	}
	raw, _, _ := e.db.GetValue(t.Context(), userKey("shop@example.com"))
	if strings.Contains(string(raw), strings.ReplaceAll(secret, " ", "")) {
		t.Error("the secret is stored in the clear")
	}
	for _, m := range recoveryCodes.FindAllStringSubmatch(body, -1) {
		if strings.Contains(string(raw), m[1]) || strings.Contains(string(raw), strings.ReplaceAll(m[1], "-", "")) {
			t.Error("a recovery code is stored in the clear")
		}
	}
	// Other sessions of the account end: they began without a second
	// factor. The enrolling browser stays signed in.
	if !signedIn(c) {
		t.Error("the enrolling browser was signed out")
	}
	if signedIn(other) {
		t.Error("another session outlived the enrolment")
	}
	// The codes are shown once: the account page does not list them.
	if _, body, _ := c.get("/dashboard/account/2fa"); recoveryCodes.MatchString(body) || secretText.MatchString(body) {
		t.Error("the account page shows the codes or the secret again")
	}
	// Starting again while enabled is refused.
	if code, _, _ := c.post("/dashboard/account/2fa/start", nil); code != http.StatusConflict {
		t.Errorf("start while enabled: %d, want 409", code)
	}
}

// TestTwoFactorSignIn: with two factors the password yields no session,
// only a pending sign-in; a wrong code is refused; the right one signs
// in; the same code (the same time step) is refused a second time.
func TestTwoFactorSignIn(t *testing.T) {
	e := newEnv(t)
	owner := e.client()
	owner.signup("shop@example.com")
	secret, _ := enrol(t, owner)

	c := e.client()
	code, loc := passwordStep(c, "shop@example.com")
	if code != http.StatusSeeOther || loc != "/dashboard/login/2fa" {
		t.Fatalf("password step: %d to %q, want 303 to /dashboard/login/2fa", code, loc)
	}
	if signedIn(c) {
		t.Fatal("the password alone signed in")
	}
	if code, body, _ := c.get("/dashboard/login/2fa"); code != http.StatusOK || !strings.Contains(body, `name="code"`) {
		t.Fatalf("second step page: %d", code)
	}
	now := e.clock.Now()
	if code, body, _ := c.post("/dashboard/login/2fa", url.Values{"code": {wrongCode(t, secret, now)}}); code != http.StatusUnauthorized || !strings.Contains(body, msg("err.2fa.code")) {
		t.Errorf("a wrong code: %d", code)
	}
	if signedIn(c) {
		t.Fatal("a wrong code signed in")
	}
	right := totpAt(t, secret, now)
	code, _, hdr := c.post("/dashboard/login/2fa", url.Values{"code": {right}})
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/stores" || !signedIn(c) {
		t.Fatalf("the right code: %d to %q, signed in %v", code, hdr.Get("Location"), signedIn(c))
	}

	// The same code again, from another browser with the password: refused.
	other := e.client()
	passwordStep(other, "shop@example.com")
	if code, body, _ := other.post("/dashboard/login/2fa", url.Values{"code": {right}}); code != http.StatusUnauthorized || !strings.Contains(body, msg("err.2fa.code")) {
		t.Errorf("a replayed code: %d", code)
	}
	if signedIn(other) {
		t.Fatal("a replayed code signed in")
	}
	// The next time step's code signs in.
	e.clock.Advance(30 * time.Second)
	if code, _, _ := other.post("/dashboard/login/2fa", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther || !signedIn(other) {
		t.Errorf("the next code: %d", code)
	}
}

// TestTwoFactorPendingExpires: a pending sign-in lasts a few minutes;
// the right code after that is refused and signs nobody in.
func TestTwoFactorPendingExpires(t *testing.T) {
	e := newEnv(t)
	owner := e.client()
	owner.signup("shop@example.com")
	secret, _ := enrol(t, owner)
	c := e.client()
	passwordStep(c, "shop@example.com")
	e.clock.Advance(pendingLifetime + time.Second)
	code, body, _ := c.post("/dashboard/login/2fa", url.Values{"code": {totpAt(t, secret, e.clock.Now())}})
	if code != http.StatusUnauthorized || !strings.Contains(body, msg("err.2fa.expired")) {
		t.Errorf("the right code after the pending sign-in expired: %d", code)
	}
	if signedIn(c) {
		t.Error("an expired pending sign-in signed in")
	}
	// Without any pending sign-in the page says so too.
	fresh := e.client()
	fresh.get("/dashboard/login")
	if code, _, _ := fresh.post("/dashboard/login/2fa", url.Values{"code": {"123456"}}); code != http.StatusUnauthorized {
		t.Errorf("a code without a pending sign-in: %d", code)
	}
}

// TestRecoveryCodes: a recovery code signs in once; used again it is
// refused; new codes replace the old ones.
func TestRecoveryCodes(t *testing.T) {
	e := newEnv(t)
	owner := e.client()
	owner.signup("shop@example.com")
	secret, codes := enrol(t, owner)

	c := e.client()
	passwordStep(c, "shop@example.com")
	if code, _, _ := c.post("/dashboard/login/2fa", url.Values{"code": {strings.ToUpper(codes[3])}}); code != http.StatusSeeOther || !signedIn(c) {
		t.Fatalf("a recovery code: %d", code)
	}
	again := e.client()
	passwordStep(again, "shop@example.com")
	if code, body, _ := again.post("/dashboard/login/2fa", url.Values{"code": {codes[3]}}); code != http.StatusUnauthorized || !strings.Contains(body, msg("err.2fa.code")) {
		t.Errorf("a used recovery code: %d", code)
	}
	if signedIn(again) {
		t.Fatal("a used recovery code signed in")
	}
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if n := len(u.TwoFactor.Recovery); n != 9 {
		t.Errorf("%d recovery codes left, want 9", n)
	}

	// New codes: the password and a code are needed (new codes end the
	// other sessions: a session and a code alone must not); the old
	// ones stop working.
	owner.get("/dashboard/account/2fa")
	const password = "correct horse battery"
	if code, _, _ := owner.post("/dashboard/account/2fa/recovery", url.Values{"password": {password}, "code": {wrongCode(t, secret, e.clock.Now())}}); code != http.StatusUnprocessableEntity {
		t.Errorf("new recovery codes with a wrong code: %d", code)
	}
	if code, body, _ := owner.post("/dashboard/account/2fa/recovery", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusUnprocessableEntity || len(recoveryCodes.FindAllString(body, -1)) != 0 {
		t.Errorf("new recovery codes without the password: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); len(u.TwoFactor.Recovery) != 9 {
		t.Errorf("%d recovery codes after refused renewals, want the 9 left", len(u.TwoFactor.Recovery))
	}
	code, body, _ := owner.post("/dashboard/account/2fa/recovery", url.Values{"password": {password}, "code": {totpAt(t, secret, e.clock.Now())}})
	fresh := recoveryCodes.FindAllStringSubmatch(body, -1)
	if code != http.StatusOK || len(fresh) != 10 {
		t.Fatalf("new recovery codes: %d, %d shown", code, len(fresh))
	}
	old := e.client()
	passwordStep(old, "shop@example.com")
	if code, _, _ := old.post("/dashboard/login/2fa", url.Values{"code": {codes[0]}}); code != http.StatusUnauthorized {
		t.Errorf("an old recovery code after new ones were made: %d", code)
	}
	if code, _, _ := old.post("/dashboard/login/2fa", url.Values{"code": {fresh[0][1]}}); code != http.StatusSeeOther {
		t.Errorf("a new recovery code: %d", code)
	}
}

// TestTwoFactorGuessesCounted: wrong codes count as wrong passwords do:
// after maxFailsAccount of them from one network, that network is
// refused on the account (the password step too, and even the right
// code), while another network still signs in.
func TestTwoFactorGuessesCounted(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	owner := e.client()
	owner.signup("shop@example.com")
	secret, _ := enrol(t, owner)

	const stranger = "203.0.113.7"
	c := e.client()
	c.get("/dashboard/login")
	if code, _, hdr := c.postFrom("/dashboard/login", stranger, url.Values{"email": {"shop@example.com"}, "password": {"correct horse battery"}}); code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/login/2fa" {
		t.Fatalf("password step: %d", code)
	}
	c.get("/dashboard/login/2fa")
	for i := range maxFailsAccount {
		if code, _, _ := c.postFrom("/dashboard/login/2fa", stranger, url.Values{"code": {wrongCode(t, secret, e.clock.Now())}}); code != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d", i, code)
		}
	}
	if code, _, hdr := c.postFrom("/dashboard/login/2fa", stranger, url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("the right code after %d wrong ones: %d", maxFailsAccount, code)
	}
	if signedIn(c) {
		t.Fatal("signed in past the limit")
	}
	// A new password step does not reset the count.
	if code := loginFrom(t, e, "shop@example.com", "correct horse battery", stranger); code != http.StatusTooManyRequests {
		t.Errorf("the password step after %d wrong codes: %d", maxFailsAccount, code)
	}
	merchant := e.client()
	merchant.get("/dashboard/login")
	merchant.postFrom("/dashboard/login", "198.51.100.2", url.Values{"email": {"shop@example.com"}, "password": {"correct horse battery"}})
	merchant.get("/dashboard/login/2fa")
	if code, _, _ := merchant.postFrom("/dashboard/login/2fa", "198.51.100.2", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther {
		t.Errorf("the merchant from their own network: %d", code)
	}
}

// TestTwoFactorCountNotResetByPassword: a right password between wrong
// codes does not give the wrong codes back.
func TestTwoFactorCountNotResetByPassword(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	owner := e.client()
	owner.signup("shop@example.com")
	secret, _ := enrol(t, owner)
	const stranger = "203.0.113.7"
	for i := range maxFailsAccount {
		c := e.client()
		c.get("/dashboard/login")
		if code, _, _ := c.postFrom("/dashboard/login", stranger, url.Values{"email": {"shop@example.com"}, "password": {"correct horse battery"}}); code != http.StatusSeeOther {
			t.Fatalf("password step %d: %d", i, code)
		}
		c.get("/dashboard/login/2fa")
		if code, _, _ := c.postFrom("/dashboard/login/2fa", stranger, url.Values{"code": {wrongCode(t, secret, e.clock.Now())}}); code != http.StatusUnauthorized {
			t.Fatalf("wrong code %d: %d", i, code)
		}
	}
	if code := loginFrom(t, e, "shop@example.com", "correct horse battery", stranger); code != http.StatusTooManyRequests {
		t.Errorf("after %d wrong codes between right passwords: %d, want 429", maxFailsAccount, code)
	}
}

// TestTwoFactorDisable: a wrong password or code changes nothing; the
// password and a code turn two-factor sign-in off.
func TestTwoFactorDisable(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	secret, _ := enrol(t, c)
	c.get("/dashboard/account/2fa")
	if code, _, _ := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"wrong password!"}, "code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusUnprocessableEntity {
		t.Errorf("disable with a wrong password: %d", code)
	}
	if code, _, _ := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {wrongCode(t, secret, e.clock.Now())}}); code != http.StatusUnprocessableEntity {
		t.Errorf("disable with a wrong code: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor == nil {
		t.Fatal("disabled by a wrong password or code")
	}
	if code, _, hdr := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther {
		t.Fatalf("disable: %d %s", code, hdr.Get("Location"))
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Fatal("still enabled")
	}
	other := e.client()
	if code, loc := passwordStep(other, "shop@example.com"); code != http.StatusSeeOther || loc != "/dashboard/stores" {
		t.Errorf("sign-in after disabling: %d to %q", code, loc)
	}
}

// TestTwoFactorDisableStoreRequires: the app, when it is the account's
// only second factor, is not turned off while a store of the account
// requires two factors (409, as for the last passkey), and the code is
// not used up; with the requirement off it goes. The operator's reset
// turns two factors off regardless.
func TestTwoFactorDisableStoreRequires(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	secret, codes := enrol(t, c)
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/twofactor")
	if code, _, _ := c.post(base+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("requiring two factors: %d", code)
	}
	c.get("/dashboard/account/2fa")
	code, body, _ := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {codes[0]}})
	if code != http.StatusConflict || !strings.Contains(body, msg("err.2fa.storeneeds")) {
		t.Errorf("turning the only second factor off while a store requires two factors: %d", code)
	}
	u, _ := e.dash.user(t.Context(), "shop@example.com")
	if u.TwoFactor == nil || u.TwoFactor.Secret == "" {
		t.Fatal("the app went while a store requires two factors")
	}
	if len(u.TwoFactor.Recovery) != 10 {
		t.Errorf("the refused request used up a recovery code: %d left", len(u.TwoFactor.Recovery))
	}
	c.get(base + "/twofactor")
	if code, _, _ := c.post(base+"/twofactor", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("turning the requirement off: %d", code)
	}
	c.get("/dashboard/account/2fa")
	if code, _, hdr := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/account/2fa?done=2faoff" {
		t.Fatalf("turning the app off with no store requiring it: %d to %q", code, hdr.Get("Location"))
	}

	// The operator resets an account a store requires two factors of.
	enrol(t, c)
	c.get(base + "/twofactor")
	if code, _, _ := c.post(base+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("requiring two factors again: %d", code)
	}
	req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/admin/users/reset-2fa", strings.NewReader(`{"email":"shop@example.com"}`))
	req.Header.Set("Authorization", "Bearer admin-token")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("the operator's reset while a store requires two factors: %d", res.StatusCode)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Error("two factors still on after the operator's reset")
	}
}

// TestStoreRequiresTwoFactor: an owner with two factors requires them of
// the store; one without is refused the setting; a user without two
// factors who opens such a store is sent to enrol, and a form is refused.
func TestStoreRequiresTwoFactor(t *testing.T) {
	e := newEnv(t)
	op := e.client()
	op.signup("op@example.com") // the first account: the operator, who sees every store
	owner := e.client()
	owner.signup("shop@example.com")
	st := owner.createStore("Shop")
	base := "/dashboard/stores/" + st.ID

	owner.get(base + "/twofactor")
	if code, _, _ := owner.post(base+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusConflict {
		t.Errorf("requiring two factors without them: %d, want 409", code)
	}
	if req, _ := e.dash.storeTwoFactor(t.Context(), st.ID); req {
		t.Fatal("required by an owner without two factors")
	}
	enrol(t, owner)
	owner.get(base + "/twofactor")
	if code, _, _ := owner.post(base+"/twofactor", url.Values{"required": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("requiring two factors: %d", code)
	}
	if req, _ := e.dash.storeTwoFactor(t.Context(), st.ID); !req {
		t.Fatal("not required")
	}
	if code, _, _ := owner.get(base + "/"); code != http.StatusOK {
		t.Errorf("the owner with two factors: %d", code)
	}
	code, _, hdr := op.get(base + "/")
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/account/2fa?done=need2fa" {
		t.Errorf("a user without two factors: %d to %q", code, hdr.Get("Location"))
	}
	op.get("/dashboard/stores")
	if code, _, _ := op.post(base+"/keys", url.Values{"label": {"x"}}); code != http.StatusForbidden {
		t.Errorf("a form from a user without two factors: %d", code)
	}
	if _, body, _ := op.get("/dashboard/account/2fa?done=need2fa"); !strings.Contains(body, msg("done.need2fa")) {
		t.Error("the enrolment page does not say why")
	}
	enrol(t, op)
	if code, _, _ := op.get(base + "/"); code != http.StatusOK {
		t.Errorf("the operator after enrolling: %d", code)
	}
	// Turned off again, a user without two factors may open it.
	owner.get(base + "/twofactor")
	if code, _, _ := owner.post(base+"/twofactor", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("turning the requirement off: %d", code)
	}
	if req, _ := e.dash.storeTwoFactor(t.Context(), st.ID); req {
		t.Fatal("still required")
	}
}

// TestAdminResetTwoFactor: the operator's reset (kassa user reset-2fa)
// turns the account's two factors off and ends its sessions; it needs
// the admin token and names a missing account.
func TestAdminResetTwoFactor(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	enrol(t, c)
	call := func(token, email string) int {
		req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/admin/users/reset-2fa", strings.NewReader(`{"email":"`+email+`"}`))
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if code := call("wrong", "shop@example.com"); code != http.StatusUnauthorized {
		t.Errorf("without the admin token: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor == nil {
		t.Fatal("reset without the admin token")
	}
	if code := call("admin-token", "nobody@example.com"); code != http.StatusNotFound {
		t.Errorf("an unknown account: %d", code)
	}
	if code := call("admin-token", "Shop@example.com"); code != http.StatusOK {
		t.Fatalf("reset: %d", code)
	}
	if u, _ := e.dash.user(t.Context(), "shop@example.com"); u.TwoFactor != nil {
		t.Error("two factors still on after the reset")
	}
	if signedIn(c) {
		t.Error("the account's session outlived the reset")
	}
	if code, loc := passwordStep(e.client(), "shop@example.com"); code != http.StatusSeeOther || loc != "/dashboard/stores" {
		t.Errorf("sign-in after the reset: %d to %q", code, loc)
	}
}

// TestTwoFactorStrings: every string key the two-factor templates and
// code name is in the catalogue (a missing one shows as "!key").
func TestTwoFactorStrings(t *testing.T) {
	keys := regexp.MustCompile(`"((?:2fa|passkey|err\.2fa|done)\.[a-z0-9.]+)"`)
	for _, name := range []string{"twofactor.go", "passkey.go", "templates/twofactor.html", "templates/login_2fa.html", "templates/store_twofactor.html"} {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range keys.FindAllStringSubmatch(string(data), -1) {
			if _, ok := strs[m[1]]; !ok {
				t.Errorf("%s names %q, which has no string", name, m[1])
			}
		}
	}
}
