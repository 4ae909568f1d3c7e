package dashboard

import (
	"net/http"
	"net/url"
	"testing"
	"time"
)

// A sign-in credential taken away (a passkey, the app, two factors, the
// recovery codes) ends every other session of the account, which may
// have signed in with it; the session that took it away goes on. Adding
// a factor to an account with two factors leaves the sessions.

// signedOut reports whether c's next request is sent to sign in.
func signedOut(c *client) bool {
	code, _, hdr := c.get("/dashboard/stores")
	return code == http.StatusSeeOther && hdr.Get("Location") == "/dashboard/login"
}

// checkSessionsAfter checks that other is signed out and acting still
// signed in, after what (a credential taken away).
func checkSessionsAfter(t *testing.T, what string, acting, other *client) {
	t.Helper()
	if !signedOut(other) {
		t.Errorf("another session outlived %s", what)
	}
	if !signedIn(acting) {
		t.Errorf("the session that made %s was signed out", what)
	}
	if code, _, _ := acting.get("/dashboard/account/2fa"); code != http.StatusOK {
		t.Errorf("the account page of the acting session after %s: %d", what, code)
	}
}

// TestSessionsEndWhenPasskeyRemoved: a browser signed in with a passkey
// (alone) stays when the owner adds another passkey, and is signed out
// when the owner removes that passkey, one of two.
func TestSessionsEndWhenPasskeyRemoved(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	stolen, kept := newSoftKey(t, "localhost", e.dash.PublicURL), newSoftKey(t, "localhost", e.dash.PublicURL)
	enrolPasskey(t, c, stolen)
	laptop := e.client()
	if code, _ := passkeyAlone(t, laptop, stolen, "198.51.100.7"); code != http.StatusOK || !signedIn(laptop) {
		t.Fatalf("sign-in with the passkey: %d", code)
	}
	registerPasskey(t, c, kept)
	if !signedIn(laptop) {
		t.Fatal("adding a passkey ended another session")
	}
	if code, _ := removePasskey(c, stolen, "correct horse battery", ""); code != http.StatusSeeOther {
		t.Fatalf("removing one of two passkeys: %d", code)
	}
	checkSessionsAfter(t, "the removal of a passkey", c, laptop)
}

// TestSessionsEndWhenLastPasskeyRemoved: removing the last passkey (two
// factors off) signs out a browser that signed in with it.
func TestSessionsEndWhenLastPasskeyRemoved(t *testing.T) {
	e := newEnv(t, onLocalhost)
	c := e.client()
	c.signup("shop@example.com")
	key := newSoftKey(t, "localhost", e.dash.PublicURL)
	codes := enrolPasskey(t, c, key)
	laptop := e.client()
	passwordStep(laptop, "shop@example.com")
	if code, _ := passkeyStep(t, laptop, key); code != http.StatusOK || !signedIn(laptop) {
		t.Fatalf("sign-in with the passkey: %d", code)
	}
	if code, _ := removePasskey(c, key, "correct horse battery", codes[0]); code != http.StatusSeeOther {
		t.Fatalf("removing the last passkey: %d", code)
	}
	checkSessionsAfter(t, "the removal of the last passkey", c, laptop)
}

// TestSessionsEndWhenAppRemoved: removing the authenticator app, while a
// passkey remains or as the last factor (two factors off), signs out a
// browser that signed in with the app.
func TestSessionsEndWhenAppRemoved(t *testing.T) {
	for _, tc := range []struct {
		name    string
		passkey bool
		done    string
	}{{"passkey remains", true, "totpoff"}, {"two factors off", false, "2faoff"}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, onLocalhost)
			c := e.client()
			c.signup("shop@example.com")
			secret, _ := enrol(t, c)
			if tc.passkey {
				registerPasskey(t, c, newSoftKey(t, "localhost", e.dash.PublicURL))
			}
			phone := e.client()
			passwordStep(phone, "shop@example.com")
			if code, _, _ := phone.post("/dashboard/login/2fa", url.Values{"code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusSeeOther || !signedIn(phone) {
				t.Fatalf("sign-in with the app: %d", code)
			}
			e.clock.Advance(30 * time.Second)
			c.get("/dashboard/account/2fa")
			code, _, hdr := c.post("/dashboard/account/2fa/disable", url.Values{"password": {"correct horse battery"}, "code": {totpAt(t, secret, e.clock.Now())}})
			if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/account/2fa?done="+tc.done {
				t.Fatalf("removing the app: %d to %q", code, hdr.Get("Location"))
			}
			checkSessionsAfter(t, "the removal of the app", c, phone)
		})
	}
}

// TestSessionsEndWhenRecoveryCodesRenewed: new recovery codes take the
// old ones away, and sign out a browser that signed in with one.
func TestSessionsEndWhenRecoveryCodesRenewed(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("shop@example.com")
	secret, codes := enrol(t, c)
	borrowed := e.client()
	passwordStep(borrowed, "shop@example.com")
	if code, _, _ := borrowed.post("/dashboard/login/2fa", url.Values{"code": {codes[0]}}); code != http.StatusSeeOther || !signedIn(borrowed) {
		t.Fatalf("sign-in with a recovery code: %d", code)
	}
	c.get("/dashboard/account/2fa")
	if code, _, _ := c.post("/dashboard/account/2fa/recovery", url.Values{"password": {"correct horse battery"}, "code": {totpAt(t, secret, e.clock.Now())}}); code != http.StatusOK {
		t.Fatalf("new recovery codes: %d", code)
	}
	checkSessionsAfter(t, "new recovery codes", c, borrowed)
}
