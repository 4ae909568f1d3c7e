package greenfield_test

// The calls of BTCPay's WooCommerce Greenfield plugin, in its order, with
// its exact request bodies and the fields it reads. Facts read from:
//
//   - btcpayserver/woocommerce-greenfield-plugin v2.8.0 (commit
//     2a8fd7091d5f): src/Admin/GlobalSettings.php (save: the setup
//     checks), src/Helper/GreenfieldApiAuthorization.php,
//     src/Helper/GreenfieldApiHelper.php, src/Gateway/AbstractGateway.php
//     (process_payment, createInvoice, validInvoiceExists,
//     markInvoiceInvalid, updateWCOrderPayments), src/Gateway/DefaultGateway.php;
//   - btcpayserver/btcpayserver-greenfield-php v2.9.0 (commit
//     60e6be57f9cd): src/Client/*.php (paths, bodies, headers) and
//     src/Result/*.php (the fields read);
//   - btcpayserver/btcpayserver v2.4.1 (commit 03345c2886a5):
//     BTCPayServer/wwwroot/swagger/v1/*.json, the shapes.

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
)

// apiKeyData is what GreenfieldApiAuthorization reads of api-keys/current.
type apiKeyData struct {
	APIKey      string   `json:"apiKey"`
	Label       string   `json:"label"`
	Permissions []string `json:"permissions"`
}

// pluginRequired and pluginOptional are GreenfieldApiAuthorization's
// REQUIRED_PERMISSIONS and OPTIONAL_PERMISSIONS.
var (
	pluginRequired = []string{"btcpay.store.canviewinvoices", "btcpay.store.cancreateinvoice", "btcpay.store.canviewstoresettings", "btcpay.store.canmodifyinvoices"}
	pluginOptional = []string{"btcpay.store.cancreatenonapprovedpullpayments", "btcpay.store.webhooks.canmodifywebhooks"}
)

// TestPluginSetup replays GlobalSettings::save: the key's permissions
// (hasSingleStore, hasRequiredPermissions, getStoreID), server/info
// (fullySynched cast to int must be 1; version compared with 1.7.6), the
// store's payment methods (non-empty; each enabled one's paymentMethod
// becomes a gateway), and checkApiKeyWorks' store list.
func TestPluginSetup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// 1. ApiKey::getCurrent: GET api-keys/current.
	w := e.do("GET", base+"/api/v1/api-keys/current", "")
	expectStatus(t, w, http.StatusOK)
	key := decode[apiKeyData](t, w)
	if key.APIKey != keyA || key.Label != "WooCommerce" {
		t.Errorf("apiKey %q label %q", key.APIKey, key.Label)
	}
	// hasSingleStore: every permission is "<perm>:<storeId>", one store.
	// hasRequiredPermissions: less the optional ones, exactly the
	// required four. getStoreID: the store of permissions[0].
	var perms []string
	for _, p := range key.Permissions {
		name, store, ok := strings.Cut(p, ":")
		if !ok || store != "store_a" || strings.Contains(store, ":") {
			t.Errorf("permission %q is not <perm>:store_a", p)
		}
		if !slices.Contains(pluginOptional, name) {
			perms = append(perms, name)
		}
	}
	slices.Sort(perms)
	want := slices.Clone(pluginRequired)
	slices.Sort(want)
	if !slices.Equal(perms, want) {
		t.Errorf("permissions %v: the plugin requires exactly %v", key.Permissions, pluginRequired)
	}

	// 2. Server::getInfo: GET server/info.
	w = e.do("GET", base+"/api/v1/server/info", "")
	expectStatus(t, w, http.StatusOK)
	info := decode[struct {
		Version                 string   `json:"version"`
		FullySynched            *bool    `json:"fullySynched"`
		SupportedPaymentMethods []string `json:"supportedPaymentMethods"`
	}](t, w)
	if info.FullySynched == nil || !*info.FullySynched {
		t.Errorf("fullySynched %v, want true while the backends are synced", info.FullySynched)
	}
	if info.Version != "2.4.1" {
		t.Errorf("version %q", info.Version)
	}
	*e.chain.synced = false
	w = e.do("GET", base+"/api/v1/server/info", "")
	if got := decode[struct{ FullySynched bool }](t, w); got.FullySynched {
		t.Error("fullySynched while a backend is not synced")
	}
	*e.chain.synced = true

	// 3. StorePaymentMethod::getPaymentMethods: GET stores/{id}/payment-methods.
	// StorePaymentMethodCollection::all reads paymentMethodId (BTCPay 2.x
	// lists), AbstractStorePaymentMethodResult puts it in paymentMethod,
	// isEnabled reads enabled.
	w = e.do("GET", base+"/api/v1/stores/store_a/payment-methods", "")
	expectStatus(t, w, http.StatusOK)
	methods := decode[[]struct {
		Enabled         bool   `json:"enabled"`
		PaymentMethodID string `json:"paymentMethodId"`
	}](t, w)
	var ids []string
	for _, m := range methods {
		if !m.Enabled {
			t.Errorf("%s not enabled", m.PaymentMethodID)
		}
		ids = append(ids, m.PaymentMethodID)
	}
	if !slices.Equal(ids, []string{"BTC-CHAIN", "BTC-LN"}) {
		t.Errorf("payment methods %v, want BTC-CHAIN and BTC-LN", ids)
	}
	// includeConfig needs canmodifystoresettings, which the key lacks.
	expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_a/payment-methods?includeConfig=true", ""),
		http.StatusForbidden, "missing-permission", "btcpay.store.canmodifystoresettings")

	// 4. GreenfieldApiHelper::checkApiKeyWorks: Store::getStores non-empty.
	w = e.do("GET", base+"/api/v1/stores", "")
	expectStatus(t, w, http.StatusOK)
	stores := decode[[]struct{ ID, Name, DefaultCurrency string }](t, w)
	if len(stores) != 1 || stores[0].ID != "store_a" || stores[0].DefaultCurrency != "EUR" {
		t.Errorf("stores %+v", stores)
	}
	w = e.do("GET", base+"/api/v1/stores/store_a", "")
	expectStatus(t, w, http.StatusOK)
	if got := decode[struct{ ID, Name string }](t, w); got.ID != "store_a" || got.Name != "Alice's Shop" {
		t.Errorf("store %+v", got)
	}
}

// createBody is AbstractGateway::createInvoice's request as the PHP
// client encodes it (Invoice::createInvoice, json_encode without flags:
// slashes escaped): amount a decimal string of the order total, the
// order's currency, metadata with the customer data (when the shop sends
// it), taxIncluded, posData as a JSON string and orderUrl, then orderId
// added by the client; checkout is InvoiceCheckoutOptions::toArray, every
// field, null when unset, paymentMethods the gateways' symbols with "_".
const createBody = `{"amount":"42.90","currency":"EUR","metadata":{"buyerEmail":"buyer@example.com","buyerName":"Ada Buyer","buyerAddress1":"1 Main St","buyerAddress2":"","buyerCity":"Berlin","buyerState":"","buyerZip":"10115","buyerCountry":"DE","taxIncluded":6.85,"posData":"{\"WooCommerce\":{\"Order ID\":123,\"Order Number\":\"123\",\"Order URL\":\"https:\\/\\/shop.example\\/wp-admin\\/post.php?post=123&action=edit\",\"Plugin Version\":\"2.8.0\"}}","orderUrl":"https:\/\/shop.example\/wp-admin\/post.php?post=123&action=edit","orderId":"123"},"checkout":{"speedPolicy":null,"paymentMethods":["BTC_CHAIN","BTC_LN"],"expirationMinutes":null,"monitoringMinutes":null,"paymentTolerance":null,"redirectURL":"https:\/\/shop.example\/checkout\/order-received\/123\/?key=wc_order_abc","redirectAutomatically":null,"defaultLanguage":null}}`

// invoiceData is what the plugin and the client read of an invoice
// (src/Result/Invoice.php; AbstractGateway reads id, checkoutLink,
// status and checkout.paymentMethods).
type invoiceData struct {
	ID               string         `json:"id"`
	StoreID          string         `json:"storeId"`
	Amount           string         `json:"amount"`
	PaidAmount       string         `json:"paidAmount"`
	Currency         string         `json:"currency"`
	Type             string         `json:"type"`
	CheckoutLink     string         `json:"checkoutLink"`
	Status           string         `json:"status"`
	AdditionalStatus string         `json:"additionalStatus"`
	Marking          []string       `json:"availableStatusesForManualMarking"`
	Archived         *bool          `json:"archived"`
	Metadata         map[string]any `json:"metadata"`
	Checkout         struct {
		PaymentMethods []string `json:"paymentMethods"`
		RedirectURL    string   `json:"redirectURL"`
		SpeedPolicy    string   `json:"speedPolicy"`
	} `json:"checkout"`
}

// TestPluginOrder replays an order: process_payment creates the invoice
// and sends the customer to checkoutLink; a second visit finds it by
// BTCPay_id (validInvoiceExists: getInvoice, status not Expired or
// Invalid, checkout.paymentMethods with "-" as "_" equal to the
// gateways') or goes to getInvoiceRedirectUrl (<base>/i/<id>); the
// webhook handlers store the payment data (updateWCOrderPayments) and
// ask invoiceIsFullyPaid (Settled or PaidLate).
func TestPluginOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)

	// process_payment → createInvoice.
	w := e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody)
	expectStatus(t, w, http.StatusOK)
	inv := decode[invoiceData](t, w)
	if inv.ID == "" || inv.CheckoutLink != "https://pay.example.com/checkout/"+inv.ID {
		t.Fatalf("id %q checkoutLink %q", inv.ID, inv.CheckoutLink)
	}
	if inv.Amount != "42.90" || inv.Currency != "EUR" || inv.Status != "New" || inv.AdditionalStatus != "None" ||
		inv.Type != "Standard" || inv.PaidAmount != "0.00" || inv.StoreID != "store_a" || inv.Archived == nil || *inv.Archived {
		t.Errorf("invoice %+v", inv)
	}
	if inv.Metadata["orderId"] != "123" || inv.Metadata["buyerEmail"] != "buyer@example.com" ||
		inv.Metadata["orderUrl"] != "https://shop.example/wp-admin/post.php?post=123&action=edit" {
		t.Errorf("metadata %v", inv.Metadata)
	}
	if inv.Checkout.RedirectURL != "https://shop.example/checkout/order-received/123/?key=wc_order_abc" {
		t.Errorf("redirectURL %q", inv.Checkout.RedirectURL)
	}
	stored, err := e.db.Invoice(t.Context(), inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	// 42.90 EUR at 50,000 EUR/BTC, the order ID and e-mail and the
	// redirect in the domain's own fields.
	if stored.Amount != 85800 || stored.OrderID != "123" || stored.BuyerEmail != "buyer@example.com" ||
		stored.RedirectURL != inv.Checkout.RedirectURL || !stored.InvoiceAmount.Equal(decimal.RequireFromString("42.90")) {
		t.Errorf("stored %d sat, order %q, e-mail %q, redirect %q", stored.Amount, stored.OrderID, stored.BuyerEmail, stored.RedirectURL)
	}

	// process_payment for an order with an invoice: getInvoiceRedirectUrl.
	w = e.do("GET", base+"/i/"+inv.ID, "", "")
	if w.Code != http.StatusFound || w.Header().Get("Location") != inv.CheckoutLink {
		t.Errorf("%s/i/<id>: %d to %q", base, w.Code, w.Header().Get("Location"))
	}

	// validInvoiceExists: Invoice::getInvoice.
	w = e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID, "")
	expectStatus(t, w, http.StatusOK)
	got := decode[invoiceData](t, w)
	pm := slices.Clone(got.Checkout.PaymentMethods)
	for i := range pm {
		pm[i] = strings.ReplaceAll(pm[i], "-", "_")
	}
	slices.Sort(pm)
	if got.Status != "New" || !slices.Equal(pm, []string{"BTC_CHAIN", "BTC_LN"}) {
		t.Errorf("status %q, payment methods %v: the plugin would not reuse the invoice", got.Status, got.Checkout.PaymentMethods)
	}
	if !slices.Contains(got.Marking, "Invalid") {
		t.Errorf("availableStatusesForManualMarking %v", got.Marking)
	}

	// The payment arrives: updateWCOrderPayments reads the invoice's
	// payment methods (Invoice::getPaymentMethods, InvoicePaymentMethod,
	// InvoicePayment).
	txid := strings.Repeat("ab01", 16)
	e.payOnchain(inv.ID, txid, 85800, 0)
	w = e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID+"/payment-methods", "")
	expectStatus(t, w, http.StatusOK)
	type payment struct {
		ID           string `json:"id"`
		ReceivedDate int64  `json:"receivedDate"`
		Value        string `json:"value"`
		Fee          string `json:"fee"`
		Status       string `json:"status"`
		Destination  string `json:"destination"`
	}
	methods := decode[[]struct {
		PaymentMethodID   string    `json:"paymentMethodId"`
		PaymentMethodPaid string    `json:"paymentMethodPaid"`
		TotalPaid         string    `json:"totalPaid"`
		Amount            string    `json:"amount"`
		Due               string    `json:"due"`
		PaymentMethodFee  string    `json:"paymentMethodFee"`
		Rate              string    `json:"rate"`
		Destination       string    `json:"destination"`
		Payments          []payment `json:"payments"`
	}](t, w)
	if len(methods) != 2 {
		t.Fatalf("%d payment methods: %s", len(methods), w.Body.String())
	}
	chain := methods[0]
	if chain.PaymentMethodID != "BTC-CHAIN" || chain.PaymentMethodPaid != "0.00085800" || chain.TotalPaid != "0.00085800" ||
		chain.Amount != "0.00085800" || chain.Due != "0.00000000" || chain.PaymentMethodFee != "0.00000000" || chain.Rate != "50000" ||
		chain.Destination != stored.OnchainAddress {
		t.Errorf("BTC-CHAIN %+v", chain)
	}
	if len(chain.Payments) != 1 {
		t.Fatalf("payments %+v", chain.Payments)
	}
	p := chain.Payments[0]
	// InvoicePayment::getTransactionId is the id up to its first "-".
	if txidOf, _, _ := strings.Cut(p.ID, "-"); txidOf != txid || p.Value != "0.00085800" || p.Status != "Processing" ||
		p.Destination != stored.OnchainAddress || p.ReceivedDate != testNow.Unix() || p.Fee != "0.00000000" {
		t.Errorf("payment %+v", p)
	}
	if ln := methods[1]; ln.PaymentMethodID != "BTC-LN" || ln.PaymentMethodPaid != "0.00000000" || ln.TotalPaid != "0.00085800" {
		t.Errorf("BTC-LN %+v", ln)
	}

	// Confirmed: invoiceIsFullyPaid (Result/Invoice::isSettled).
	e.payOnchain(inv.ID, txid, 85800, 1)
	w = e.do("GET", base+"/api/v1/stores/store_a/invoices/"+inv.ID, "")
	got = decode[invoiceData](t, w)
	if got.Status != "Settled" || got.PaidAmount != "42.90" || len(got.Marking) != 0 {
		t.Errorf("after the confirmation: status %q paid %q marking %v", got.Status, got.PaidAmount, got.Marking)
	}
	// A settled invoice cannot be marked Invalid.
	expectValidation(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+inv.ID+"/status", `{"status":"Invalid"}`), "status")
}

// TestPluginMarkInvalid replays validInvoiceExists with separate
// gateways when the customer changed gateway: markInvoiceInvalid sends
// {"status":"Invalid"} (Invoice::markInvoiceStatus) and a new invoice is
// made for the order.
func TestPluginMarkInvalid(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	inv := decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody))
	w := e.do("POST", base+"/api/v1/stores/store_a/invoices/"+inv.ID+"/status", `{"status":"Invalid"}`)
	expectStatus(t, w, http.StatusOK)
	if got := decode[invoiceData](t, w); got.Status != "Invalid" || len(got.Marking) != 0 {
		t.Errorf("status %q marking %v", got.Status, got.Marking)
	}
	stored, err := e.db.Invoice(t.Context(), inv.ID)
	if err != nil || stored.Status.String() != "Invalid" {
		t.Fatalf("stored %v, %v", stored, err)
	}
	// Settled by hand is not something Kassa does.
	other := decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody))
	expectValidation(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+other.ID+"/status", `{"status":"Settled"}`), "status")
	if s, _ := e.db.Invoice(t.Context(), other.ID); s.Status.String() != "New" {
		t.Errorf("marked Settled: %s", s.Status)
	}
}

// TestListInvoices filters as Invoice::getAllInvoicesWithFilter asks:
// orderId and status repeated, startDate/endDate in Unix seconds, skip
// and take; newest first.
func TestListInvoices(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var ids []string
	for _, order := range []string{"1", "2", "3"} {
		body := strings.Replace(createBody, `"orderId":"123"`, `"orderId":"`+order+`"`, 1)
		ids = append(ids, decode[invoiceData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices", body)).ID)
		e.clock.Advance(60e9)
	}
	list := func(query string) []string {
		t.Helper()
		w := e.do("GET", base+"/api/v1/stores/store_a/invoices"+query, "")
		expectStatus(t, w, http.StatusOK)
		var out []string
		for _, inv := range decode[[]invoiceData](t, w) {
			out = append(out, inv.ID)
		}
		return out
	}
	if got := list(""); !slices.Equal(got, []string{ids[2], ids[1], ids[0]}) {
		t.Errorf("all: %v", got)
	}
	if got := list("?orderId=1&orderId=3"); !slices.Equal(got, []string{ids[2], ids[0]}) {
		t.Errorf("orderId 1 and 3: %v", got)
	}
	if got := list("?status=New&status=Settled&skip=1&take=1"); !slices.Equal(got, []string{ids[1]}) {
		t.Errorf("skip 1 take 1: %v", got)
	}
	if got := list("?status=Invalid"); len(got) != 0 {
		t.Errorf("Invalid: %v", got)
	}
	start, end := testNow.Unix()+60, testNow.Unix()+60
	if got := list("?startDate=" + itoa(start) + "&endDate=" + itoa(end)); !slices.Equal(got, []string{ids[1]}) {
		t.Errorf("dates: %v", got)
	}
	expectValidation(t, e.do("GET", base+"/api/v1/stores/store_a/invoices?status=Paid&take=-1", ""), "status", "take")
}

func itoa(n int64) string { return decimal.NewFromInt(n).String() }

// TestPluginCallsInOrder makes every Greenfield call of the WooCommerce
// plugin (v2.8.0), in the order a shop makes them: setup
// (GlobalSettings::save, GreenfieldApiWebhook), an order
// (AbstractGateway::process_payment, validInvoiceExists,
// markInvoiceInvalid, updateWCOrderPayments) and a refund
// (process_refund); each is answered as the plugin needs. The tests
// above check the shapes of each.
func TestPluginCallsInOrder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	key := e.pluginKey()
	shop := newShop(t, e)
	var invoiceID, otherID, webhookID string
	path := func(p string) string {
		p = strings.ReplaceAll(p, "{invoiceId}", invoiceID)
		p = strings.ReplaceAll(p, "{otherId}", otherID)
		return strings.ReplaceAll(p, "{webhookId}", webhookID)
	}
	webhookBody := `{"enabled":true,"automaticRedelivery":true,"url":"` + shop.url + `","authorizedEvents":{"everything":false,"specificEvents":["InvoiceReceivedPayment","InvoicePaymentSettled","InvoiceProcessing","InvoiceExpired","InvoiceSettled","InvoiceInvalid"]}}`
	for _, call := range []struct {
		source, method, path, body string
		status                     int
		after                      func(w []byte)
	}{
		{source: "GlobalSettings::save ApiKey::getCurrent", method: "GET", path: "/api/v1/api-keys/current"},
		{source: "GreenfieldApiHelper::getServerInfo", method: "GET", path: "/api/v1/server/info"},
		{source: "GreenfieldApiWebhook::registerWebhook", method: "POST", path: "/api/v1/stores/store_a/webhooks", body: webhookBody,
			after: func(b []byte) { webhookID = decodeID(t, b) }},
		{source: "GreenfieldApiWebhook::webhookExists", method: "GET", path: "/api/v1/stores/store_a/webhooks/{webhookId}"},
		{source: "GreenfieldApiWebhook::updateWebhook", method: "PUT", path: "/api/v1/stores/store_a/webhooks/{webhookId}", body: webhookBody},
		{source: "GlobalSettings::save StorePaymentMethod::getPaymentMethods", method: "GET", path: "/api/v1/stores/store_a/payment-methods"},
		{source: "GreenfieldApiHelper::checkApiKeyWorks Store::getStores", method: "GET", path: "/api/v1/stores"},
		{source: "AbstractGateway::createInvoice", method: "POST", path: "/api/v1/stores/store_a/invoices", body: createBody,
			after: func(b []byte) { invoiceID = decodeID(t, b) }},
		{source: "AbstractGateway::getInvoiceRedirectUrl", method: "GET", path: "/i/{invoiceId}", status: http.StatusFound},
		{source: "AbstractGateway::validInvoiceExists Invoice::getInvoice", method: "GET", path: "/api/v1/stores/store_a/invoices/{invoiceId}"},
		{source: "AbstractGateway::createInvoice (another gateway)", method: "POST", path: "/api/v1/stores/store_a/invoices", body: createBody,
			after: func(b []byte) { otherID = decodeID(t, b) }},
		{source: "AbstractGateway::markInvoiceInvalid", method: "POST", path: "/api/v1/stores/store_a/invoices/{otherId}/status", body: `{"status":"Invalid"}`},
		{source: "AbstractGateway::updateWCOrderPayments Invoice::getPaymentMethods", method: "GET", path: "/api/v1/stores/store_a/invoices/{invoiceId}/payment-methods"},
		{source: "AbstractGateway::process_refund PullPayment::createPullPayment", method: "POST", path: "/api/v1/stores/store_a/pull-payments", body: pluginRefundBody},
	} {
		w := e.do(call.method, base+path(call.path), call.body, key)
		want := call.status
		if want == 0 {
			want = http.StatusOK
		}
		if w.Code != want {
			t.Fatalf("%s: %s %s answered %d, want %d: %s", call.source, call.method, call.path, w.Code, want, w.Body.String())
		}
		if call.after != nil {
			call.after(w.Body.Bytes())
		}
	}
}

func decodeID(t *testing.T, b []byte) string {
	t.Helper()
	var v struct{ ID string }
	if err := json.Unmarshal(b, &v); err != nil || v.ID == "" {
		t.Fatalf("no id in %s: %v", b, err)
	}
	return v.ID
}
