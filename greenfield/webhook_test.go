package greenfield_test

// The webhook of BTCPay's WooCommerce Greenfield plugin: its registration
// and its receiver, reproduced from reading
//
//   - btcpayserver/woocommerce-greenfield-plugin v2.8.0 (commit
//     2a8fd7091d5f): src/Helper/GreenfieldApiWebhook.php (WEBHOOK_EVENTS,
//     registerWebhook, webhookExists), src/Gateway/AbstractGateway.php
//     (processWebhook, processOrderStatus, updateWCOrderStatus),
//     src/Helper/OrderStates.php (getDefaultOrderStateMappings),
//     src/Helper/GreenfieldApiHelper.php (invoiceIsFullyPaid),
//     src/Admin/GlobalSettings.php (btcpay_gf_protect_order_status,
//     default yes);
//   - btcpayserver/btcpayserver-greenfield-php v2.9.0 (commit
//     60e6be57f9cd): src/Client/Webhook.php (createWebhook's body,
//     isIncomingWebhookRequestValid), src/Result/Invoice.php (isSettled);
//   - btcpayserver/btcpayserver v2.4.1 (commit 03345c2886a5):
//     swagger.template.webhooks.json, BTCPayServer.Client/Models/
//     WebhookInvoiceEvent.cs and WebhookEvent.cs (the body),
//     Plugins/Webhooks/WebhookSender.cs (BTCPay-Sig, redelivery).

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/egress"
	"github.com/kassapay/kassa/kassatest"
)

// pluginEvents is GreenfieldApiWebhook::WEBHOOK_EVENTS.
var pluginEvents = []string{"InvoiceReceivedPayment", "InvoicePaymentSettled", "InvoiceProcessing", "InvoiceExpired", "InvoiceSettled", "InvoiceInvalid"}

// orderStates is OrderStates::getDefaultOrderStateMappings; "" is
// BTCPAY_IGNORE (no change).
var orderStates = map[string]string{
	"New": "pending", "Processing": "on-hold", "Settled": "", "SettledPaidOver": "processing",
	"Invalid": "failed", "Expired": "cancelled", "ExpiredPaidPartial": "failed", "ExpiredPaidLate": "processing",
}

// order is a WooCommerce order as the plugin changes it.
type order struct {
	status string
	notes  []string
}

// shop is the plugin's webhook receiver, processWebhook: it refuses a
// request whose BTCPay-Sig (any case) is missing or does not verify as
// Webhook::isIncomingWebhookRequestValid verifies it (wp_die: 500), finds
// the order by invoiceId and applies processOrderStatus.
type shop struct {
	e   *env
	url string

	mu       sync.Mutex
	secret   string
	orders   map[string]*order // by BTCPay_id
	bodies   []map[string]any  // every verified body, in order
	refused  int
	received int
}

func newShop(t *testing.T, e *env) *shop {
	s := &shop{e: e, orders: map[string]*order{}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	// WC()->api_request_url('btcpaygf_default') with pretty permalinks.
	s.url = srv.URL + "/wc-api/btcpaygf_default/"
	return s
}

// validSig is Webhook::isIncomingWebhookRequestValid: both non-empty and
// hash_equals('sha256=' . hash_hmac('sha256', body, secret), header).
func validSig(body []byte, header, secret string) bool {
	if len(body) == 0 || header == "" {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return hmac.Equal([]byte("sha256="+hex.EncodeToString(mac.Sum(nil))), []byte(header))
}

func (s *shop) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.received++
	signature := ""
	for name, values := range r.Header {
		if strings.ToLower(name) == "btcpay-sig" {
			signature = values[0]
		}
	}
	if signature == "" || !validSig(body, signature, s.secret) {
		s.refused++
		http.Error(w, "Webhook request validation failed.", http.StatusInternalServerError)
		return
	}
	var data map[string]any
	if err := json.Unmarshal(body, &data); err != nil {
		return // logged, 200
	}
	s.bodies = append(s.bodies, data)
	id, _ := data["invoiceId"].(string)
	o := s.orders[id]
	if o == nil {
		http.Error(w, "No order found for this invoiceId.", http.StatusOK)
		return
	}
	s.processOrderStatus(o, data)
}

func (s *shop) processOrderStatus(o *order, data map[string]any) {
	typ, _ := data["type"].(string)
	if !slices.Contains(pluginEvents, typ) {
		return
	}
	flag := func(name string) bool { v, _ := data[name].(bool); return v }
	set := func(state string) {
		if st := orderStates[state]; st != "" {
			o.status = st
		}
	}
	note := func(n string) { o.notes = append(o.notes, n) }
	// Protected orders (default yes).
	if o.status == "processing" || o.status == "completed" {
		note("Webhook (" + typ + ") received from BTCPay, but the order is already processing or completed")
		return
	}
	switch typ {
	case "InvoiceReceivedPayment":
		if flag("afterExpiration") {
			set("ExpiredPaidPartial")
			note("Invoice (partial) payment incoming (unconfirmed) after invoice was already expired.")
		} else {
			note("Invoice (partial) payment incoming (unconfirmed). Waiting for settlement.")
		}
	case "InvoicePaymentSettled":
		if o.status == orderStates["Expired"] || o.status == orderStates["ExpiredPaidPartial"] {
			id, _ := data["invoiceId"].(string)
			if s.invoiceIsFullyPaid(id) {
				set("ExpiredPaidLate")
				note("Invoice fully settled after invoice was already expired. Needs manual checking.")
			} else {
				set("ExpiredPaidPartial")
				note("(Partial) payment settled but invoice not settled yet")
			}
		} else {
			note("Invoice (partial) payment settled.")
		}
	case "InvoiceProcessing":
		set("Processing")
		note("Invoice payment received fully, waiting for settlement.")
	case "InvoiceInvalid":
		set("Invalid")
		if flag("manuallyMarked") {
			note("Invoice manually marked invalid.")
		} else {
			note("Invoice became invalid.")
		}
	case "InvoiceExpired":
		if flag("partiallyPaid") {
			set("ExpiredPaidPartial")
			note("Invoice expired but was paid partially, please check.")
		} else {
			set("Expired")
			note("Invoice expired.")
		}
	case "InvoiceSettled":
		// WC_Order::payment_complete: processing from these statuses.
		if slices.Contains([]string{"on-hold", "pending", "failed", "cancelled"}, o.status) {
			o.status = "processing"
		}
		if flag("overPaid") {
			note("Invoice payment settled but was overpaid.")
			set("SettledPaidOver")
		} else {
			note("Invoice payment settled.")
			set("Settled")
		}
	}
}

// invoiceIsFullyPaid is GreenfieldApiHelper::invoiceIsFullyPaid:
// Invoice::getInvoice, then Result/Invoice::isSettled (Settled, or
// additionalStatus PaidLate).
func (s *shop) invoiceIsFullyPaid(id string) bool {
	r := httptest.NewRequest("GET", base+"/api/v1/stores/store_a/invoices/"+id, nil)
	r.Header.Set("Authorization", "token "+keyA)
	w := httptest.NewRecorder()
	s.e.h.ServeHTTP(w, r)
	var inv struct{ Status, AdditionalStatus string }
	if w.Code != http.StatusOK || json.Unmarshal(w.Body.Bytes(), &inv) != nil {
		return false
	}
	return inv.Status == "Settled" || inv.AdditionalStatus == "PaidLate"
}

// register replays GreenfieldApiWebhook::registerWebhook: the body as
// Webhook::createWebhook json_encodes it (slashes escaped), then stores
// id, secret and url.
func (s *shop) register(t *testing.T) (id string) {
	t.Helper()
	url := strings.ReplaceAll(s.url, "/", `\/`)
	body := `{"enabled":true,"automaticRedelivery":true,"url":"` + url + `","authorizedEvents":{"everything":false,"specificEvents":["InvoiceReceivedPayment","InvoicePaymentSettled","InvoiceProcessing","InvoiceExpired","InvoiceSettled","InvoiceInvalid"]}}`
	w := s.e.do("POST", base+"/api/v1/stores/store_a/webhooks", body)
	expectStatus(t, w, http.StatusOK)
	got := decode[struct {
		ID                  string `json:"id"`
		Secret              string `json:"secret"`
		URL                 string `json:"url"`
		Enabled             bool   `json:"enabled"`
		AutomaticRedelivery bool   `json:"automaticRedelivery"`
		AuthorizedEvents    struct {
			Everything     bool     `json:"everything"`
			SpecificEvents []string `json:"specificEvents"`
		} `json:"authorizedEvents"`
	}](t, w)
	if got.ID == "" || len(got.Secret) < 16 || got.URL != s.url || !got.Enabled || !got.AutomaticRedelivery ||
		got.AuthorizedEvents.Everything || !slices.Equal(got.AuthorizedEvents.SpecificEvents, pluginEvents) {
		t.Fatalf("created webhook %+v", got)
	}
	s.mu.Lock()
	s.secret = got.Secret
	s.mu.Unlock()
	return got.ID
}

// newOrder places an order: its invoice (createBody), BTCPay_id stored.
func (s *shop) newOrder(t *testing.T) string {
	t.Helper()
	inv := decode[invoiceData](t, s.e.do("POST", base+"/api/v1/stores/store_a/invoices", createBody))
	s.mu.Lock()
	s.orders[inv.ID] = &order{status: "pending"}
	s.mu.Unlock()
	return inv.ID
}

// waitBodies waits until the shop verified n bodies.
func (s *shop) waitBodies(t *testing.T, n int) {
	t.Helper()
	kassatest.WaitUntil(t, "the shop to receive its deliveries", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.bodies) >= n
	})
}

func (s *shop) order(id string) order {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := *s.orders[id]
	o.notes = slices.Clone(o.notes)
	return o
}

func (s *shop) types(invoiceID string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, b := range s.bodies {
		if b["invoiceId"] == invoiceID {
			out = append(out, b["type"].(string))
		}
	}
	return out
}

// TestPluginWebhookRegistration: the plugin registers its webhook with
// its exact body; Kassa saves it without the unsigned probe that its
// receiver would refuse, and webhookExists finds it again.
func TestPluginWebhookRegistration(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newShop(t, e)
	id := s.register(t)
	if s.received != 0 {
		t.Errorf("the shop got %d requests at registration, want none (its receiver refuses unsigned ones)", s.received)
	}
	// webhookExists: getWebhook, same id, url containing the stored one.
	w := e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+id, "")
	expectStatus(t, w, http.StatusOK)
	got := decode[map[string]any](t, w)
	if got["id"] != id || !strings.Contains(got["url"].(string), s.url) || got["secret"] != nil {
		t.Errorf("getWebhook %v", got)
	}
	list := decode[[]map[string]any](t, e.do("GET", base+"/api/v1/stores/store_a/webhooks", ""))
	if len(list) != 1 || list[0]["id"] != id {
		t.Errorf("list %v", list)
	}
	stored, err := e.db.Webhook(t.Context(), id)
	if err != nil || stored.Format != kassa.FormatGreenfield {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	// updateWebhook with a null secret keeps it; events null is everything.
	w = e.do("PUT", base+"/api/v1/stores/store_a/webhooks/"+id,
		`{"enabled":true,"automaticRedelivery":false,"url":"`+s.url+`","secret":null,"authorizedEvents":{"everything":true}}`)
	expectStatus(t, w, http.StatusOK)
	upd := decode[struct {
		AutomaticRedelivery bool
		AuthorizedEvents    struct{ Everything bool }
	}](t, w)
	if upd.AutomaticRedelivery || !upd.AuthorizedEvents.Everything {
		t.Errorf("updated %+v", upd)
	}
	if after, _ := e.db.Webhook(t.Context(), id); after.Secret != stored.Secret {
		t.Error("a null secret changed the secret")
	}
	w = e.do("DELETE", base+"/api/v1/stores/store_a/webhooks/"+id, "")
	expectStatus(t, w, http.StatusOK)
	expectAPIError(t, e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+id, ""), http.StatusNotFound, "webhook-not-found")
}

// TestPluginOrderStatuses: each invoice's deliveries, verified as the
// PHP client verifies them, lead through the plugin's processOrderStatus
// to the order status it sets. A Coinsnap-format webhook of the same
// store gets only its four types, as before.
func TestPluginOrderStatuses(t *testing.T) {
	t.Parallel()
	txid := func(c string) string { return strings.Repeat(c, 64) }
	for _, tt := range []struct {
		name  string
		run   func(t *testing.T, e *env, s *shop, id string)
		types []string
		want  string
		note  string
	}{
		{"paid", func(t *testing.T, e *env, s *shop, id string) {
			e.payOnchain(id, txid("a"), 85800, 0)
			s.waitBodies(t, 2)
			e.payOnchain(id, txid("a"), 85800, 1)
		}, []string{"InvoiceReceivedPayment", "InvoiceProcessing", "InvoicePaymentSettled", "InvoiceSettled"}, "processing", "Invoice payment settled."},
		{"paid over", func(t *testing.T, e *env, s *shop, id string) {
			e.payOnchain(id, txid("b"), 90000, 1)
		}, []string{"InvoiceReceivedPayment", "InvoicePaymentSettled", "InvoiceProcessing", "InvoiceSettled"}, "processing", "Invoice payment settled but was overpaid."},
		{"partly paid then expired", func(t *testing.T, e *env, s *shop, id string) {
			e.payOnchain(id, txid("c"), 40000, 0)
			s.waitBodies(t, 1)
			e.clock.Advance(16 * time.Minute)
		}, []string{"InvoiceReceivedPayment", "InvoiceExpired"}, "failed", "Invoice expired but was paid partially, please check."},
		{"paid late", func(t *testing.T, e *env, s *shop, id string) {
			e.clock.Advance(16 * time.Minute)
			s.waitBodies(t, 1)
			e.payOnchain(id, txid("d"), 85800, 0)
			s.waitBodies(t, 2)
			e.payOnchain(id, txid("d"), 85800, 1)
		}, []string{"InvoiceExpired", "InvoiceReceivedPayment", "InvoicePaymentSettled", "InvoiceSettled"}, "processing",
			"Invoice fully settled after invoice was already expired. Needs manual checking."},
		{"marked invalid", func(t *testing.T, e *env, s *shop, id string) {
			expectStatus(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+id+"/status", `{"status":"Invalid"}`), http.StatusOK)
		}, []string{"InvoiceInvalid"}, "failed", "Invoice manually marked invalid."},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			s := newShop(t, e)
			s.register(t)
			cs, err := e.sys.Service.CreateWebhook(t.Context(), "store_a", &kassa.WebhookInput{URL: acceptAll(t)})
			if err != nil {
				t.Fatal(err)
			}
			id := s.newOrder(t)
			tt.run(t, e, s, id)
			s.waitBodies(t, len(tt.types))
			kassatest.WaitUntil(t, "the order's last change", func() bool {
				o := s.order(id)
				return o.status == tt.want && slices.Contains(o.notes, tt.note)
			})
			if got := s.types(id); !slices.Equal(got, tt.types) {
				t.Errorf("types %v, want %v", got, tt.types)
			}
			if s.refused != 0 {
				t.Errorf("%d deliveries refused by the plugin's signature check", s.refused)
			}
			// The Coinsnap-format webhook: only New, Processing, Settled, Expired.
			_, err = e.db.Deliveries(t.Context(), cs.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
				if !slices.Contains(kassa.EventTypes, d.Type) {
					t.Errorf("a Coinsnap-format delivery of type %s", d.Type)
				}
				if _, ok := d.Headers["BTCPay-Sig"]; ok {
					t.Error("a Coinsnap-format delivery signed BTCPay-Sig")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWebhookBody checks a delivery's body and headers against
// WebhookInvoiceEvent and WebhookSender, and a redelivery (by hand): the
// body again with a new deliveryId, isRedelivery true, the original's
// originalDeliveryId and timestamp, signed anew; the deliveries list.
func TestWebhookBody(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	s := newShop(t, e)
	hook := s.register(t)
	id := s.newOrder(t)
	expectStatus(t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+id+"/status", `{"status":"Invalid"}`), http.StatusOK)
	s.waitBodies(t, 1)
	b := s.bodies[0]
	delivery, _ := b["deliveryId"].(string)
	if delivery == "" || b["webhookId"] != hook || b["originalDeliveryId"] != delivery || b["isRedelivery"] != false ||
		b["type"] != "InvoiceInvalid" || b["timestamp"] != float64(testNow.Unix()) || b["storeId"] != "store_a" ||
		b["invoiceId"] != id || b["manuallyMarked"] != true {
		t.Errorf("body %v", b)
	}
	if md, _ := b["metadata"].(map[string]any); md["orderId"] != "123" {
		t.Errorf("metadata %v", b["metadata"])
	}

	// The deliveries list and one delivery (WebhookDeliveryData).
	var list []map[string]any
	kassatest.WaitUntil(t, "the attempt to be recorded", func() bool {
		w := e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries?count=10", "")
		expectStatus(t, w, http.StatusOK)
		list = decode[[]map[string]any](t, w)
		return len(list) == 1 && list[0]["status"] != "Failed"
	})
	if len(list) != 1 || list[0]["id"] != delivery || list[0]["status"] != "HttpSuccess" || list[0]["httpCode"] != float64(200) {
		t.Errorf("deliveries %v", list)
	}
	expectStatus(t, e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries/"+delivery, ""), http.StatusOK)

	// Redeliver: the new delivery's id as a JSON string.
	e.clock.Advance(time.Minute)
	w := e.do("POST", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries/"+delivery+"/redeliver", "")
	expectStatus(t, w, http.StatusOK)
	again := decode[string](t, w)
	s.waitBodies(t, 2)
	r := s.bodies[1]
	if again == "" || again == delivery || r["deliveryId"] != again || r["originalDeliveryId"] != delivery || r["isRedelivery"] != true ||
		r["timestamp"] != b["timestamp"] || r["type"] != "InvoiceInvalid" || r["manuallyMarked"] != true {
		t.Errorf("redelivered %q: %v", again, r)
	}
	if s.refused != 0 {
		t.Errorf("%d deliveries refused", s.refused)
	}
	// The stored request is the body sent.
	w = e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries/"+again+"/request", "")
	expectStatus(t, w, http.StatusOK)
	if got := decode[map[string]any](t, w); got["deliveryId"] != again {
		t.Errorf("request %v", got)
	}
}

// TestWebhookBadInput: Greenfield's 4xx shapes, nothing stored.
func TestWebhookBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hooks := base + "/api/v1/stores/store_a/webhooks"
	count := func() int {
		n := 0
		if err := e.db.Webhooks(t.Context(), "store_a", func(*kassa.Webhook) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
		return n
	}
	expectValidation(t, e.do("POST", hooks, `{"url":"https://shop.example/hook","authorizedEvents":{"everything":false,"specificEvents":["InvoiceSettled","Settled"]}}`),
		"authorizedEvents.specificEvents[1]")
	expectValidation(t, e.do("POST", hooks, `{"authorizedEvents":{"everything":true}}`), "url")
	expectValidation(t, e.do("POST", hooks, `{"url":"https://shop.example/hook","secret":"short"}`), "secret")
	expectValidation(t, e.do("POST", hooks, `{"url":12}`), "url")
	expectAPIError(t, e.do("POST", base+"/api/v1/stores/store_b/webhooks", `{"url":"https://shop.example/hook"}`),
		http.StatusForbidden, "missing-permission", "btcpay.store.webhooks.canmodifywebhooks")
	expectAPIError(t, e.do("GET", hooks+"/no_such_hook", ""), http.StatusNotFound, "webhook-not-found")
	// A webhook of Kassa's own API is not Greenfield's.
	cs, err := e.sys.Service.CreateWebhook(t.Context(), "store_a", &kassa.WebhookInput{URL: acceptAll(t)})
	if err != nil {
		t.Fatal(err)
	}
	expectAPIError(t, e.do("GET", hooks+"/"+cs.ID, ""), http.StatusNotFound, "webhook-not-found")
	if n := count(); n != 1 {
		t.Errorf("%d webhooks after bad input, want only the Coinsnap one", n)
	}

	// Outside --dev: https only, public addresses only, though no probe.
	prod := newEnvWith(t, egress.DefaultConfig())
	for _, url := range []string{"http://shop.example/hook", "https://127.0.0.1/hook", "https://10.1.2.3/hook", "https://localhost/hook"} {
		expectValidation(t, prod.do("POST", hooks, `{"url":"`+url+`"}`), "url")
	}
	n := 0
	if err := prod.db.Webhooks(t.Context(), "store_a", func(*kassa.Webhook) error { n++; return nil }); err != nil || n != 0 {
		t.Errorf("%d webhooks stored outside --dev, %v", n, err)
	}
}

// acceptAll is a receiver that answers 200 to everything, the unsigned
// probe of a Coinsnap-format registration included.
func acceptAll(t *testing.T) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.Copy(io.Discard, r.Body) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/hook"
}
