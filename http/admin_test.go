package http

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
)

// testVpub is a testnet BIP84 account key (SLIP-132 vpub) of the
// simulated chain's network (m/84'/1'/0' of a zero seed).
const testVpub = "vpub5ZRUUWaL8PSLoiKwmUFHmRzTxAte5bFma9EriUXiCc1hMqAyegX4X82onJQRQbSG5cisAixe1RyXBWderduTRFRss1qjPP9iDsdWPYG6ZDk"

func TestRateLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDeps(func(d *Deps) { d.RateLimit, d.RateBurst = 0.5, 2 }))
	get := func(h ...header) int { return e.do("GET", "/api/v1/stores/store_a", "", h...).Code }
	if first, second := get(), get(); first != 200 || second != 200 {
		t.Fatal("the burst was not allowed")
	}
	w := e.do("GET", "/api/v1/stores/store_a", "")
	expectError(t, w, 429, kassa.RateLimited)
	if got := w.Header().Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 (one token at 0.5/s)", got)
	}
	// Each key has its own bucket, also a second key of the same store.
	if get(header{"X-Api-Key", keyA + "-staging"}) != 200 || get(asB) != 403 {
		t.Error("another key was limited")
	}
	// Health needs no key and is never limited; unauthenticated requests
	// get 401, not 429.
	for range 5 {
		if e.do("GET", "/api/v1/health", "", noKey).Code != 200 || get(noKey) != 401 {
			t.Fatal("health or an unauthenticated request was rate limited")
		}
	}
	e.clock.Advance(1500 * time.Millisecond)
	if get() != 429 {
		t.Error("a token came back too early")
	}
	e.clock.Advance(500 * time.Millisecond)
	if get() != 200 {
		t.Error("no token after 2 s")
	}
}

func TestRateLimitOff(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for range 50 {
		expectStatus(t, e.do("GET", "/api/v1/stores/store_a", ""), 200)
	}
}

func TestRateLimiterDefaultBurst(t *testing.T) {
	t.Parallel()
	l := newRateLimiter(3, 0, kassatest.NewTestClock(testNow))
	n := 0
	for range 10 {
		if ok, _ := l.allow("k"); ok {
			n++
		}
	}
	if n != 3 {
		t.Errorf("burst %d, want the rate rounded up, 3", n)
	}
}

// admin is the admin token header of newEnv.
var admin = header{"Authorization", "Bearer admin-secret-token"}

func TestAdminAuthentication(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		token   string
		headers []header
		status  int
	}{
		{"right token", "admin-secret-token", []header{admin}, 200},
		{"scheme in lower case", "admin-secret-token", []header{{"Authorization", "bearer admin-secret-token"}}, 200},
		{"no token", "admin-secret-token", nil, 401},
		{"wrong token", "admin-secret-token", []header{{"Authorization", "Bearer admin-secret-tokeN"}}, 401},
		{"token prefix", "admin-secret-token", []header{{"Authorization", "Bearer admin"}}, 401},
		{"API key is no admin token", "admin-secret-token", []header{{"Authorization", "X-Api-Key " + keyA}}, 401},
		{"empty token disables the admin API", "", []header{{"Authorization", "Bearer "}}, 401},
		{"empty token refuses any token", "", []header{admin}, 401},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, withDeps(func(d *Deps) { d.AdminToken = tt.token }))
			w := e.do("POST", "/admin/v1/stores", `{"name": "New shop"}`, append([]header{noKey}, tt.headers...)...)
			if tt.status == 401 {
				expectError(t, w, 401, kassa.Unauthorized, "admin")
				return
			}
			expectStatus(t, w, tt.status)
		})
	}
}

func TestAdminCreateStoreAndTopUp(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/admin/v1/stores", `{"name": "Carol's Café", "currency": "chf", "percentFee": "1.5", "tolerance": 0.25, "xpub": "`+testVpub+`", "confirmations": 0}`, admin)
	expectStatus(t, w, 200)
	created := decode[createdStore](t, w)
	st, err := e.reader.Store(t.Context(), created.StoreID)
	if err != nil {
		t.Fatal(err)
	}
	if created.APIKey == "" || st.APIKeys[0].Key != created.APIKey || st.Currency != kassa.CHF ||
		st.PercentFee.String() != "1.5" || st.UnderpaymentTolerance.String() != "0.25" || st.ConfirmationsRequired != 0 {
		t.Errorf("store %+v from %+v", st, created)
	}
	// The new key works on the merchant API.
	expectStatus(t, e.do("GET", "/api/v1/stores/"+created.StoreID, "", header{"X-Api-Key", created.APIKey}), 200)

	w = e.do("POST", "/admin/v1/stores", `{"name": "Defaults"}`, admin)
	st, _ = e.reader.Store(t.Context(), decode[createdStore](t, w).StoreID)
	if st.ConfirmationsRequired != 1 || st.Currency != kassa.EUR {
		t.Errorf("defaults: %d confirmations, %s", st.ConfirmationsRequired, st.Currency)
	}

	bad := []struct{ body, field string }{
		{`{}`, "name"},
		{`{"name": "x", "currency": "XYZ"}`, "currency"},
		{`{"name": "x", "percentFee": "many"}`, "percentFee"},
		{`{"name": "x", "percentFee": 101}`, "percentFee"},
		{`{"name": "x", "confirmations": -1}`, "confirmations"},
		// Issue 18: an invalid xpub or Lightning address was saved, and
		// every later invoice of the store failed.
		{`{"name": "x", "xpub": "vpub5Y…"}`, "xpub"},
		{`{"name": "x", "xpub": "` + testVpub + `", "xpubType": "taproot"}`, "xpub"},
		{`{"name": "x", "xpubType": "p2sh"}`, "xpubType"},
		{`{"name": "x", "lightningAddress": "not an address"}`, "lightningAddress"},
		{`{"name": "x", "lightningAddress": "shop@evil.example/path"}`, "lightningAddress"},
	}
	for _, tt := range bad {
		body := expectError(t, e.do("POST", "/admin/v1/stores", tt.body, admin), 400, kassa.Invalid)
		if len(body.Errors) == 0 || body.Errors[0].Field != tt.field {
			t.Errorf("%s: errors %+v, want %s", tt.body, body.Errors, tt.field)
		}
	}
	expectError(t, e.do("POST", "/admin/v1/stores", `{"name": "x"}`, admin, header{"Content-Type", "text/plain"}), 415, kassa.UnsupportedMedia)

	w = e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": 50000}`, admin)
	expectStatus(t, w, 200)
	if got := decode[toppedUp](t, w); got.Amount != 50000 || got.Balance != 50000 || got.Transaction == 0 || got.StoreID != "store_a" {
		t.Errorf("top-up %+v", got)
	}
	w = e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": "25000"}`, admin)
	if got := decode[toppedUp](t, w); got.Balance != 75000 {
		t.Errorf("balance %d after two top-ups, want 75000", got.Balance)
	}
	for _, body := range []string{`{}`, `{"amount": 0}`, `{"amount": -5}`, `{"amount": 1.5}`, `{"amount": "x"}`} {
		expectError(t, e.do("POST", "/admin/v1/stores/store_a/topup", body, admin), 400, kassa.Invalid, "amount")
	}
	expectError(t, e.do("POST", "/admin/v1/stores/store_zz/topup", `{"amount": 1}`, admin), 404, kassa.NotFound)
	expectError(t, e.do("POST", "/admin/v1/stores/bad%20id/topup", `{"amount": 1}`, admin), 404, kassa.NotFound)
}

// TestAdminTopUpReference: a top-up sent twice with the same reference
// (a retry after a lost answer) credits the balance once and answers the
// same ledger line both times; the Idempotency-Key header serves as the
// reference when the body has none.
func TestAdminTopUpReference(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var first toppedUp
	for i := range 2 {
		w := e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": 40000, "reference": "invoice-2026-11"}`, admin)
		expectStatus(t, w, 200)
		got := decode[toppedUp](t, w)
		if i == 0 {
			first = got
		}
		if got != first || got.Amount != 40000 || got.Balance != 40000 {
			t.Errorf("top-up %d with the same reference: %+v, want %+v with balance 40000", i+1, got, first)
		}
	}
	// The same reference for another amount is a mistake: refused.
	expectError(t, e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": 1, "reference": "invoice-2026-11"}`, admin), 409, kassa.Conflict)
	// Without a reference each top-up credits.
	w := e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": 1000}`, admin)
	if got := decode[toppedUp](t, w); got.Balance != 41000 {
		t.Errorf("balance %d after a top-up without reference, want 41000", got.Balance)
	}
	for i := range 2 {
		w := e.do("POST", "/admin/v1/stores/store_a/topup", `{"amount": 500}`, admin, header{"Idempotency-Key", "retry-1"})
		expectStatus(t, w, 200)
		if got := decode[toppedUp](t, w); got.Balance != 41500 {
			t.Errorf("balance %d after top-up %d with one Idempotency-Key, want 41500", got.Balance, i+1)
		}
	}
	for _, body := range []string{`{"amount": 1, "reference": ""}`, `{"amount": 1, "reference": "has space"}`,
		`{"amount": 1, "reference": "` + strings.Repeat("x", 256) + `"}`, `{"amount": 1, "reference": 5}`} {
		expectError(t, e.do("POST", "/admin/v1/stores/store_a/topup", body, admin), 400, kassa.Invalid, "reference")
	}
	if bal, _ := e.db.Balance(t.Context(), "store_a"); bal != 41500 {
		t.Errorf("balance %d, want 41500", bal)
	}
}

func TestAdminSimulation(t *testing.T) {
	t.Parallel()
	t.Run("off", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t)
		inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
		expectError(t, e.do("POST", "/admin/v1/sim/pay", `{"invoiceId": "`+inv.ID+`"}`, admin), 404, kassa.NotFound, "simulation routes are off")
		expectError(t, e.do("POST", "/admin/v1/sim/mine", `{"blocks": 1}`, admin), 404, kassa.NotFound, "simulation routes are off")
		expectError(t, e.do("POST", "/admin/v1/sim/mine", ``, noKey), 401, kassa.Unauthorized)
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		e := newEnv(t, withSim)
		// Each payment goes to a new invoice of 1 EUR (2000 sats); want is
		// the payment the invoice then shows.
		tests := []struct {
			invoice string // the invoice's create body
			body    string // "ID" stands for its id
			status  int
			want    string
		}{
			{`{"amount": 1}`, `{"invoiceId": "ID"}`, 200, "Lightning 2000"},
			{`{"amount": 1}`, `{"invoiceId": "ID", "method": "onchain", "amount": 1500}`, 200, "BTC 1500"},
			{`{}`, `{"invoiceId": "ID", "method": "lightning", "amount": "700"}`, 200, "Lightning 700"},
			{`{"amount": 1}`, `{"invoiceId": "ID", "method": "lightning", "amount": "700"}`, 400, ""}, // the node refuses less than asked
			{`{"amount": 1, "enabledPaymentMethods": ["BTC"]}`, `{"invoiceId": "ID"}`, 200, "BTC 2000"},
			{`{"amount": 1}`, `{"invoiceId": "ID", "method": "carrier pigeon"}`, 400, ""},
			{`{"amount": 1}`, `{"invoiceId": "ID", "amount": -1}`, 400, ""},
			{`{"amount": 1}`, `{"invoiceId": "inv_none"}`, 404, ""},
			{`{"amount": 1}`, `{}`, 400, ""},
		}
		for _, tt := range tests {
			inv := e.seedInvoice("store_a", testNow, tt.invoice)
			body := strings.Replace(tt.body, "ID", inv.ID, 1)
			w := e.do("POST", "/admin/v1/sim/pay", body, admin)
			if w.Code != tt.status {
				t.Errorf("%s: status %d, want %d: %s", body, w.Code, tt.status, w.Body.String())
				continue
			}
			var paid []string
			for _, p := range e.invoice(inv.ID).Payments {
				paid = append(paid, fmt.Sprintf("%s %d", p.Method, p.Amount))
			}
			if got := strings.Join(paid, ", "); got != tt.want {
				t.Errorf("%s: invoice paid %q, want %q", body, got, tt.want)
			}
			if tt.status == 200 && decode[simPaid](t, w).TxID == "" {
				t.Errorf("%s: no txid", body)
			}
		}
		for _, tt := range []struct {
			body   string
			status int
			height int64
		}{
			{``, 200, chainsim.StartHeight + 1},
			{`{"blocks": 6}`, 200, chainsim.StartHeight + 7},
			{`{"blocks": 0}`, 400, 0},
			{`{"blocks": 1001}`, 400, 0},
		} {
			w := e.do("POST", "/admin/v1/sim/mine", tt.body, admin)
			if w.Code != tt.status || tt.status == 200 && decode[simMined](t, w).Height != tt.height {
				t.Errorf("mine %s: %d %s, want %d height %d", tt.body, w.Code, strings.TrimSpace(w.Body.String()), tt.status, tt.height)
			}
		}
	})
}

// TestAdminCreateAPIKey: the operator makes a key of a store holding any
// permissions, a refund key among them, which the API then admits to
// the refund routes; no permission, an unknown one, another store's
// grant, an unknown store or no admin token: refused, no key made.
func TestAdminCreateAPIKey(t *testing.T) {
	e := newEnv(t)
	path := "/admin/v1/stores/store_a/api-keys"
	for _, c := range []struct {
		name, body string
		headers    []header
		status     int
	}{
		{"no token", `{"permissions": ["btcpay.store.canviewinvoices"]}`, nil, http.StatusUnauthorized},
		{"no permission", `{"permissions": []}`, []header{admin}, http.StatusBadRequest},
		{"unknown permission", `{"permissions": ["btcpay.store.canfly"]}`, []header{admin}, http.StatusBadRequest},
		{"another store's grant", `{"permissions": ["btcpay.store.canviewinvoices:store_b"]}`, []header{admin}, http.StatusForbidden},
	} {
		w := e.do("POST", path, c.body, append([]header{noKey}, c.headers...)...)
		if w.Code != c.status {
			t.Errorf("%s: %d, want %d: %s", c.name, w.Code, c.status, w.Body.String())
		}
	}
	if w := e.do("POST", "/admin/v1/stores/no_such/api-keys", `{"permissions": ["btcpay.store.canviewinvoices"]}`, noKey, admin); w.Code != http.StatusNotFound {
		t.Errorf("unknown store: %d, want 404: %s", w.Code, w.Body.String())
	}
	st, err := e.db.Store(t.Context(), "store_a")
	if err != nil {
		t.Fatal(err)
	}
	before := len(st.APIKeys)

	w := e.do("POST", path, `{"label": "refunds", "permissions": ["btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.canviewpullpayments"]}`, noKey, admin)
	expectStatus(t, w, http.StatusOK)
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control = %q, want no-store", got)
	}
	key := decode[apiKeyRecord](t, w)
	if key.Label != "refunds" || len(key.Permissions) != 2 || key.APIKey == "" {
		t.Fatalf("key = %+v", key)
	}
	if st, _ = e.db.Store(t.Context(), "store_a"); len(st.APIKeys) != before+1 {
		t.Fatalf("%d keys after one made, want %d: a refused request made one", len(st.APIKeys), before+1)
	}
	if w := e.do("GET", "/api/v1/stores/store_a/pull-payments", "", header{"X-Api-Key", key.APIKey}); w.Code != http.StatusOK {
		t.Errorf("the new key on the pull payments: %d: %s", w.Code, w.Body.String())
	}
}
