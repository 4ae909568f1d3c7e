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
// virtual authenticator; then four sign-ins: the password and then a
// code from the app, or the passkey; the passkey alone from the login
// page (no email, no password); the password and a recovery code, which
// is then refused a second time. A teammate then turns two factors on
// with a passkey alone and signs in with it. The merchant's store requires two factors and
// the operator, without them, is sent to set them up. Each page shown
// passes axe and fits 360 px; with -screenshots it is saved.
func TestBrowserTwoFactor(t *testing.T) {
	if e2eCluster() {
		t.Skip("skipped on a cluster: a passkey's relying party is the fixed localhost address this test gives its server, and the cluster harness would give every node that one address")
	}
	port := strconv.Itoa(freePort(t))
	startServer(t, t.TempDir(), "--dev", "--listen", "127.0.0.1:"+port, "--public-url", "http://localhost:"+port)
	base := "http://localhost:" + port
	b := newBrowser(t)
	b.do("virtual authenticator", addVirtualAuthenticator())
	// shot checks the page's accessibility and, at 1280 and 360 px,
	// that nothing is wider than the screen; with -screenshots it saves
	// both.
	shot := func(name string) {
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
	submit := func(what, sel string) {
		b.markPage()
		b.do(what, chromedp.Click(chromedp.CSS(sel)))
		waitNewPage(b, what)
	}
	logIn := func(email string) {
		b.do("log in", chromedp.Navigate(base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), email),
			chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
		submit("submit the password", `main button[type=submit]`)
	}
	password := func() {
		logIn("merchant@example.com")
		if h1 := b.text("h1"); h1 != "Two-factor sign-in" {
			t.Fatalf("after the password the page reads %q: %s", h1, b.text("main"))
		}
	}
	signUp := func(email string) {
		b.do("open sign-up", chromedp.Navigate(base+"/dashboard/signup"), chromedp.WaitVisible(chromedp.CSS("#email")),
			chromedp.SendKeys(chromedp.CSS("#email"), email),
			chromedp.SendKeys(chromedp.CSS("#password"), "correct horse battery"))
		submit("sign up", `main button[type=submit]`)
	}
	signedIn := func(how string) {
		t.Helper()
		b.do("stores after "+how, chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
		b.do("log out after "+how, chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))
	}

	// The first account is the operator, who sees every store; it has
	// no second factor.
	signUp("op@example.com")
	b.do("log out the operator", chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))
	signUp("merchant@example.com")
	b.do("account page", chromedp.Navigate(base+"/dashboard/account"), chromedp.WaitVisible(chromedp.CSS("#twofactor-link")))
	b.markPage()
	b.do("open two-factor", chromedp.Click(chromedp.CSS("#twofactor-link")))
	waitNewPage(b, "open two-factor")
	submit("set up", "#twofactor-start")
	if !b.eval("QR code drawn", `(() => { const i = document.getElementById("totp-qr"); return !!i && i.complete && i.naturalWidth > 100; })()`) {
		t.Fatal("no QR code on the enrolment page")
	}
	secret := strings.ReplaceAll(b.text("#totp-secret"), " ", "")
	shot("2fa-enrol")
	code, err := totp.GenerateCode(secret, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	b.do("first code", chromedp.SendKeys(chromedp.CSS("#code"), code))
	submit("turn on", `#enrol button[type=submit]`)
	recovery := browserRun(b, "recovery codes", chromedp.Evaluate[[]string](`[...document.querySelectorAll("code.recovery")].map(c => c.textContent)`))
	if len(recovery) != 10 {
		t.Fatalf("%d recovery codes shown: %s", len(recovery), b.text("main"))
	}
	shot("2fa-recovery")

	b.do("two-factor page", chromedp.Navigate(base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#passkey-add")))
	submit("add a passkey", "#passkey-add")
	if n := b.text("#passkey-count"); n != "1" {
		t.Fatalf("passkeys after adding one: %q (%s)", n, b.text("main"))
	}
	shot("2fa-account")

	// The merchant's store requires two factors.
	b.do("new store", chromedp.Navigate(base+"/dashboard/stores/new"), chromedp.WaitVisible(chromedp.CSS("#name")),
		chromedp.SendKeys(chromedp.CSS("#name"), "Corner Café"))
	submit("create the store", `main button[type=submit]`)
	storeID := b.text("#store-id")
	b.markPage()
	b.do("open the store's two-factor page", chromedp.Click(chromedp.CSS("#twofactor-link")))
	waitNewPage(b, "open the store's two-factor page")
	b.do("require two factors", chromedp.Click(chromedp.CSS("#required")))
	submit("save the requirement", `main button[type=submit]`)
	if !b.eval("required", `document.getElementById("required").checked`) {
		t.Fatal("the requirement was not saved")
	}
	shot("2fa-store")
	b.do("log out", chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))

	// The operator, without two factors, is sent to set them up.
	logIn("op@example.com")
	b.markPage()
	b.do("operator opens the store", chromedp.Navigate(base+"/dashboard/stores/"+storeID+"/"))
	waitNewPage(b, "operator opens the store")
	if got := b.text(".notice.ok"); !strings.Contains(got, "requires two-factor sign-in") || !strings.Contains(b.text("h1"), "Two-factor") {
		t.Fatalf("the operator without two factors sees %q: %s", got, b.text("main"))
	}
	shot("2fa-required")
	b.do("log out the operator", chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))

	// A code from the app: the next time step's, as the enrolment used
	// this one's and a step is accepted once.
	password()
	shot("2fa-signin")
	code, err = totp.GenerateCode(secret, time.Now().Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	b.do("code", chromedp.SendKeys(chromedp.CSS("#code"), code))
	submit("sign in with the code", `main form button[type=submit]`)
	signedIn("the code")

	password()
	submit("sign in with the passkey", "#passkey-use")
	signedIn("the passkey")

	// The passkey alone, from the login page: neither email nor
	// password; it is two factors, so the store that requires them
	// opens.
	b.do("login page", chromedp.Navigate(base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#passkey-signin")))
	shot("login-passkey")
	submit("sign in with the passkey alone", "#passkey-signin")
	b.do("stores after the passkey alone", chromedp.WaitVisible(chromedp.CSS(`a[href="/dashboard/stores/new"]`)))
	b.markPage()
	b.do("open the store after the passkey alone", chromedp.Navigate(base+"/dashboard/stores/"+storeID+"/"))
	waitNewPage(b, "open the store after the passkey alone")
	if path := browserRun(b, "path", chromedp.Evaluate[string](`location.pathname`)); path != "/dashboard/stores/"+storeID+"/" {
		t.Fatalf("signed in with the passkey alone, the store that requires two factors sends to %s: %s", path, b.text("main"))
	}
	shot("passkey-alone-store")
	b.do("log out after the passkey alone", chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))

	password()
	b.do("recovery code", chromedp.SendKeys(chromedp.CSS("#code"), recovery[0]))
	submit("sign in with a recovery code", `main form button[type=submit]`)
	signedIn("a recovery code")

	// The same recovery code again is refused.
	password()
	b.do("used recovery code", chromedp.SendKeys(chromedp.CSS("#code"), recovery[0]))
	submit("sign in with a used recovery code", `main form button[type=submit]`)
	if got := b.text("#error"); !strings.Contains(got, "Wrong code") {
		t.Errorf("a used recovery code: %q", got)
	}

	// A teammate turns two factors on with a passkey alone (no app):
	// the recovery codes are shown once; the second step asks for the
	// passkey, which signs in.
	b.do("open the login page", chromedp.Navigate(base+"/dashboard/login"), chromedp.WaitVisible(chromedp.CSS("#email")))
	signUp("team@example.com")
	b.do("two-factor page of the teammate", chromedp.Navigate(base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#passkey-enrol")))
	submit("set up with a passkey", "#passkey-enrol")
	if n := len(browserRun(b, "teammate's recovery codes", chromedp.Evaluate[[]string](`[...document.querySelectorAll("code.recovery")].map(c => c.textContent)`))); n != 10 {
		t.Fatalf("%d recovery codes shown after the passkey enrolment: %s", n, b.text("main"))
	}
	b.do("two-factor page, passkeys only", chromedp.Navigate(base+"/dashboard/account/2fa"), chromedp.WaitVisible(chromedp.CSS("#twofactor-passkeys")))
	shot("2fa-passkey-only")
	b.do("log out the teammate", chromedp.Click(chromedp.CSS("header form button")), chromedp.WaitVisible(chromedp.CSS("#email")))
	logIn("team@example.com")
	if h1 := b.text("h1"); h1 != "Two-factor sign-in" {
		t.Fatalf("after the teammate's password the page reads %q: %s", h1, b.text("main"))
	}
	submit("the teammate signs in with the passkey", "#passkey-use")
	signedIn("the teammate's passkey")
}
