package dashboard

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// pluginPermissions are what BTCPay's WooCommerce plugin asks for
// (GreenfieldApiAuthorization::REQUIRED_PERMISSIONS).
var pluginPermissions = []string{"btcpay.store.canviewinvoices", "btcpay.store.cancreateinvoice",
	"btcpay.store.webhooks.canmodifywebhooks", "btcpay.store.canviewstoresettings", "btcpay.store.canmodifyinvoices"}

const pluginCallback = "https://shop.example/?btcpay-settings-callback"

// authorizeQuery is the query of a plugin's connect button.
func authorizeQuery(perms []string, redirect string) string {
	q := url.Values{"applicationName": {"BTCPay for <WooCommerce>"}, "applicationIdentifier": {"woocommerce"},
		"strict": {"true"}, "selectiveStores": {"true"}, "redirect": {redirect}}
	q["permissions"] = perms
	return q.Encode()
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// hidden returns the hidden fields of a page, in order.
func hidden(body string) [][2]string {
	var out [][2]string
	for _, m := range hiddenField.FindAllStringSubmatch(body, -1) {
		out = append(out, [2]string{html.UnescapeString(m[1]), html.UnescapeString(m[2])})
	}
	return out
}

// TestAuthorizeAtBTCPaysPath: /api-keys/authorize at the server's root,
// where BTCPay's plugins send the merchant, leads to the dashboard's
// page with the whole query.
func TestAuthorizeAtBTCPaysPath(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	q := authorizeQuery(pluginPermissions, pluginCallback)
	code, _, hdr := c.get("/api-keys/authorize?" + q)
	if code != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/api-keys/authorize?"+q {
		t.Fatalf("root: %d to %q", code, hdr.Get("Location"))
	}
	// Signed out, the dashboard asks to sign in first.
	if code, _, hdr := c.get("/dashboard/api-keys/authorize?" + q); code != http.StatusSeeOther || !strings.HasPrefix(hdr.Get("Location"), "/dashboard/login") {
		t.Fatalf("signed out: %d to %q", code, hdr.Get("Location"))
	}
}

// TestAuthorizeApproved: the page names the application, the redirect's
// host, each permission in plain words and the merchant's stores; on a
// CSRF-checked approval a key with exactly the permissions asked is
// made for the chosen store and POSTed back by a form to the redirect,
// as BTCPay does (apiKey and permissions[] as <perm>:<storeId>).
func TestAuthorizeApproved(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Alice's Shop")
	other := c.createStore("Second Shop")
	code, body, _ := c.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, pluginCallback))
	if code != http.StatusOK {
		t.Fatalf("page: %d %s", code, body)
	}
	for _, want := range []string{htmlText("BTCPay for <WooCommerce>"), "shop.example", htmlText(st.Name), htmlText(other.Name)} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if strings.Contains(body, "<WooCommerce>") {
		t.Error("the application's name is not escaped")
	}
	for _, p := range pluginPermissions {
		perm, _ := kassa.ParsePermission(p)
		if !strings.Contains(body, htmlText(perm.Describe())) {
			t.Errorf("the page does not say %q for %s", perm.Describe(), p)
		}
	}
	before := len(mustStore(t, e, st.ID).APIKeys)

	// Without the page's CSRF token nothing is made.
	form := url.Values{"decision": {"approve"}, "storeId": {st.ID}, "redirect": {pluginCallback}, "applicationName": {"x"}, "permissions": pluginPermissions}
	if code, _, _ := c.postRaw("/dashboard/api-keys/authorize", form); code != http.StatusForbidden {
		t.Errorf("without CSRF: %d", code)
	}
	if n := len(mustStore(t, e, st.ID).APIKeys); n != before {
		t.Fatalf("a key was made without CSRF: %d keys", n)
	}

	// Approve with the page's own form fields.
	form = url.Values{"decision": {"approve"}, "storeId": {st.ID}}
	for _, f := range hidden(body) {
		form.Add(f[0], f[1])
	}
	code, body, hdr := c.post("/dashboard/api-keys/authorize", form)
	if code != http.StatusOK {
		t.Fatalf("approve: %d %s", code, body)
	}
	if !strings.Contains(body, `action="`+htmlText(pluginCallback)+`"`) || !strings.Contains(body, `method="post"`) {
		t.Errorf("no form posting to the redirect: %s", body)
	}
	if csp := hdr.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action https://shop.example") {
		t.Errorf("the page's CSP does not let the form post to the shop: %q", csp)
	}
	after := mustStore(t, e, st.ID)
	if len(after.APIKeys) != before+1 {
		t.Fatalf("keys after approval: %d, want %d", len(after.APIKeys), before+1)
	}
	key := after.APIKeys[len(after.APIKeys)-1]
	var want kassa.Permissions
	for _, p := range pluginPermissions {
		want = append(want, kassa.Permission(p))
	}
	if !slices.Equal(key.Permissions, want) || !strings.Contains(key.Label, "WooCommerce") {
		t.Errorf("the key holds %v labelled %q, want %v", key.Permissions, key.Label, want)
	}
	var apiKey string
	var posted []string
	for _, f := range hidden(body) {
		switch f[0] {
		case "apiKey":
			apiKey = f[1]
		case "permissions[]":
			posted = append(posted, f[1])
		}
	}
	var wantPosted []string
	for _, p := range pluginPermissions {
		wantPosted = append(wantPosted, p+":"+st.ID)
	}
	if apiKey != key.Key || !slices.Equal(posted, wantPosted) {
		t.Errorf("posted apiKey match %v, permissions[] %v, want %v", apiKey == key.Key, posted, wantPosted)
	}
	if n := len(mustStore(t, e, other.ID).APIKeys); n != 1 {
		t.Errorf("the other store got a key: %d keys", n)
	}
}

// TestAuthorizeRefused: refusing goes back to the redirect without a key.
func TestAuthorizeRefused(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	_, body, _ := c.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, pluginCallback))
	form := url.Values{"decision": {"refuse"}, "storeId": {st.ID}}
	for _, f := range hidden(body) {
		form.Add(f[0], f[1])
	}
	code, _, hdr := c.post("/dashboard/api-keys/authorize", form)
	if code != http.StatusSeeOther || hdr.Get("Location") != pluginCallback {
		t.Errorf("refuse: %d to %q", code, hdr.Get("Location"))
	}
	if n := len(mustStore(t, e, st.ID).APIKeys); n != 1 {
		t.Errorf("a refusal made a key: %d keys", n)
	}
}

// TestAuthorizeBadRequests: unknown permissions, an unsafe redirect, a
// store that is not the merchant's are refused before any page or key.
func TestAuthorizeBadRequests(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	mallory := e.client()
	mallory.signup("mallory@example.com")
	theirs := mallory.createStore("Mallory's")

	for name, tc := range map[string]struct {
		query  string
		status int
		says   string
	}{
		"unknown permission":        {authorizeQuery([]string{"btcpay.store.canviewinvoices", "btcpay.server.canmodifyserversettings"}, pluginCallback), http.StatusBadRequest, "btcpay.server.canmodifyserversettings"},
		"no permission":             {authorizeQuery(nil, pluginCallback), http.StatusBadRequest, "permission"},
		"no redirect":               {authorizeQuery(pluginPermissions, ""), http.StatusBadRequest, "redirect"},
		"relative redirect":         {authorizeQuery(pluginPermissions, "/callback"), http.StatusBadRequest, "redirect"},
		"javascript redirect":       {authorizeQuery(pluginPermissions, "javascript:alert(1)"), http.StatusBadRequest, "redirect"},
		"plain http":                {authorizeQuery(pluginPermissions, "http://shop.example/cb"), http.StatusBadRequest, "https"},
		"http to loopback":          {authorizeQuery(pluginPermissions, "http://127.0.0.1:8080/cb"), http.StatusBadRequest, "https"},
		"another's store":           {authorizeQuery([]string{"btcpay.store.canviewinvoices:" + theirs.ID}, pluginCallback), http.StatusNotFound, ""},
		"two stores in one key":     {authorizeQuery([]string{"btcpay.store.canviewinvoices:" + st.ID, "btcpay.store.cancreateinvoice:" + theirs.ID}, pluginCallback), http.StatusBadRequest, "one store"},
		"redirect with userinfo":    {authorizeQuery(pluginPermissions, "https://user:pw@shop.example/cb"), http.StatusBadRequest, "redirect"},
		"overlong application name": {"permissions=btcpay.store.canviewinvoices&redirect=" + url.QueryEscape(pluginCallback) + "&applicationName=" + strings.Repeat("a", 300), http.StatusBadRequest, "applicationName"},
	} {
		code, body, _ := c.get("/dashboard/api-keys/authorize?" + tc.query)
		if code != tc.status || !strings.Contains(body, htmlText(tc.says)) || strings.Contains(body, `name="decision"`) {
			t.Errorf("%s: %d (want %d naming %q)", name, code, tc.status, tc.says)
		}
	}

	// An account without a store is told so, before any form.
	storeless := e.client()
	storeless.signup("bob@example.com")
	if code, body, _ := storeless.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, pluginCallback)); code != http.StatusConflict || !strings.Contains(body, "create a store first") {
		t.Errorf("no store: %d", code)
	}

	// A tampered approval is checked again: nothing is made.
	_, body, _ := c.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, pluginCallback))
	base := url.Values{"decision": {"approve"}, "storeId": {st.ID}, "applicationName": {"x"}, "redirect": {pluginCallback}, "permissions": pluginPermissions}
	for name, change := range map[string]func(url.Values){
		"unknown permission": func(f url.Values) { f.Add("permissions", "btcpay.store.canfly") },
		"another's store":    func(f url.Values) { f.Set("storeId", theirs.ID) },
		"unsafe redirect":    func(f url.Values) { f.Set("redirect", "http://shop.example/cb") },
	} {
		f := url.Values{}
		for k, v := range base {
			f[k] = slices.Clone(v)
		}
		change(f)
		code, _, _ := c.post("/dashboard/api-keys/authorize", f)
		if code == http.StatusOK || code == http.StatusSeeOther {
			t.Errorf("tampered (%s): %d", name, code)
		}
	}
	_ = body
	if n := len(mustStore(t, e, st.ID).APIKeys); n != 1 {
		t.Errorf("keys of the store: %d, want the first only", n)
	}
	if n := len(mustStore(t, e, theirs.ID).APIKeys); n != 1 {
		t.Errorf("keys of mallory's store: %d", n)
	}
}

// TestAuthorizeLoopbackUnderDev: with --dev, an http redirect to a
// loopback address is allowed (a shop on the developer's machine).
func TestAuthorizeLoopbackUnderDev(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Dev = true })
	c := e.client()
	c.signup("alice@example.com")
	c.createStore("Shop")
	if code, body, _ := c.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, "http://127.0.0.1:8080/cb")); code != http.StatusOK {
		t.Errorf("loopback under --dev: %d %s", code, body)
	}
	if code, _, _ := c.get("/dashboard/api-keys/authorize?" + authorizeQuery(pluginPermissions, "http://shop.example/cb")); code != http.StatusBadRequest {
		t.Errorf("plain http to a public host under --dev: %d", code)
	}
}

func mustStore(t *testing.T, e *env, id string) *kassa.Store {
	t.Helper()
	st, err := e.db.Store(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	return st
}
