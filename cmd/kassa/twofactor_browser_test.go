package main

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpwebauthn "github.com/chromedp/cdproto/webauthn"
	"github.com/chromedp/chromedp"
	"github.com/pquerna/otp/totp"
)

// addVirtualAuthenticator gives the tab Chromium's virtual platform
// authenticator (user present and verified at once), as a computer with
// a fingerprint reader would have.
func addVirtualAuthenticator() chromedp.Action[chromedp.Void] {
	return func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, cdpwebauthn.Enable, cdpwebauthn.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, cdpwebauthn.AddVirtualAuthenticator, cdpwebauthn.AddVirtualAuthenticatorParams{
			Options: &cdpwebauthn.VirtualAuthenticatorOptions{Protocol: cdpwebauthn.AuthenticatorProtocolCtap2,
				Transport: cdpwebauthn.AuthenticatorTransportInternal, HasResidentKey: true, HasUserVerification: true,
				IsUserVerified: true, AutomaticPresenceSimulation: true}})
		return chromedp.Void{}, err
	}
}

// freePort is a loopback port nothing listens on (at the time of asking).
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestBrowserTwoFactor sets up two-factor sign-in in Chromium as a
// merchant does, on a server whose public URL is http://localhost (a
// passkey's relying party is a host name): the QR code and key, the
// first code, the recovery codes; a passkey added with Chromium's
// virtual authenticator. The merchant's store requires two factors and
// the operator, without them, is sent to set them up. Then four
// sign-ins: the password and then a code from the app, or the passkey;
// the passkey alone from the login page (no email, no password); the
// password and a recovery code, which is then refused a second time. A
// teammate then turns two factors on with a passkey alone and signs in
// with it. Each page shown passes axe and fits 360 px; with -screenshots
// it is saved.
func TestBrowserTwoFactor(t *testing.T) {
	if e2eCluster() {
		t.Skip("skipped on a cluster: a passkey's relying party is the fixed localhost address this test gives its server, and the cluster harness would give every node that one address")
	}
	port := strconv.Itoa(freePort(t))
	startServer(t, t.TempDir(), "--dev", "--listen", "127.0.0.1:"+port, "--public-url", "http://localhost:"+port)
	k := &twoFactorScenario{t: t, base: "http://localhost:" + port, b: newBrowser(t)}
	k.b.do("virtual authenticator", addVirtualAuthenticator())

	step(t, "the operator and then the merchant sign up", k.signUpOperatorAndMerchant)
	step(t, "the merchant turns two factors on: QR code, first code, recovery codes", k.enrolWithApp)
	step(t, "the merchant adds a passkey", k.addPasskey)
	step(t, "the merchant's store requires two factors", k.storeRequiresTwoFactors)
	step(t, "the operator, without two factors, is sent to set them up", k.operatorSentToSetUp)
	step(t, "sign in with the password and a code from the app", k.signInWithCode)
	step(t, "sign in with the password and the passkey", k.signInWithPasskey)
	step(t, "sign in with the passkey alone; the store opens", k.signInWithPasskeyAlone)
	step(t, "sign in with the password and a recovery code", k.signInWithRecoveryCode)
	step(t, "the used recovery code is refused", k.usedRecoveryCodeRefused)
	step(t, "a teammate turns two factors on with a passkey alone", k.teammateEnrolsPasskey)
	step(t, "the teammate signs in with the password and the passkey", k.teammateSignsIn)
}

// twoFactorScenario is TestBrowserTwoFactor's server address and
// browser, and what a step leaves for the next.
type twoFactorScenario struct {
	t    *testing.T
	base string // the server's public URL
	b    *browser

	secret   string   // the merchant's TOTP key
	recovery []string // the merchant's recovery codes
	storeID  string   // the merchant's store, which requires two factors
}

// shot checks the page's accessibility and, at 1280 and 360 px, that
// nothing is wider than the screen; with -screenshots it saves both.
func (k *twoFactorScenario) shot(name string) {
	t, b := k.t, k.b
	b.noProblems()
	b.checkAccessibility(name)
	for _, size := range []struct {
		name          string
		width, height int64
	}{{"phone", 360, 780}, {"desktop", 1280, 860}} {
		b.do("viewport", chromedp.EmulateViewport(size.width, size.height))
		if wide := browserRun(b, "page width", chromedp.Evaluate[int64](`document.documentElement.scrollWidth`)); wide > size.width {
			t.Errorf("%s at %d px is %d px wide", name, size.width, wide)
		}
		png := browserRun(b, "screenshot "+name, chromedp.CaptureScreenshot())
		if screenshots() {
			writeScreenshot(t, "dashboard-"+name+"-"+size.name+".png", png)
		}
	}
}

// submit clicks sel and waits for the page it leads to.
func (k *twoFactorScenario) submit(what, sel string) {
	k.b.markPage()
	k.b.do(what, chromedp.Click(chromedp.CSS(sel)))
	waitNewPage(k.b, what)
}

// logIn submits email's password on the login page.
func (k *twoFactorScenario) logIn(email string) {
	k.b.do("log in", chromedp.Navigate(k.base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	k.submit("submit the password", `main button[type=submit]`)
}

// password logs the merchant in with the password and checks that the
// second step is asked for.
func (k *twoFactorScenario) password() {
	k.logIn("merchant@example.com")
	if h1 := k.b.text("h1"); h1 != "Two-factor sign-in" {
		k.t.Fatalf("after the password the page reads %q: %s", h1, k.b.text("main"))
	}
}

func (k *twoFactorScenario) signUp(email string) {
	k.b.do("open sign-up", chromedp.Navigate(k.base+"/dashboard/signup"), chromedp.WaitVisible(chromedp.CSS("#email")),
		chromedp.SendKeys(chromedp.CSS("#email"), email),
		chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
	k.submit("sign up", `main button[type=submit]`)
}

// logOut clicks Log out and waits for the login page.
func (k *twoFactorScenario) logOut(what string) {
	k.b.do(what, chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))
}

// signedIn waits for the store list, which a signed-in user sees, and
// logs out.
func (k *twoFactorScenario) signedIn(how string) {
	k.t.Helper()
	k.b.do("stores after "+how, chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
	k.logOut("log out after " + how)
}

// signUpOperatorAndMerchant signs up the first account, the operator,
// who sees every store and has no second factor; then the merchant.
func (k *twoFactorScenario) signUpOperatorAndMerchant() {
	k.signUp("op@example.com")
	k.logOut("log out the operator")
	k.signUp("merchant@example.com")
}

// enrolWithApp sets up the app from the account page: the QR code
// drawn, the key, the first code, then ten recovery codes shown.
func (k *twoFactorScenario) enrolWithApp() {
	t, b := k.t, k.b
	b.do("account page", chromedp.Navigate(k.base+"/dashboard/account"), chromedp.WaitVisible(chromedp.CSS("#twofactor-link")))
	b.markPage()
	b.do("open two-factor", chromedp.Click(chromedp.CSS("#twofactor-link")))
	waitNewPage(b, "open two-factor")
	k.submit("set up", "#twofactor-start")
	if !b.eval("QR code drawn", `(() => { const i = document.getElementById("totp-qr"); return !!i && i.complete && i.naturalWidth > 100; })()`) {
		t.Fatal("no QR code on the enrolment page")
	}
	k.secret = strings.ReplaceAll(b.text("#totp-secret"), " ", "")
	k.shot("2fa-enrol")
	code, err := totp.GenerateCode(k.secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.do("first code", chromedp.SendKeys(chromedp.CSS("#code"), code))
	k.submit("turn on", `#enrol button[type=submit]`)
	k.recovery = browserRun(b, "recovery codes", chromedp.Evaluate[[]string](`[...document.querySelectorAll("code.recovery")].map(c => c.textContent)`))
	if len(k.recovery) != 10 {
		t.Fatalf("%d recovery codes shown: %s", len(k.recovery), b.text("main"))
	}
	k.shot("2fa-recovery")
}

// addPasskey adds a passkey on the two-factor page; it counts one.
func (k *twoFactorScenario) addPasskey() {
	b := k.b
	b.do("two-factor page", chromedp.Navigate(k.base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#passkey-add")))
	k.submit("add a passkey", "#passkey-add")
	if n := b.text("#passkey-count"); n != "1" {
		k.t.Fatalf("passkeys after adding one: %q (%s)", n, b.text("main"))
	}
	k.shot("2fa-account")
}

// storeRequiresTwoFactors creates the merchant's store and saves its
// requirement of two factors; then the merchant logs out.
func (k *twoFactorScenario) storeRequiresTwoFactors() {
	b := k.b
	b.do("new store", chromedp.Navigate(k.base+"/dashboard/stores/new"), chromedp.WaitVisible(chromedp.CSS("#name")),
		chromedp.SendKeys(chromedp.CSS("#name"), "Corner Café"))
	k.submit("create the store", `main button[type=submit]`)
	k.storeID = b.text("#store-id")
	b.markPage()
	b.do("open the store's two-factor page", chromedp.Click(chromedp.CSS("#twofactor-link")))
	waitNewPage(b, "open the store's two-factor page")
	b.do("require two factors", chromedp.Click(chromedp.CSS("#required")))
	k.submit("save the requirement", `main button[type=submit]`)
	if !b.eval("required", `document.getElementById("required").checked`) {
		k.t.Fatal("the requirement was not saved")
	}
	k.shot("2fa-store")
	k.logOut("log out")
}

// operatorSentToSetUp opens the store as the operator, who has no
// second factor: the two-factor set-up page, with a notice that the
// store requires it.
func (k *twoFactorScenario) operatorSentToSetUp() {
	b := k.b
	k.logIn("op@example.com")
	b.markPage()
	b.do("operator opens the store", chromedp.Navigate(k.base+"/dashboard/stores/"+k.storeID+"/"))
	waitNewPage(b, "operator opens the store")
	if got := b.text(".notice.ok"); !strings.Contains(got, "requires two-factor sign-in") || !strings.Contains(b.text("h1"), "Two-factor") {
		k.t.Fatalf("the operator without two factors sees %q: %s", got, b.text("main"))
	}
	k.shot("2fa-required")
	k.logOut("log out the operator")
}

// signInWithCode gives a code from the app: the next time step's, as
// the enrolment used this one's and a step is accepted once.
func (k *twoFactorScenario) signInWithCode() {
	k.password()
	k.shot("2fa-signin")
	code, err := totp.GenerateCode(k.secret, time.Now().Add(30*time.Second))
	if err != nil {
		k.t.Fatal(err)
	}
	k.b.do("code", chromedp.SendKeys(chromedp.CSS("#code"), code))
	k.submit("sign in with the code", `main form button[type=submit]`)
	k.signedIn("the code")
}

func (k *twoFactorScenario) signInWithPasskey() {
	k.password()
	k.submit("sign in with the passkey", "#passkey-use")
	k.signedIn("the passkey")
}

// signInWithPasskeyAlone signs in from the login page with the passkey
// alone, neither email nor password; it is two factors, so the store
// that requires them opens.
func (k *twoFactorScenario) signInWithPasskeyAlone() {
	b := k.b
	b.do("login page", chromedp.Navigate(k.base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#passkey-signin")))
	k.shot("login-passkey")
	k.submit("sign in with the passkey alone", "#passkey-signin")
	b.do("stores after the passkey alone", chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
	b.markPage()
	b.do("open the store after the passkey alone", chromedp.Navigate(k.base+"/dashboard/stores/"+k.storeID+"/"))
	waitNewPage(b, "open the store after the passkey alone")
	if path := browserRun(b, "path", chromedp.Evaluate[string](`location.pathname`)); path != "/dashboard/stores/"+k.storeID+"/" {
		k.t.Fatalf("signed in with the passkey alone, the store that requires two factors sends to %s: %s", path, b.text("main"))
	}
	k.shot("passkey-alone-store")
	k.logOut("log out after the passkey alone")
}

func (k *twoFactorScenario) signInWithRecoveryCode() {
	k.password()
	k.b.do("recovery code", chromedp.SendKeys(chromedp.CSS("#code"), k.recovery[0]))
	k.submit("sign in with a recovery code", `main form button[type=submit]`)
	k.signedIn("a recovery code")
}

// usedRecoveryCodeRefused gives the same recovery code again: Wrong code.
func (k *twoFactorScenario) usedRecoveryCodeRefused() {
	k.password()
	k.b.do("used recovery code", chromedp.SendKeys(chromedp.CSS("#code"), k.recovery[0]))
	k.submit("sign in with a used recovery code", `main form button[type=submit]`)
	if got := k.b.text("#error"); !strings.Contains(got, "Wrong code") {
		k.t.Errorf("a used recovery code: %q", got)
	}
}

// teammateEnrolsPasskey signs a teammate up, who turns two factors on
// with a passkey alone (no app): ten recovery codes are shown once, and
// the two-factor page lists passkeys only.
func (k *twoFactorScenario) teammateEnrolsPasskey() {
	b := k.b
	b.do("open the login page", chromedp.Navigate(k.base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#email")))
	k.signUp("team@example.com")
	b.do("two-factor page of the teammate", chromedp.Navigate(k.base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#passkey-enrol")))
	k.submit("set up with a passkey", "#passkey-enrol")
	if n := len(browserRun(b, "teammate's recovery codes", chromedp.Evaluate[[]string](`[...document.querySelectorAll("code.recovery")].map(c => c.textContent)`))); n != 10 {
		k.t.Fatalf("%d recovery codes shown after the passkey enrolment: %s", n, b.text("main"))
	}
	b.do("two-factor page, passkeys only", chromedp.Navigate(k.base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#twofactor-passkeys")))
	k.shot("2fa-passkey-only")
	k.logOut("log out the teammate")
}

// teammateSignsIn gives the teammate's password; the second step asks
// for the passkey, which signs in.
func (k *twoFactorScenario) teammateSignsIn() {
	k.logIn("team@example.com")
	if h1 := k.b.text("h1"); h1 != "Two-factor sign-in" {
		k.t.Fatalf("after the teammate's password the page reads %q: %s", h1, k.b.text("main"))
	}
	k.submit("the teammate signs in with the passkey", "#passkey-use")
	k.signedIn("the teammate's passkey")
}
