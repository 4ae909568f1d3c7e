package dashboard

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
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
	ids, _ = e.dash.topUps(t.Context(), st.ID)
	if len(ids) != 1 {
		t.Fatalf("top-ups = %v", ids)
	}
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
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
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

// TestTopUpCreditedByEarlierVersion: an earlier version credited a top-up
// under its invoice id (what the invoice had received then), with or
// without writing its "credited" record. After the upgrade that payment
// is not credited again, and a payment arriving later is.
func TestTopUpCreditedByEarlierVersion(t *testing.T) {
	for _, marked := range []bool{false, true} {
		t.Run(map[bool]string{false: "mark lost", true: "marked"}[marked], func(t *testing.T) {
			e := newEnv(t)
			st, invID := paidTopUp(t, e, func(storeID, invID string) {
				// Played before the payment, so that this version's loop
				// finds the earlier version's credit when the invoice
				// settles.
				_, err := e.sys.TopUp(t.Context(), storeID, 25_000, invID)
				if err != nil {
					t.Fatal(err)
				}
				if marked {
					err = e.dash.putJSON(t.Context(), topUpKey(invID), topUp{InvoiceID: invID, StoreID: storeID, Amount: 25_000, Credited: true}, forever)
					if err != nil {
						t.Fatal(err)
					}
				}
			})
			payAgain(t, e, invID)
			// The positive control: the second payment is recorded as
			// credited, in the same pass that went over the first.
			waitFor(t, "the second payment to be credited", func() bool {
				var rec topUp
				ok, err := e.dash.getJSON(t.Context(), topUpKey(invID), &rec)
				return err == nil && ok && len(rec.Payments) == 1
			})
			if bal, _ := e.db.Balance(t.Context(), st.ID); bal != 30_000 {
				t.Errorf("balance = %d, want 30000 (25000 credited by the earlier version, 5000 paid later)", bal)
			}
			if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 2 {
				t.Errorf("%d top-up lines, want 2", len(lines))
			}
		})
	}
}

// faultyServices are the real services whose TopUp fails when topUpErr
// says so: it injects the failure only.
type faultyServices struct {
	Services
	topUpErr func() error
}

func (f *faultyServices) TopUp(ctx context.Context, storeID string, amount kassa.Sats, reference string) (*kassa.Transaction, error) {
	if err := f.topUpErr(); err != nil {
		return nil, err
	}
	return f.Services.TopUp(ctx, storeID, amount, reference)
}

// warnings counts the warning records logged.
type warnings struct {
	slog.Handler
	n *atomic.Int32
}

func (w warnings) Handle(ctx context.Context, r slog.Record) error {
	if r.Level == slog.LevelWarn {
		w.n.Add(1)
	}
	return nil
}

func (w warnings) Enabled(context.Context, slog.Level) bool { return true }

// TestTopUpFailingLogsOnce: a top-up whose credit keeps failing is
// retried on every round of the loop but warned about once (then at most
// once an hour), not on every round for the 72 hours it is looked at.
func TestTopUpFailingLogsOnce(t *testing.T) {
	var calls, warned atomic.Int32
	e := newEnv(t, func(d *Deps) {
		d.Logger = slog.New(warnings{Handler: slog.DiscardHandler, n: &warned})
		d.Services = &faultyServices{Services: d.Services, topUpErr: func() error {
			calls.Add(1)
			return errors.New("injected: the store is unavailable")
		}}
	})
	paidTopUp(t, e, nil)
	// The positive control: the loop tried several rounds.
	waitFor(t, "five rounds of the loop", func() bool { return calls.Load() >= 5 })
	if n := warned.Load(); n != 1 {
		t.Errorf("%d warnings for one failing top-up over %d rounds, want 1", n, calls.Load())
	}
}
