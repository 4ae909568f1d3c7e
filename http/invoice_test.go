package http

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/qr"
)

func TestCreateInvoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		body        string
		contentType string
		amount      kassa.Sats
		currency    kassa.Currency
		methods     []string
		orderID     string
	}{
		{name: "amount as number", body: `{"amount": 12.5}`, amount: 25000, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "amount as decimal string", body: `{"amount": "12.50"}`, amount: 25000, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "amount in another currency", body: `{"amount": "55000.5", "currency": "usd"}`, amount: 100_000_000, currency: "USD", methods: []string{"BTC", "Lightning"}},
		{name: "amount in sats", body: `{"amount": 1000, "currency": "SATS"}`, amount: 1000, currency: "SATS", methods: []string{"BTC", "Lightning"}},
		{name: "amount in BTC", body: `{"amount": "0.00012345", "currency": "BTC"}`, amount: 12345, currency: "BTC", methods: []string{"BTC", "Lightning"}},
		{name: "fiat rounds up to a whole satoshi", body: `{"amount": "0.01"}`, amount: 20, currency: "EUR", methods: []string{"Lightning"}}, // below the on-chain minimum
		{name: "no amount is a top-up invoice", body: `{"currency": "EUR"}`, amount: 0, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "null amount is absent", body: `{"amount": null, "currency": null, "metadata": null, "orderId": null}`, amount: 0, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "empty body", body: "", amount: 0, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "JSON null body", body: "null", amount: 0, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "unknown fields are ignored", body: `{"amount": 1, "speed": "fast", "nested": {"a": [1, 2]}}`, amount: 2000, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "numeric orderId", body: `{"amount": 1, "orderId": 1001}`, amount: 2000, currency: "EUR", methods: []string{"BTC", "Lightning"}, orderID: "1001"},
		{name: "on-chain only", body: `{"amount": 1, "enabledPaymentMethods": ["BTC"]}`, amount: 2000, currency: "EUR", methods: []string{"BTC"}},
		{name: "Lightning only, as a string", body: `{"amount": 1, "enabledPaymentMethods": "Lightning"}`, amount: 2000, currency: "EUR", methods: []string{"Lightning"}},
		{name: "methods as a comma-separated string", body: `{"amount": 1, "enabledPaymentMethods": "Lightning, BTC"}`, amount: 2000, currency: "EUR", methods: []string{"Lightning", "BTC"}},
		{name: "walletMessage of 255 characters", body: `{"amount": 1, "walletMessage": "` + strings.Repeat("é", 255) + `"}`, amount: 2000, currency: "EUR", methods: []string{"BTC", "Lightning"}},
		{name: "charset utf-8", body: `{"amount": 1}`, contentType: "application/json; charset=UTF-8", amount: 2000, currency: "EUR", methods: []string{"BTC", "Lightning"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			var headers []header
			if tt.contentType != "" {
				headers = append(headers, header{"Content-Type", tt.contentType})
			}
			w := e.do("POST", "/api/v1/stores/store_a/invoices", tt.body, headers...)
			expectStatus(t, w, http.StatusOK)
			got := decode[createdInvoice](t, w)
			if got.Amount != tt.amount || got.Currency != tt.currency || got.OrderID != tt.orderID {
				t.Errorf("amount %d %s order %q, want %d %s order %q", got.Amount, got.Currency, got.OrderID, tt.amount, tt.currency, tt.orderID)
			}
			if strings.Join(got.EnabledPaymentMethods, ",") != strings.Join(tt.methods, ",") {
				t.Errorf("methods %v, want %v", got.EnabledPaymentMethods, tt.methods)
			}
			if got.ID == "" || got.StoreID != "store_a" || got.Status != "New" || got.CreatedAt != strconv.FormatInt(testNow.Unix(), 10) {
				t.Errorf("created invoice %+v", got)
			}
			if got.CheckoutLink != "https://pay.example.com/checkout/"+got.ID {
				t.Errorf("checkoutLink %q", got.CheckoutLink)
			}
			hasLN, hasChain := got.LightningInvoice != "", got.OnchainAddress != ""
			if (got.QRCodes.LightningQR != "") != hasLN || got.QRCodes.BitcoinQR == "" || !strings.HasPrefix(got.BIP21, "bitcoin:") {
				t.Errorf("QR codes or bip21 missing: ln %v chain %v, %q", hasLN, hasChain, got.BIP21)
			}
		})
	}
}

func TestCreateInvoiceGolden(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{
		"amount": "12.50",
		"currency": "EUR",
		"orderId": "1001",
		"buyerEmail": "buyer@example.com",
		"redirectUrl": "https://shop.example.com/thanks?order=1001",
		"redirectAutomatically": true,
		"walletMessage": "Order 1001 <Alice & Bob>",
		"metadata": {"customer": "c-17", "items": [1, 2]},
		"referralCode": "ref-1"
	}`)
	expectStatus(t, w, http.StatusOK)
	expectGolden(t, "invoice_create", w.Body.Bytes())
	if got := decode[map[string]any](t, w)["additionalStatus"]; got != "None" {
		t.Errorf("additionalStatus %v, want None", got)
	}
	inv := e.invoice(decode[createdInvoice](t, w).ID)
	if inv.ReferralCode != "ref-1" || inv.InvoiceAmount.String() != "12.5" || inv.Amount != 25000 {
		t.Errorf("stored invoice: referral %q, %s EUR, %d sats", inv.ReferralCode, inv.InvoiceAmount, inv.Amount)
	}
}

func TestCreateInvoiceErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		body        string
		contentType string // "-" removes the header
		serviceErr  error
		status      int
		code        string
		message     string
		fields      []string
	}{
		{name: "malformed JSON", body: `{"amount": 1,}`, status: 400, code: kassa.Invalid, message: "malformed JSON at line 1, column 14"},
		{name: "malformed JSON on a later line", body: "{\n  \"amount\": 1,\n  oops\n}", status: 400, code: kassa.Invalid, message: "line 3, column 3"},
		{name: "truncated JSON", body: `{"amount": 1`, status: 400, code: kassa.Invalid, message: "malformed JSON"},
		{name: "two JSON values", body: `{"amount": 1} {}`, status: 400, code: kassa.Invalid, message: "malformed JSON"},
		{name: "not an object", body: `[1, 2]`, status: 400, code: kassa.Invalid, message: "must be a JSON object, not array"},
		{name: "wrong field type", body: `{"buyerEmail": 5}`, status: 400, code: kassa.Invalid, message: "field buyerEmail must be a string, not number", fields: []string{"buyerEmail"}},
		{name: "wrong boolean", body: `{"redirectAutomatically": "yes"}`, status: 400, code: kassa.Invalid, message: "redirectAutomatically must be true or false", fields: []string{"redirectAutomatically"}},
		{name: "orderId object", body: `{"orderId": {}}`, status: 400, code: kassa.Invalid, message: "orderId", fields: []string{"orderId"}},
		{name: "unknown currency", body: `{"amount": 1, "currency": "XYZ"}`, status: 400, code: kassa.Invalid, message: "unknown currency", fields: []string{"currency"}},
		{name: "negative amount", body: `{"amount": -5}`, status: 400, code: kassa.Invalid, message: "amount: must be greater than 0", fields: []string{"amount"}},
		{name: "zero amount", body: `{"amount": 0}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "zero amount as string", body: `{"amount": "0.00"}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "amount not a number", body: `{"amount": "twelve"}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "amount boolean", body: `{"amount": true}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "amount too precise", body: `{"amount": "12.345"}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "amount too large", body: `{"amount": "1e30"}`, status: 400, code: kassa.Invalid, fields: []string{"amount"}},
		{name: "walletMessage over 255 characters", body: `{"amount": 1, "walletMessage": "` + strings.Repeat("x", 256) + `"}`, status: 400, code: kassa.Invalid, fields: []string{"walletMessage"}},
		{name: "metadata not an object", body: `{"metadata": [1]}`, status: 400, code: kassa.Invalid, fields: []string{"metadata"}},
		{name: "metadata a string", body: `{"metadata": "x"}`, status: 400, code: kassa.Invalid, fields: []string{"metadata"}},
		{name: "unknown payment method", body: `{"enabledPaymentMethods": ["DOGE"]}`, status: 400, code: kassa.Invalid, fields: []string{"enabledPaymentMethods"}},
		{name: "every field of the wrong type at once", body: `{"amount": true, "currency": 5, "buyerEmail": [], "orderId": {}}`, status: 400, code: kassa.Invalid, message: "(and 3 more)", fields: []string{"currency", "buyerEmail", "orderId", "amount"}},
		{name: "wrong types and bad values together", body: `{"amount": -1, "redirectAutomatically": "yes", "walletMessage": "` + strings.Repeat("x", 256) + `"}`, status: 400, code: kassa.Invalid, fields: []string{"redirectAutomatically", "amount", "walletMessage"}},
		{name: "bad e-mail and URL together", body: `{"buyerEmail": "no", "redirectUrl": "javascript:alert(1)", "amount": -1}`, status: 400, code: kassa.Invalid, message: "(and 2 more)", fields: []string{"amount", "buyerEmail", "redirectUrl"}},
		{name: "body over 1 MiB", body: `{"metadata": {"x": "` + strings.Repeat("a", MaxBodyBytes) + `"}}`, status: 413, code: kassa.TooLarge},
		{name: "text/plain", body: `{"amount": 1}`, contentType: "text/plain", status: 415, code: kassa.UnsupportedMedia},
		{name: "no Content-Type", body: `{"amount": 1}`, contentType: "-", status: 415, code: kassa.UnsupportedMedia},
		{name: "form", body: `amount=1`, contentType: "application/x-www-form-urlencoded", status: 415, code: kassa.UnsupportedMedia},
		{name: "latin1", body: `{"amount": 1}`, contentType: "application/json; charset=latin1", status: 415, code: kassa.UnsupportedMedia},
		{name: "prepaid balance exhausted", body: `{"amount": 1}`, serviceErr: kassa.Errorf(kassa.PaymentRequired, "prepaid balance is exhausted: top up the store"), status: 402, code: kassa.PaymentRequired, message: "top up"},
		{name: "rates unavailable", body: `{"amount": 1}`, serviceErr: kassa.Errorf(kassa.Unavailable, "no exchange rate for EUR"), status: 503, code: kassa.Unavailable, message: "no exchange rate"},
		{name: "internal failure", body: `{"amount": 1}`, serviceErr: fmt.Errorf("commit: %w", errors.New("disk full at /data/000001.log")), status: 500, code: kassa.Internal, message: "internal error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.invoices.err = tt.serviceErr
			var headers []header
			switch tt.contentType {
			case "":
			case "-":
				headers = append(headers, header{"Content-Type", ""})
			default:
				headers = append(headers, header{"Content-Type", tt.contentType})
			}
			w := e.do("POST", "/api/v1/stores/store_a/invoices", tt.body, headers...)
			body := expectError(t, w, tt.status, tt.code, tt.message)
			var fields []string
			for _, f := range body.Errors {
				fields = append(fields, f.Field)
				if f.Message == "" {
					t.Errorf("field %s has no message", f.Field)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields %v, want %v (%+v)", fields, tt.fields, body.Errors)
			}
			if strings.Contains(w.Body.String(), "disk full") {
				t.Error("internal cause leaked")
			}
			if ids := e.invoiceIDs("store_a"); len(ids) != 0 {
				t.Errorf("a refused request created invoices %v", ids)
			}
		})
	}
}

// seedInvoices gives store A four invoices a day apart, the newest at
// testNow, and store B one. The env must start 3 days before testNow
// (seedStart): the older ones have expired by testNow.
func seedInvoices(e *env) []*kassa.Invoice {
	var out []*kassa.Invoice
	for i := 3; i >= 0; i-- {
		out = append(out, e.seedInvoice("store_a", testNow.Add(-time.Duration(i)*24*time.Hour), fmt.Sprintf(`{"amount": %d, "orderId": "A%d"}`, 10+i, i)))
	}
	e.seedInvoice("store_b", testNow, `{"amount": 5}`)
	return out
}

// seedStart is when the clock of a test that calls seedInvoices starts.
var seedStart = testNow.Add(-3 * 24 * time.Hour)

func TestGetInvoice(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": "12.50", "orderId": "1001", "metadata": {"customer": "c-17"}, "walletMessage": "thanks"}`)
	settle(e, inv)
	other := e.seedInvoice("store_b", testNow, `{"amount": 5}`)

	w := e.do("GET", "/api/v1/stores/store_a/invoices/"+inv.ID, "")
	expectStatus(t, w, 200)
	expectGolden(t, "invoice", w.Body.Bytes())

	tests := []struct {
		name, path string
		headers    []header
		status     int
		code       string
	}{
		{"unknown invoice", "/api/v1/stores/store_a/invoices/inv_9999", nil, 404, kassa.NotFound},
		{"invoice of another store", "/api/v1/stores/store_a/invoices/" + other.ID, nil, 404, kassa.NotFound},
		{"invoice of another store, by its own key on our path", "/api/v1/stores/store_a/invoices/" + inv.ID, []header{asB}, 403, kassa.Forbidden},
		{"id that is no id", "/api/v1/stores/store_a/invoices/inv.1", nil, 404, kassa.NotFound},
		{"over-long id", "/api/v1/stores/store_a/invoices/" + strings.Repeat("a", 65), nil, 404, kassa.NotFound},
		{"payments of an unknown invoice", "/api/v1/stores/store_a/invoices/inv_9999/payments", nil, 404, kassa.NotFound},
		{"payments of another store's invoice", "/api/v1/stores/store_a/invoices/" + other.ID + "/payments", nil, 404, kassa.NotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			expectError(t, e.do("GET", tt.path, "", tt.headers...), tt.status, tt.code)
		})
	}
}

func TestInvoicePayments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 10}`) // 20 000 sats
	// Two on-chain payments of which one may be replaced, one that was
	// dropped, then the rest by Lightning.
	e.advanceTo(testNow.Add(time.Minute))
	e.payOnchain(inv, strings.Repeat("aa", 32), 5000, 3, func(p *kassa.Payment) { p.NetworkFee, p.FeeRate = 200, 2 })
	e.advanceTo(testNow.Add(2 * time.Minute))
	e.payOnchain(inv, strings.Repeat("bb", 32), 4000, 0, func(p *kassa.Payment) {
		p.ID, p.Vout, p.NetworkFee, p.ReplaceByFee = strings.Repeat("bb", 32)+":1", 1, 150, true
	})
	e.advanceTo(testNow.Add(3 * time.Minute))
	e.payOnchain(inv, strings.Repeat("cc", 32), 1000, 0)
	e.dropOnchain(inv, strings.Repeat("cc", 32))
	e.advanceTo(testNow.Add(4 * time.Minute))
	if err := e.sys.Service.HandleLightningEvent(t.Context(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 11_000_000}); err != nil {
		t.Fatal(err)
	}
	w := e.do("GET", "/api/v1/stores/store_a/invoices/"+inv.ID+"/payments", "")
	expectStatus(t, w, 200)
	expectGolden(t, "invoice_payments", w.Body.Bytes())

	fresh := e.seedInvoice("store_a", testNow, `{"amount": 10}`)
	w = e.do("GET", "/api/v1/stores/store_a/invoices/"+fresh.ID+"/payments", "")
	expectStatus(t, w, 200)
	if strings.TrimSpace(w.Body.String()) != "[]" {
		t.Errorf("payments of an unpaid invoice = %s, want []", w.Body.String())
	}
}

func TestListInvoices(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, seedStart)
	inv := seedInvoices(e)
	ids := func(w *httptest.ResponseRecorder) string {
		var out []string
		for _, rec := range decode[[]map[string]any](t, w) {
			out = append(out, rec["id"].(string))
		}
		return strings.Join(out, " ")
	}
	all := inv[3].ID + " " + inv[2].ID + " " + inv[1].ID + " " + inv[0].ID
	day := func(d int) string { return testNow.AddDate(0, 0, d).Format("2006-01-02") }
	unix := func(d time.Duration) string { return strconv.FormatInt(testNow.Add(d).Unix(), 10) }
	tests := []struct {
		query string
		want  string
	}{
		{"", all},
		{"?startDate=" + day(-1), inv[3].ID + " " + inv[2].ID},
		{"?startDate=" + unix(-24*time.Hour), inv[3].ID + " " + inv[2].ID},
		{"?startDate=" + unix(-24*time.Hour+time.Second), inv[3].ID},
		{"?endDate=" + day(-2), inv[1].ID + " " + inv[0].ID}, // a date includes the whole day
		{"?endDate=" + unix(-48*time.Hour), inv[1].ID + " " + inv[0].ID},
		{"?endDate=" + unix(-48*time.Hour-time.Second), inv[0].ID},
		{"?startDate=" + testNow.AddDate(0, 0, -2).Format(time.RFC3339) + "&endDate=" + testNow.AddDate(0, 0, -1).Format(time.RFC3339), inv[2].ID + " " + inv[1].ID},
		{"?startDate=" + strings.ReplaceAll(testNow.Add(-time.Hour).In(time.FixedZone("", 2*3600)).Format(time.RFC3339), "+", "%2B"), inv[3].ID},
		{"?startDate=" + day(1), ""},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			w := e.do("GET", "/api/v1/stores/store_a/invoices"+tt.query, "")
			expectStatus(t, w, 200)
			if got := ids(w); got != tt.want {
				t.Errorf("ids %q, want %q", got, tt.want)
			}
			if w.Header().Get("Next-Cursor") != "" {
				t.Error("Next-Cursor without a limit")
			}
		})
	}

	t.Run("record shape", func(t *testing.T) {
		settle(e, inv[3])
		w := e.do("GET", "/api/v1/stores/store_a/invoices?startDate="+day(-1), "")
		expectStatus(t, w, 200)
		expectGolden(t, "invoices", w.Body.Bytes())
	})

	t.Run("empty list", func(t *testing.T) {
		w := e.do("GET", "/api/v1/stores/store_a/invoices?startDate="+day(3), "")
		expectStatus(t, w, 200)
		if strings.TrimSpace(w.Body.String()) != "[]" {
			t.Errorf("empty list = %q", w.Body.String())
		}
	})

	t.Run("pages", func(t *testing.T) {
		var got []string
		cursor := ""
		for range 3 {
			w := e.do("GET", "/api/v1/stores/store_a/invoices?limit=3&cursor="+cursor, "")
			expectStatus(t, w, 200)
			got = append(got, ids(w))
			cursor = w.Header().Get("Next-Cursor")
			if cursor == "" {
				break
			}
		}
		want := []string{inv[3].ID + " " + inv[2].ID + " " + inv[1].ID, inv[0].ID}
		if strings.Join(got, "|") != strings.Join(want, "|") {
			t.Errorf("pages %q, want %q", got, want)
		}
	})

	t.Run("page with a date filter", func(t *testing.T) {
		w := e.do("GET", "/api/v1/stores/store_a/invoices?limit=1&startDate="+day(-1), "")
		cursor := w.Header().Get("Next-Cursor")
		if ids(w) != inv[3].ID || cursor == "" {
			t.Errorf("page %q cursor %q", ids(w), cursor)
		}
		w = e.do("GET", "/api/v1/stores/store_a/invoices?limit=1&startDate="+day(-1)+"&cursor="+cursor, "")
		if ids(w) != inv[2].ID || w.Header().Get("Next-Cursor") != "" {
			t.Errorf("last page %q cursor %q", ids(w), w.Header().Get("Next-Cursor"))
		}
	})

	bad := []struct{ query, field string }{
		{"?startDate=yesterday", "startDate"},
		{"?endDate=2024-13-45", "endDate"},
		{"?startDate=" + day(0) + "&endDate=" + day(-1), "endDate"},
		{"?limit=0", "limit"},
		{"?limit=1001", "limit"},
		{"?limit=ten", "limit"},
		{"?limit=-1", "limit"},
		{"?cursor=" + strings.Repeat("c", 600), "cursor"},
	}
	for _, tt := range bad {
		t.Run(tt.query, func(t *testing.T) {
			body := expectError(t, e.do("GET", "/api/v1/stores/store_a/invoices"+tt.query, ""), 400, kassa.Invalid)
			if len(body.Errors) != 1 || body.Errors[0].Field != tt.field {
				t.Errorf("errors %+v, want field %s", body.Errors, tt.field)
			}
		})
	}
}

// TestListInvoicesByOrderID: orderId finds the store's invoices of that
// order id, whole and in any case, with the dates and pages of the list.
func TestListInvoicesByOrderID(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, seedStart)
	inv := seedInvoices(e)
	again := e.seedInvoice("store_a", testNow, `{"amount": 3, "orderId": "A1"}`)
	e.seedInvoice("store_b", testNow, `{"amount": 5, "orderId": "A1"}`)
	ids := func(w *httptest.ResponseRecorder) string {
		var out []string
		for _, rec := range decode[[]map[string]any](t, w) {
			out = append(out, rec["id"].(string))
		}
		return strings.Join(out, " ")
	}
	day := func(d int) string { return testNow.AddDate(0, 0, d).Format("2006-01-02") }
	for _, tt := range []struct{ query, want, next string }{
		{"?orderId=A1", again.ID + " " + inv[2].ID, ""},
		{"?orderId=a1", again.ID + " " + inv[2].ID, ""},
		{"?orderId=A", "", ""},
		{"?orderId=A3", inv[0].ID, ""},
		{"?orderId=A1&endDate=" + day(-1), inv[2].ID, ""},
		{"?orderId=A1&limit=1", again.ID, "more"},
		{"?orderId=", inv[3].ID + " " + again.ID + " " + inv[2].ID + " " + inv[1].ID + " " + inv[0].ID, ""},
	} {
		t.Run(tt.query, func(t *testing.T) {
			w := e.do("GET", "/api/v1/stores/store_a/invoices"+tt.query, "")
			expectStatus(t, w, 200)
			if got := ids(w); got != tt.want && !(tt.query == "?orderId=" && len(strings.Fields(got)) == 5) {
				t.Errorf("ids %q, want %q", got, tt.want)
			}
			next := w.Header().Get("Next-Cursor")
			if (next != "") != (tt.next != "") {
				t.Errorf("Next-Cursor %q", next)
			}
			if next != "" {
				w := e.do("GET", "/api/v1/stores/store_a/invoices"+tt.query+"&cursor="+next, "")
				if got := ids(w); got != inv[2].ID || w.Header().Get("Next-Cursor") != "" {
					t.Errorf("next page %q (Next-Cursor %q), want %s", got, w.Header().Get("Next-Cursor"), inv[2].ID)
				}
			}
		})
	}
	body := expectError(t, e.do("GET", "/api/v1/stores/store_a/invoices?orderId="+strings.Repeat("x", 256), ""), 400, kassa.Invalid)
	if len(body.Errors) != 1 || body.Errors[0].Field != "orderId" {
		t.Errorf("errors %+v, want field orderId", body.Errors)
	}
}

// failAt makes lists fail at item n.
func failAt(n int) func(int) error {
	return func(i int) error {
		if i == n {
			return fmt.Errorf("disk on fire at item %d", i)
		}
		return nil
	}
}

func TestListInvoicesFailure(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, seedStart)
	seedInvoices(e)

	// Before the first item: a proper error response.
	e.reader.listItem = failAt(0)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/invoices", ""), 500, kassa.Internal, "internal error")
	expectError(t, e.do("GET", "/api/v1/stores/store_a/invoices?limit=10", ""), 500, kassa.Internal)

	// Midway through a buffered page: still a proper error.
	e.reader.listItem = failAt(1)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/invoices?limit=10", ""), 500, kassa.Internal)

	// Midway through a stream that has begun (status 200 sent): the
	// connection is cut, never a short list that looks whole.
	for range 60 {
		e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	}
	e.reader.listItem = failAt(50)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	req, _ := http.NewRequest("GET", srv.URL+"/api/v1/stores/store_a/invoices", nil)
	req.Header.Set("X-Api-Key", keyA)
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || err == nil {
		t.Errorf("status %d, read error %v: want 200 and a cut-off body", resp.StatusCode, err)
	}
	if !strings.Contains(e.logs.String(), "list failed after it began") {
		t.Error("the failure was not logged")
	}
}

func TestListInvoicesStreamsLargeLists(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const n = 2500
	for range n {
		e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	}
	w := e.do("GET", "/api/v1/stores/store_a/invoices", "")
	expectStatus(t, w, 200)
	if got := len(decode[[]invoiceRecord](t, w)); got != n {
		t.Errorf("%d invoices, want %d", got, n)
	}
}

// TestQRCodesInResponses checks that the create and single-invoice
// responses carry the QR codes of the invoice's BOLT11 and BIP21 URI
// (package qr checks that they decode).
func TestQRCodesInResponses(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/api/v1/stores/store_a/invoices", `{"amount": 1}`)
	created := decode[createdInvoice](t, w)
	want, err := qr.InvoiceCodes(created.LightningInvoice, created.BIP21)
	if err != nil {
		t.Fatal(err)
	}
	if created.QRCodes.LightningQR != want.Lightning || created.QRCodes.BitcoinQR != want.Bitcoin {
		t.Error("the create response's QR codes are not those of its BOLT11 and BIP21 URI")
	}
	if want.Lightning == "" || want.Bitcoin == "" {
		t.Error("an invoice with both methods lacks a QR code")
	}

	single := decode[invoiceRecord](t, e.do("GET", "/api/v1/stores/store_a/invoices/"+created.ID, ""))
	if single.QRCodes == nil || single.QRCodes.LightningQR != created.QRCodes.LightningQR || single.QRCodes.BitcoinQR != created.QRCodes.BitcoinQR {
		t.Error("the single-invoice response has other QR codes than the create response")
	}
}
