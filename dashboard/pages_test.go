package dashboard

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/kassapay/kassa"
)

// receiver records the webhook requests it gets and answers status.
type receiver struct {
	mu     sync.Mutex
	bodies []string
	status int
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	status := r.status
	r.mu.Unlock()
	if status == 0 {
		status = 200
	}
	w.WriteHeader(status)
	io.WriteString(w, "thanks from the shop")
}

func (r *receiver) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.bodies)
}

// TestWebhooksInvoicesPayLinks goes through the webhook, invoice and pay
// link pages: a webhook whose ping fails shows why; one that works gets
// the invoice made by hand, whose page lists the delivery; Redeliver
// sends it again; the invoice is marked invalid; a pay link is made,
// edited and archived.
func TestWebhooksInvoicesPayLinks(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID

	failing := &receiver{status: 500}
	bad := httptest.NewServer(failing)
	defer bad.Close()
	c.get(base + "/webhooks")
	code, body, _ := c.post(base+"/webhooks", url.Values{"url": {bad.URL}, "events": {"New", "Settled"}, "enabled": {"on"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "500") {
		t.Fatalf("webhook with a failing ping: %d %s", code, body)
	}

	rec := &receiver{}
	good := httptest.NewServer(rec)
	defer good.Close()
	code, body, hdr := c.post(base+"/webhooks", url.Values{"url": {good.URL}, "events": {"New", "Settled"}, "enabled": {"on"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create webhook: %d %s", code, body)
	}
	hookPath := strings.Split(hdr.Get("Location"), "?")[0]
	var hook *kassa.Webhook
	e.db.Webhooks(t.Context(), st.ID, func(w *kassa.Webhook) error { hook = w; return nil })
	if hook == nil || !hook.Enabled || len(hook.Events) != 2 || hookPath != base+"/webhooks/"+hook.ID {
		t.Fatalf("webhook = %+v at %s", hook, hookPath)
	}
	_, body, _ = c.get(hookPath)
	if !strings.Contains(body, hook.Secret) {
		t.Error("the webhook page does not show its secret")
	}

	c.get(base + "/invoices/new")
	code, body, hdr = c.post(base+"/invoices", url.Values{"amount": {"12.50"}, "currency": {"EUR"}, "orderId": {"order-7"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create invoice: %d %s", code, body)
	}
	invPath := strings.Split(hdr.Get("Location"), "?")[0]
	waitFor(t, "the New delivery", func() bool { return rec.count() >= 1 })
	var delivery *kassa.Delivery
	waitFor(t, "the delivery's record", func() bool {
		e.db.Deliveries(t.Context(), hook.ID, kassa.ListQuery{}, func(d *kassa.Delivery) error {
			if d.Status == kassa.DeliveryDelivered {
				delivery = d
			}
			return nil
		})
		return delivery != nil
	})
	_, body, _ = c.get(invPath)
	if !strings.Contains(body, "order-7") || !strings.Contains(body, delivery.ID) {
		t.Errorf("the invoice page does not list its delivery: %s", body)
	}
	_, body, _ = c.get(hookPath)
	if !strings.Contains(body, "thanks from the shop") || !strings.Contains(body, ">200<") {
		t.Errorf("the delivery log lacks the response: %s", body)
	}
	if code, body, _ = c.post(hookPath+"/deliveries/"+delivery.ID+"/redeliver", nil); code != http.StatusSeeOther {
		t.Fatalf("redeliver: %d %s", code, body)
	}
	waitFor(t, "the redelivery", func() bool { return rec.count() >= 2 })

	c.get(hookPath)
	if code, _, _ = c.post(hookPath+"/toggle", nil); code != http.StatusSeeOther {
		t.Fatalf("toggle: %d", code)
	}
	if w, _ := e.db.Webhook(t.Context(), hook.ID); w.Enabled {
		t.Error("the webhook is still enabled")
	}
	c.get(hookPath)
	if code, body, _ = c.post(hookPath, url.Values{"url": {good.URL + "/v2"}, "events": {"Settled"}, "enabled": {"on"}, "newSecret": {"on"}}); code != http.StatusSeeOther {
		t.Fatalf("edit webhook: %d %s", code, body)
	}
	if w, _ := e.db.Webhook(t.Context(), hook.ID); w.URL != good.URL+"/v2" || len(w.Events) != 1 || !w.Enabled || w.Secret == hook.Secret {
		t.Errorf("edited webhook = %+v", w)
	}

	c.get(invPath)
	if code, body, _ = c.post(invPath+"/invalid", nil); code != http.StatusSeeOther {
		t.Fatalf("mark invalid: %d %s", code, body)
	}
	if _, body, _ = c.get(invPath); !strings.Contains(body, `id="status">Invalid`) {
		t.Error("the invoice is not invalid")
	}
	if _, body, _ = c.get(base + "/invoices?status=Invalid"); !strings.Contains(body, "order-7") {
		t.Error("the status filter misses the invoice")
	}
	if _, body, _ = c.get(base + "/invoices?status=Settled"); strings.Contains(body, "order-7") {
		t.Error("the status filter shows an invalid invoice as settled")
	}

	c.get(hookPath)
	if code, _, _ = c.post(hookPath+"/delete", nil); code != http.StatusSeeOther {
		t.Fatalf("delete webhook: %d", code)
	}
	if _, err := e.db.Webhook(t.Context(), hook.ID); kassa.ErrorCode(err) != kassa.NotFound {
		t.Errorf("deleted webhook: %v", err)
	}

	c.get(base + "/paylinks")
	code, body, _ = c.post(base+"/paylinks", url.Values{"title": {"Mug"}, "amount": {"9.90"}, "currency": {"EUR"}, "internalNote": {"blue"}})
	if code != http.StatusSeeOther {
		t.Fatalf("create pay link: %d %s", code, body)
	}
	var link *kassa.PaymentRequest
	e.db.PaymentRequests(t.Context(), st.ID, func(p *kassa.PaymentRequest) error { link = p; return nil })
	_, body, _ = c.get(base + "/paylinks")
	if !strings.Contains(body, "/payment-requests/"+link.ID) {
		t.Error("the list lacks the link's URL")
	}
	c.get(base + "/paylinks/" + link.ID)
	if code, body, _ = c.post(base+"/paylinks/"+link.ID, url.Values{"title": {"Big mug"}, "amount": {"12"}, "currency": {"EUR"}}); code != http.StatusSeeOther {
		t.Fatalf("edit pay link: %d %s", code, body)
	}
	if code, _, _ = c.post(base+"/paylinks/"+link.ID+"/archive", nil); code != http.StatusSeeOther {
		t.Fatalf("archive: %d", code)
	}
	if p, _ := e.db.PaymentRequest(t.Context(), link.ID); p.Title != "Big mug" || !p.Archived {
		t.Errorf("pay link = %+v", p)
	}
}

// TestTopUpBySimulatedPayment tops up the balance by paying an invoice of
// the operator's store with the simulator: the balance grows by what was
// paid, once, however often the page is read.
func TestTopUpBySimulatedPayment(t *testing.T) {
	e := newEnv(t)
	c, st, base, ids := newTopUp(t, e)
	c.get(base + "/balance")
	if code, body, _ := c.post(base+"/balance/topup/"+ids[0]+"/simpay", nil); code != http.StatusSeeOther {
		t.Fatalf("sim pay: %d %s", code, body)
	}
	waitFor(t, "the top-up invoice to settle", func() bool {
		inv, err := e.db.Invoice(t.Context(), ids[0])
		return err == nil && inv.Status == kassa.InvoiceSettled
	})
	for range 2 {
		if _, body, _ := c.get(base + "/balance"); !strings.Contains(body, "25,000 sat") {
			t.Errorf("balance page: %s", body)
		}
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != 25_000 {
		t.Errorf("balance = %d, want 25000", bal)
	}
}

// TestSimulationBannerOutsideDev: a server whose chain or Lightning is
// simulated shows the simulation banner on every page even without the
// simulator's routes (outside --dev), and no simulator button.
func TestSimulationBannerOutsideDev(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Simulator, d.Simulated = nil, true })
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	for _, path := range []string{"/dashboard/stores", "/dashboard/stores/" + st.ID + "/", "/dashboard/stores/" + st.ID + "/balance"} {
		if _, body, _ := c.get(path); !strings.Contains(body, msg("sim")) {
			t.Errorf("%s has no simulation banner", path)
		}
	}
	c.post("/dashboard/stores/"+st.ID+"/balance/topup", url.Values{"amount": {"10000"}})
	if _, body, _ := c.get("/dashboard/stores/" + st.ID + "/balance"); strings.Contains(body, "/simpay") {
		t.Error("the balance page offers the simulator's button without the simulator")
	}
	real := newEnv(t, func(d *Deps) { d.Simulator = nil })
	rc := real.client()
	rc.signup("b@example.com")
	if _, body, _ := rc.get("/dashboard/stores"); strings.Contains(body, msg("sim")) {
		t.Error("real backends show the simulation banner")
	}
}
