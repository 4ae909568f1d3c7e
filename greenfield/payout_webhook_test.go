package greenfield_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// hookData is BTCPay's WebhookData as the test reads it.
type hookData struct {
	ID               string `json:"id"`
	Secret           string `json:"secret"`
	AuthorizedEvents struct {
		Everything     bool     `json:"everything"`
		SpecificEvents []string `json:"specificEvents"`
	} `json:"authorizedEvents"`
}

// TestPayoutWebhooks: a Greenfield webhook that names the payout events
// is sent BTCPay's WebhookPayoutEvent for a claim (PayoutCreated,
// AwaitingApproval), its approval (PayoutApproved, AwaitingPayment) and
// its cancel (PayoutUpdated, Cancelled), signed like every delivery; a
// webhook made with authorizedEvents.everything is sent none of them.
// A redelivery keeps the payout's body.
func TestPayoutWebhooks(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	payouts, everything := newShop(t, e), newShop(t, e)
	register := func(s *shop, events string) string {
		t.Helper()
		w := e.do("POST", base+"/api/v1/stores/store_a/webhooks", `{"url":"`+s.url+`","authorizedEvents":`+events+`}`)
		expectStatus(t, w, http.StatusOK)
		got := decode[hookData](t, w)
		s.mu.Lock()
		s.secret = got.Secret
		s.mu.Unlock()
		return got.ID
	}
	hook := register(payouts, `{"everything":false,"specificEvents":["PayoutCreated","PayoutApproved","PayoutUpdated"]}`)
	register(everything, `{"everything":true}`)
	if got := decode[hookData](t, e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+hook, "")); got.AuthorizedEvents.Everything ||
		!slices.Equal(got.AuthorizedEvents.SpecificEvents, []string{"PayoutCreated", "PayoutApproved", "PayoutUpdated"}) {
		t.Errorf("webhook %+v: want its payout events listed", got.AuthorizedEvents)
	}

	inv := e.settledInvoice()
	key := e.keyWith(kassa.PermCreateNonApprovedPullPayments)
	pp := decode[pullPaymentData](t, e.do("POST", base+"/api/v1/stores/store_a/invoices/"+inv.ID+"/refund",
		`{"paymentMethod":"BTC-LN","refundVariant":"RateThen"}`, key))
	p, err := e.refunds.Claim(t.Context(), pp.ID, "customer@wallet.example", decimal.Zero)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.sys.Service.TopUp(t.Context(), "store_a", 200_000, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := e.refunds.Approve(t.Context(), "store_a", p.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.refunds.Cancel(t.Context(), "store_a", p.ID); err != nil {
		t.Fatal(err)
	}
	payouts.waitBodies(t, 3)
	want := [][2]string{{"PayoutCreated", "AwaitingApproval"}, {"PayoutApproved", "AwaitingPayment"}, {"PayoutUpdated", "Cancelled"}}
	payouts.mu.Lock()
	bodies := slices.Clone(payouts.bodies)
	payouts.mu.Unlock()
	for i, b := range bodies {
		if i >= len(want) || b["type"] != want[i][0] || b["payoutState"] != want[i][1] || b["payoutId"] != p.ID ||
			b["pullPaymentId"] != pp.ID || b["storeId"] != "store_a" || b["webhookId"] != hook || b["isRedelivery"] != false ||
			b["deliveryId"] == "" || b["originalDeliveryId"] != b["deliveryId"] || b["invoiceId"] != nil {
			t.Errorf("delivery %d: %v, want %v", i, b, want[min(i, len(want)-1)])
		}
	}
	if payouts.refused != 0 {
		t.Errorf("%d payout deliveries refused (signature)", payouts.refused)
	}

	// Redelivered by hand: the payout's body, a new deliveryId.
	first, _ := bodies[0]["deliveryId"].(string)
	e.clock.Advance(time.Minute)
	kassatest.WaitUntil(t, "the first attempt to be recorded", func() bool {
		w := e.do("GET", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries/"+first, "")
		return w.Code == http.StatusOK && !strings.Contains(w.Body.String(), `"status":"Failed"`)
	})
	expectStatus(t, e.do("POST", base+"/api/v1/stores/store_a/webhooks/"+hook+"/deliveries/"+first+"/redeliver", ""), http.StatusOK)
	payouts.waitBodies(t, 4)
	payouts.mu.Lock()
	r := payouts.bodies[3]
	payouts.mu.Unlock()
	if r["type"] != "PayoutCreated" || r["payoutId"] != p.ID || r["isRedelivery"] != true || r["originalDeliveryId"] != first || r["deliveryId"] == first {
		t.Errorf("redelivery %v", r)
	}

	// The webhook of everything got the invoice's events, and no payout's.
	everything.mu.Lock()
	defer everything.mu.Unlock()
	if len(everything.bodies) == 0 {
		t.Error("the everything webhook got no invoice event")
	}
	for _, b := range everything.bodies {
		if typ, _ := b["type"].(string); strings.HasPrefix(typ, "Payout") {
			t.Errorf("the everything webhook got %v", b)
		}
	}
}
