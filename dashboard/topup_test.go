package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// faultyKV is the real key-value store whose PutValue fails when putErr
// says so: it injects the failure only.
type faultyKV struct {
	kassa.KeyValue
	putErr func(key string) error
}

func (f *faultyKV) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	if err := f.putErr(key); err != nil {
		return err
	}
	return f.KeyValue.PutValue(ctx, key, value, expires)
}

// newTopUp signs up, makes a store and creates a top-up of 25,000 sat
// on its balance page; it returns the signed-up client, the store, the
// store's dashboard path and the top-ups the dashboard knows (the one).
func newTopUp(t *testing.T, e *env) (c *client, st *kassa.Store, base string, ids []string) {
	t.Helper()
	c = e.client()
	c.signup("a@example.com")
	st = c.createStore("Shop")
	base = "/dashboard/stores/" + st.ID
	c.get(base + "/balance")
	if code, body, _ := c.post(base+"/balance/topup", url.Values{"amount": {"25000"}}); code != http.StatusSeeOther {
		t.Fatalf("top up: %d %s", code, body)
	}
	list, err := e.dash.TopUps.List(t.Context(), st.ID)
	if err != nil || len(list) != 1 {
		t.Fatalf("top-ups = %v, %v", list, err)
	}
	ids = []string{list[0].InvoiceID}
	return c, st, base, ids
}

// paidTopUp signs up, makes a store, creates a top-up of 25,000 sat and
// pays it with the simulator; it returns the store and the top-up
// invoice once the invoice settled. beforePay, when set, runs once the
// top-up is created, with the store and the top-up's invoice.
func paidTopUp(t *testing.T, e *env, beforePay func(storeID, invoiceID string)) (*kassa.Store, string) {
	t.Helper()
	_, st, _, ids := newTopUp(t, e)
	inv, err := e.db.Invoice(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if beforePay != nil {
		beforePay(st.ID, ids[0])
	}
	if _, err := e.sim.Pay(t.Context(), inv, kassa.MethodLightning, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the top-up invoice to settle", func() bool {
		inv, err := e.db.Invoice(t.Context(), ids[0])
		return err == nil && inv.Status == kassa.InvoiceSettled
	})
	return st, ids[0]
}

// TestTopUpCreditedOnceWhenMarkFails: the top-up is credited, then the
// write that records it as credited fails (a crash between the two).
// Reading the balance page again must not credit it a second time.
func TestTopUpCreditedOnceWhenMarkFails(t *testing.T) {
	var failMark atomic.Bool
	var failed atomic.Int32
	errInjected := errors.New("injected: the mark write failed")
	e := newEnv(t, func(d *Deps) {
		d.KV = &faultyKV{KeyValue: d.KV, putErr: func(key string) error {
			if failMark.Load() && strings.HasPrefix(key, "dash/topup/") {
				failed.Add(1)
				return errInjected
			}
			return nil
		}}
	})
	st, _ := paidTopUp(t, e, func(string, string) { failMark.Store(true) })
	c := e.client()
	c.get("/dashboard/login")
	c.post("/dashboard/login", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}})
	// The page credits (or finds credited) the top-up, and its mark fails.
	waitFor(t, "the top-up to be credited", func() bool {
		c.get("/dashboard/stores/" + st.ID + "/balance")
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == 25_000 && failed.Load() > 0
	})
	failMark.Store(false)
	if code, body, _ := c.get("/dashboard/stores/" + st.ID + "/balance"); code != http.StatusOK || !strings.Contains(body, "25,000 sat") {
		t.Fatalf("balance page after the fault: %d %s", code, body)
	}
	c.get("/dashboard/stores/" + st.ID + "/balance")
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != 25_000 {
		t.Errorf("balance = %d, want 25000: the top-up was credited again after its mark failed", bal)
	}
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// TestTopUpCreditedWithoutPageView: once the top-up invoice is paid, the
// balance rises without anyone opening the balance page.
func TestTopUpCreditedWithoutPageView(t *testing.T) {
	e := newEnv(t)
	st, _ := paidTopUp(t, e, nil)
	waitFor(t, "the balance to rise without a page view", func() bool {
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == 25_000
	})
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// payAgain pays 5,000 sat more on-chain to the settled top-up invoice and
// mines the blocks that make the payment final.
func payAgain(t *testing.T, e *env, invoiceID string) {
	t.Helper()
	inv, err := e.db.Invoice(t.Context(), invoiceID)
	if err != nil {
		t.Fatal(err)
	}
	if inv.OnchainAddress == "" {
		t.Fatal("the top-up invoice has no on-chain address")
	}
	if _, err := e.sim.Pay(t.Context(), inv, kassa.MethodOnchain, 5_000); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sim.Mine(t.Context(), 6); err != nil {
		t.Fatal(err)
	}
}

// TestTopUpPaymentAfterCreditIsCredited: a top-up is credited, then its
// invoice receives another payment (paid twice, paid late, overpaid):
// that money reaches the merchant's balance too, once.
func TestTopUpPaymentAfterCreditIsCredited(t *testing.T) {
	e := newEnv(t)
	st, invID := paidTopUp(t, e, nil)
	waitFor(t, "the top-up to be credited", func() bool {
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == 25_000
	})
	payAgain(t, e, invID)
	waitFor(t, "the second payment to be credited", func() bool {
		bal, err := e.db.Balance(t.Context(), st.ID)
		return err == nil && bal == 30_000
	})
	// The page credits too: still once.
	c := e.client()
	c.get("/dashboard/login")
	c.post("/dashboard/login", url.Values{"email": {"a@example.com"}, "password": {"correct horse battery"}})
	if code, body, _ := c.get("/dashboard/stores/" + st.ID + "/balance"); code != http.StatusOK || !strings.Contains(body, "30,000 sat") {
		t.Fatalf("balance page: %d %s", code, body)
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != 30_000 {
		t.Errorf("balance = %d, want 30000", bal)
	}
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 2 {
		t.Errorf("%d top-up lines, want 2", len(lines))
	}
}
