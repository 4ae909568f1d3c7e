package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestFormWithoutCSRFIsForbidden posts forms with no token and with a
// wrong one, signed in and not: 403, and nothing changes.
func TestFormWithoutCSRFIsForbidden(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.get("/dashboard/signup")
	if code, _, _ := c.postRaw("/dashboard/signup", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}}); code != http.StatusForbidden {
		t.Errorf("signup without token: %d", code)
	}
	if ok, _ := e.dash.anyUser(t.Context()); ok {
		t.Fatal("an account was made without a CSRF token")
	}
	c.signup("a@example.com")
	st := c.createStore("Shop")
	for _, form := range []url.Values{{}, {"csrf": {"wrong"}}, {"csrf": {""}}} {
		form.Set("label", "sneaky")
		if code, _, _ := c.postRaw("/dashboard/stores/"+st.ID+"/keys", form); code != http.StatusForbidden {
			t.Errorf("key form with %v: %d", form["csrf"], code)
		}
		if code, _, _ := c.postRaw("/dashboard/logout", url.Values{"csrf": form["csrf"]}); code != http.StatusForbidden {
			t.Errorf("logout with %v: %d", form["csrf"], code)
		}
	}
	after, _ := e.db.Store(t.Context(), st.ID)
	if len(after.APIKeys) != 1 {
		t.Errorf("a key was made without a CSRF token: %+v", after.APIKeys)
	}
	// Another browser's token does not work either.
	other := e.client()
	other.signup("b@example.com")
	if code, _, _ := c.post("/dashboard/stores/"+st.ID+"/keys", url.Values{"label": {"x"}, "csrf": {other.csrf}}); code != http.StatusForbidden {
		t.Errorf("another session's token: %d", code)
	}
}

// TestSessionCookieFlags checks the cookie: HttpOnly, SameSite, scoped to
// the dashboard, and Secure when the public URL is https.
func TestSessionCookieFlags(t *testing.T) {
	for _, public := range []string{"http://127.0.0.1:1", "https://pay.example.com"} {
		e := newEnv(t, func(d *Deps) { d.PublicURL = public })
		c := e.client()
		c.get("/dashboard/signup")
		_, _, signedUp := c.post("/dashboard/signup", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}})
		other := e.client()
		other.get("/dashboard/login")
		_, _, loggedIn := other.post("/dashboard/login", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}})
		for what, hdr := range map[string]http.Header{"sign-up": signedUp, "login": loggedIn} {
			res := http.Response{Header: hdr}
			var got *http.Cookie
			for _, ck := range res.Cookies() {
				if ck.Name == sessionCookie {
					got = ck
				}
			}
			if got == nil {
				t.Fatalf("%s %s: no session cookie in %v", public, what, hdr)
			}
			secure := strings.HasPrefix(public, "https")
			if !got.HttpOnly || got.SameSite != http.SameSiteLaxMode || got.Path != "/dashboard" || got.Secure != secure || len(got.Value) < 40 {
				t.Errorf("%s %s: cookie %+v", public, what, got)
			}
		}
	}
}

// TestLogoutEndsSessionOnServer replays the session cookie after logout:
// the server no longer knows it.
func TestLogoutEndsSessionOnServer(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	u, _ := url.Parse(e.srv.URL + "/dashboard/")
	var token string
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == sessionCookie {
			token = ck.Value
		}
	}
	if code, _, _ := c.post("/dashboard/logout", nil); code != http.StatusSeeOther {
		t.Fatalf("logout: %d", code)
	}
	replay := e.client()
	replay.http.Jar.SetCookies(u, []*http.Cookie{{Name: sessionCookie, Value: token, Path: "/dashboard"}})
	code, _, hdr := replay.get("/dashboard/stores")
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/login" {
		t.Errorf("old session after logout: %d %s", code, hdr.Get("Location"))
	}
	if s, err := e.dash.session(t.Context(), token); s != nil || err != nil {
		t.Errorf("session record after logout: %v, %v", s, err)
	}
}

// TestLoginRateLimit fails sign-ins until the limit of the account
// from that address answers 429, even with the right password; the
// account from another address, and another account, still sign in;
// an address that failed on many accounts is refused for all; after the
// window the account signs in again.
func TestLoginRateLimit(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	for _, email := range []string{"a@example.com", "b@example.com"} {
		if _, err := e.dash.createUser(t.Context(), newAccount{email: email, password: "correct horse battery"}); err != nil {
			t.Fatal(err)
		}
	}
	login := func(email, password, ip string) int { return loginFrom(t, e, email, password, ip) }
	for i := range maxFailsAccount {
		if code := login("a@example.com", "wrong password!", "10.0.0.1"); code != http.StatusUnauthorized {
			t.Fatalf("failure %d: %d", i, code)
		}
	}
	if code := login("a@example.com", "correct horse battery", "10.0.0.1"); code != http.StatusTooManyRequests {
		t.Errorf("account over its limit from the failing address: %d", code)
	}
	if code := login("a@example.com", "correct horse battery", "10.0.1.1"); code != http.StatusSeeOther {
		t.Errorf("the account from another address: %d", code)
	}
	if code := login("b@example.com", "correct horse battery", "10.0.1.2"); code != http.StatusSeeOther {
		t.Errorf("another account: %d", code)
	}
	// Per address: many accounts from one address.
	for i := range maxFailsAddress {
		login("nobody"+itoa(int64(i))+"@example.com", "wrong password!", "10.9.9.9")
	}
	if code := login("b@example.com", "correct horse battery", "10.9.9.9"); code != http.StatusTooManyRequests {
		t.Errorf("address over its limit: %d", code)
	}
	e.clock.Advance(loginWindow)
	if code := login("a@example.com", "correct horse battery", "10.0.0.1"); code != http.StatusSeeOther {
		t.Errorf("after the window: %d", code)
	}
}

// loginFrom posts a sign-in from client address ip (X-Forwarded-For,
// which e must trust) and returns the status.
func loginFrom(t *testing.T, e *env, email, password, ip string) int {
	t.Helper()
	c := e.client()
	c.get("/dashboard/login")
	req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/login", strings.NewReader(url.Values{"email": {email}, "password": {password}, "csrf": {c.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestMain makes new password hashes cheap: the tests sign in often,
// and their subject is not argon2's cost. TestPasswordHash checks the
// production parameters.
func TestMain(m *testing.M) {
	production = argon
	argon = argonParams{time: 1, memory: 64, threads: 1}
	os.Exit(m.Run())
}

var production argonParams

// TestPasswordHash checks the argon2id encoding round trip with the
// production parameters, and that a hash made with others still checks.
func TestPasswordHash(t *testing.T) {
	cheap := hashPassword("correct horse battery")
	if a, b := hashPassword("x"), hashPassword("x"); a == b {
		t.Error("no salt")
	}
	argon = production
	defer func() { argon = argonParams{time: 1, memory: 64, threads: 1} }()
	if !checkPassword(cheap, "correct horse battery") {
		t.Error("a hash with other parameters does not check")
	}
	h := hashPassword("correct horse battery")
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Errorf("hash = %s", h)
	}
	if !checkPassword(h, "correct horse battery") || checkPassword(h, "correct horse batterY") || checkPassword("garbage", "") {
		t.Error("checkPassword is wrong")
	}
}

// TestOtherUsersStoreIsInvisible tries every dashboard route of a store,
// found by walking the router, as a user who does not own it: each one
// answers 404, and with that user's own store in the path but the other
// store's invoice, webhook, delivery, key or pay link, 404 too. Nothing
// changes. The operator sees both stores.
func TestOtherUsersStoreIsInvisible(t *testing.T) {
	e := newEnv(t)
	// The first account is the operator; Alice and Bob are merchants.
	op := e.client()
	op.signup("operator@example.com")
	alice, bob := e.client(), e.client()
	alice.signup("alice@example.com")
	bob.signup("bob@example.com")
	stA, stB := alice.createStore("Alice"), bob.createStore("Bob")

	// Alice's objects: an invoice, a pay link, a webhook with a delivery.
	ctx := t.Context()
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	defer receiver.Close()
	hook, err := e.sys.Service.CreateWebhook(ctx, stA.ID, &kassa.WebhookInput{URL: receiver.URL, Events: kassa.EventTypes, EventsGiven: true})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := e.sys.Service.CreateInvoice(ctx, stA.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	link, err := e.sys.Service.CreatePaymentRequest(ctx, stA.ID, &kassa.PaymentRequestInput{Title: "Mug", Amount: decimal.NewFromInt(5), HasAmount: true})
	if err != nil {
		t.Fatal(err)
	}
	var delivery string
	for deadline := time.Now().Add(10 * time.Second); delivery == "" && time.Now().Before(deadline); {
		e.db.Deliveries(ctx, hook.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error { delivery = d.ID; return nil })
	}
	if delivery == "" {
		t.Fatal("no delivery of the New event")
	}
	params := map[string]string{"invoiceId": inv.ID, "webhookId": hook.ID, "deliveryId": delivery, "keyId": stA.APIKeys[0].ID, "payLinkId": link.ID}

	before := snapshot(t, e, stA.ID)
	var routes int
	err = chi.Walk(e.dash.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if !strings.Contains(route, "{storeId}") {
			return nil
		}
		routes++
		for _, storeID := range []string{stA.ID, stB.ID} {
			if storeID == stB.ID && !strings.Contains(strings.TrimPrefix(route, "/stores/{storeId}"), "{") {
				continue // Bob's own store without another object in the path is his to see
			}
			path := strings.ReplaceAll(route, "{storeId}", storeID)
			for name, v := range params {
				path = strings.ReplaceAll(path, "{"+name+"}", v)
			}
			path = strings.TrimSuffix(path, "/*")
			var code int
			if method == http.MethodGet {
				bob.get("/dashboard/stores")
				code, _, _ = bob.get("/dashboard" + path)
			} else {
				bob.get("/dashboard/stores")
				code, _, _ = bob.post("/dashboard"+path, url.Values{"label": {"x"}, "name": {"Hacked"}, "currency": {"EUR"}, "confirmations": {"1"},
					"url": {receiver.URL}, "title": {"x"}, "amount": {"100000"}})
			}
			if code != http.StatusNotFound {
				t.Errorf("Bob %s %s: %d, want 404", method, path, code)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if routes < 25 {
		t.Fatalf("walked only %d store routes", routes)
	}
	if after := snapshot(t, e, stA.ID); after != before {
		t.Errorf("Alice's store changed:\n%s\n%s", before, after)
	}
	// Bob's store list does not name Alice's store; the operator's does.
	if _, body, _ := bob.get("/dashboard/stores"); strings.Contains(body, stA.ID) || !strings.Contains(body, stB.ID) {
		t.Error("Bob's store list is wrong")
	}
	if _, body, _ := op.get("/dashboard/stores"); !strings.Contains(body, stA.ID) || !strings.Contains(body, stB.ID) {
		t.Error("the operator does not see every store")
	}
	if code, _, _ := op.get("/dashboard/stores/" + stA.ID + "/invoices/" + inv.ID); code != 200 {
		t.Errorf("operator on Alice's invoice: %d", code)
	}
}

// snapshot renders what a store's routes could change.
func snapshot(t *testing.T, e *env, storeID string) string {
	ctx := t.Context()
	st, _ := e.db.Store(ctx, storeID)
	var b strings.Builder
	b.WriteString(st.Name + "|" + string(st.Currency) + "|" + itoa(int64(len(st.APIKeys))))
	e.db.Webhooks(ctx, storeID, func(w *kassa.Webhook) error {
		b.WriteString("|" + w.URL + "|" + w.Secret)
		if w.Enabled {
			b.WriteString("|on")
		}
		return nil
	})
	e.db.Invoices(ctx, storeID, kassa.ListQuery{}, func(inv *kassa.Invoice) error {
		b.WriteString("|" + inv.ID + inv.Status.String())
		return nil
	})
	e.db.PaymentRequests(ctx, storeID, func(p *kassa.PaymentRequest) error {
		b.WriteString("|" + p.Title + p.Amount.String())
		if p.Archived {
			b.WriteString("|archived")
		}
		return nil
	})
	bal, _ := e.db.Balance(ctx, storeID)
	b.WriteString("|" + itoa(int64(bal)))
	return b.String()
}

// TestOperatorPageForOperatorsOnly mounts the operator page: the
// operator reaches it, a merchant gets 404, a visitor the login page.
func TestOperatorPageForOperatorsOnly(t *testing.T) {
	page := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "operator page at "+r.URL.Path) })
	e := newEnv(t, func(d *Deps) { d.Operator = page })
	op, merchant := e.client(), e.client()
	op.signup("op@example.com")
	merchant.signup("m@example.com")
	if code, body, hdr := op.get("/dashboard/operator/"); code != 200 || body != "operator page at /" || strings.Contains(hdr.Get("Content-Security-Policy"), "script-src") {
		t.Errorf("operator: %d %q %s", code, body, hdr.Get("Content-Security-Policy"))
	}
	if _, body, _ := op.get("/dashboard/stores"); !strings.Contains(body, `href="/dashboard/operator/"`) {
		t.Error("no link to the operator page")
	}
	if code, _, _ := merchant.get("/dashboard/operator/"); code != http.StatusNotFound {
		t.Errorf("merchant: %d", code)
	}
	if code, _, hdr := e.client().get("/dashboard/operator/"); code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/login" {
		t.Errorf("visitor: %d %s", code, hdr.Get("Location"))
	}
}
