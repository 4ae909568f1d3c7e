package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
)

// faultyKV is the real key-value store whose PutValue fails when putErr
// says so: it injects the failure only.
type faultyKV struct {
	kassa.KeyValue
	putErr func(key string) error
	// gotValue, when set, runs after each read: it may hold the answer
	// back (a slow read), to line two nodes up.
	gotValue func(ctx context.Context, key string)
}

func (f *faultyKV) GetValue(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := f.KeyValue.GetValue(ctx, key)
	if f.gotValue != nil {
		f.gotValue(ctx, key)
	}
	return v, ok, err
}

func (f *faultyKV) PutValue(ctx context.Context, key string, value []byte, expires time.Time) error {
	if err := f.putErr(key); err != nil {
		return err
	}
	return f.KeyValue.PutValue(ctx, key, value, expires)
}

// topUpLines returns the store's top-up ledger lines.
func topUpLines(t *testing.T, e *env, storeID string) []*kassa.Transaction {
	t.Helper()
	var lines []*kassa.Transaction
	_, err := e.db.Transactions(t.Context(), storeID, kassa.ListQuery{}, func(tx *kassa.Transaction) error {
		if tx.Type == kassa.TransactionTopUp {
			lines = append(lines, tx)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

// paidTopUp signs up, makes a store, creates a top-up of 25,000 sat and
// pays it with the simulator; it returns the store and the top-up
// invoice once the invoice settled. beforePay, when set, runs once the
// top-up is created.
func paidTopUp(t *testing.T, e *env, beforePay func()) (*kassa.Store, string) {
	t.Helper()
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/balance")
	if code, body, _ := c.post(base+"/balance/topup", url.Values{"amount": {"25000"}}); code != http.StatusSeeOther {
		t.Fatalf("top up: %d %s", code, body)
	}
	ids, _ := e.dash.topUps(t.Context(), st.ID)
	if len(ids) != 1 {
		t.Fatalf("top-ups = %v", ids)
	}
	inv, err := e.db.Invoice(t.Context(), ids[0])
	if err != nil {
		t.Fatal(err)
	}
	if beforePay != nil {
		beforePay()
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
	st, _ := paidTopUp(t, e, func() { failMark.Store(true) })
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
	if lines := topUpLines(t, e, st.ID); len(lines) != 1 {
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
	if lines := topUpLines(t, e, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// TestTopUpCreditedOnceByTwoDashboards: two dashboards over the same
// services (two nodes of a cluster) credit the same settled top-up at
// once: one ledger line.
func TestTopUpCreditedOnceByTwoDashboards(t *testing.T) {
	e := newEnv(t)
	st, _ := paidTopUp(t, e, nil)
	other := New(e.dash.Deps)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		h := e.dash
		if i%2 == 1 {
			h = other
		}
		wg.Go(func() { _, errs[i] = h.creditTopUps(context.Background(), st.ID) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if bal, _ := e.db.Balance(t.Context(), st.ID); bal != 25_000 {
		t.Errorf("balance = %d, want 25000", bal)
	}
	if lines := topUpLines(t, e, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// raceCtx marks the reads TestOperatorStoreCreatedOnceByTwoNodes holds
// back (the background loop's reads are not held).
type raceCtx struct{}

// TestOperatorStoreCreatedOnceByTwoNodes: two nodes (two dashboards over
// the same services and key-value store) make the very first top-up at
// the same moment. Both read that no operator store exists yet; both
// must end up with the same one, the one recorded, or the top-ups paid
// to the other are never credited in the background.
func TestOperatorStoreCreatedOnceByTwoNodes(t *testing.T) {
	bothRead := make(chan struct{})
	var reads atomic.Int32
	e := newEnv(t, func(d *Deps) {
		d.KV = &faultyKV{KeyValue: d.KV, putErr: func(string) error { return nil }, gotValue: func(ctx context.Context, key string) {
			if ctx.Value(raceCtx{}) == nil || key != operatorStoreKey {
				return
			}
			if reads.Add(1) == 2 {
				close(bothRead)
			}
			<-bothRead
		}}
	})
	other := New(e.dash.Deps)
	ctx := context.WithValue(t.Context(), raceCtx{}, true)
	ids, errs := make([]string, 2), make([]error, 2)
	var wg sync.WaitGroup
	for i, h := range []*Dashboard{e.dash, other} {
		wg.Go(func() { ids[i], errs[i] = h.operatorStore(ctx) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if ids[0] != ids[1] {
		t.Fatalf("two operator stores: %s and %s", ids[0], ids[1])
	}
	recorded, ok, err := e.dash.KV.GetValue(t.Context(), operatorStoreKey)
	if err != nil || !ok || string(recorded) != ids[0] {
		t.Fatalf("recorded operator store = %q %v %v, want %s", recorded, ok, err, ids[0])
	}
	if st, err := e.db.Store(t.Context(), ids[0]); err != nil || st.Name != "Kassa operator" {
		t.Fatalf("operator store %s: %v %v", ids[0], st, err)
	}
}
