package topup

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/egress"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
)

// env is the real actor system over in-memory Pebble with the simulated
// chain and Lightning node, and a Ledger over it.
type env struct {
	t     *testing.T
	db    *persistence.DB
	sys   *actors.System
	chain *chainsim.Chain
	node  *lnsim.Node
	clock *kassatest.TestClock
	deps  Deps
	l     *Ledger
}

func newEnv(t *testing.T, opts ...func(*Deps)) *env {
	t.Helper()
	e := &env{t: t, clock: kassatest.NewTestClock(time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC))}
	db, err := persistence.Open("kassa", persistence.Options{FS: vfs.NewMem(), Clock: e.clock})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e.db = db
	e.chain = chainsim.New(e.clock)
	if e.node, err = lnsim.New(e.clock); err != nil {
		t.Fatal(err)
	}
	fixed := rates.Fixed{Rates: map[kassa.Currency]decimal.Decimal{kassa.EUR: decimal.RequireFromString("50000")}}
	e.sys = actors.NewSystem(actors.Config{
		Journal: db, Reader: db, Chain: e.chain, Lightning: e.node, Rates: fixed,
		Webhooks: egress.WebhookClient{Client: egress.New(egress.DefaultConfig()), App: "Kassa"}, Clock: e.clock, Logger: slog.New(slog.DiscardHandler),
	})
	t.Cleanup(e.sys.Runtime.Shutdown)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	if err := e.chain.Start(ctx, e.sys.Service.HandleChainEvent); err != nil {
		t.Fatal(err)
	}
	if err := e.node.Start(ctx, e.sys.Service.HandleLightningEvent); err != nil {
		t.Fatal(err)
	}
	e.deps = Deps{Reader: db, Services: e.sys.Service, KV: db, Clock: e.clock, Logger: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(&e.deps)
	}
	e.l = New(e.deps)
	return e
}

// other is a second Ledger over the same services and key-value store:
// another node of a cluster.
func (e *env) other() *Ledger { return New(e.deps) }

// run runs the ledger's background loop every 10 ms until the test ends.
func (e *env) run(l *Ledger) {
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		l.Run(ctx, 10*time.Millisecond)
	}()
	e.t.Cleanup(func() { stop(); <-done })
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	kassatest.WaitFor(t, 10*time.Second, what, cond)
}

// balance returns the store's prepaid balance.
func (e *env) balance(storeID string) kassa.Sats {
	e.t.Helper()
	bal, err := e.db.Balance(e.t.Context(), storeID)
	if err != nil {
		e.t.Fatal(err)
	}
	return bal
}

// created makes a merchant store and a top-up of 25,000 sat for it; it
// returns the store and the top-up invoice.
func (e *env) created() (*kassa.Store, *kassa.Invoice) {
	e.t.Helper()
	st, err := e.sys.Service.CreateStore(e.t.Context(), kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR})
	if err != nil {
		e.t.Fatal(err)
	}
	inv, err := e.l.Create(e.t.Context(), st.ID, 25_000)
	if err != nil {
		e.t.Fatal(err)
	}
	return st, inv
}

// paid makes a merchant store and a top-up of 25,000 sat and pays it
// over Lightning; it returns the store and the top-up invoice id once
// the invoice settled. beforePay, when set, runs once the top-up is
// created.
func (e *env) paid(beforePay func(storeID, invoiceID string)) (*kassa.Store, string) {
	e.t.Helper()
	st, inv := e.created()
	if beforePay != nil {
		beforePay(st.ID, inv.ID)
	}
	if _, err := e.node.Pay(e.t.Context(), inv.LightningInvoice, kassa.Sats(25_000).MSat()); err != nil {
		e.t.Fatal(err)
	}
	waitFor(e.t, "the top-up invoice to settle", func() bool {
		inv, err := e.db.Invoice(e.t.Context(), inv.ID)
		return err == nil && inv.Status == kassa.InvoiceSettled
	})
	return st, inv.ID
}

// payAgain pays 5,000 sat more on-chain to the settled top-up invoice
// and mines the blocks that make the payment final.
func (e *env) payAgain(invoiceID string) {
	e.t.Helper()
	inv, err := e.db.Invoice(e.t.Context(), invoiceID)
	if err != nil {
		e.t.Fatal(err)
	}
	if inv.OnchainAddress == "" {
		e.t.Fatal("the top-up invoice has no on-chain address")
	}
	if _, err := e.chain.Pay(e.t.Context(), inv.OnchainAddress, 5_000); err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.chain.Mine(e.t.Context(), 6); err != nil {
		e.t.Fatal(err)
	}
}

// TestCreateListsTheTopUp: a top-up is an invoice of the operator's
// store, listed among the merchant store's top-ups; the operator store
// is not the merchant's. An amount out of range is refused.
func TestCreateListsTheTopUp(t *testing.T) {
	e := newEnv(t)
	st, inv := e.created()
	if inv.StoreID == st.ID || inv.Amount != 25_000 {
		t.Fatalf("top-up invoice = store %s, %d sat; want the operator's store, 25000 sat", inv.StoreID, inv.Amount)
	}
	ops, err := e.l.OperatorStoreIDs(t.Context())
	if err != nil || !slices.Contains(ops, inv.StoreID) {
		t.Errorf("operator stores = %v, %v; want %s among them", ops, err, inv.StoreID)
	}
	list, err := e.l.List(t.Context(), st.ID)
	if err != nil || len(list) != 1 || list[0].InvoiceID != inv.ID || list[0].Status != "New" || list[0].Credited {
		t.Fatalf("list = %+v, %v; want the new top-up, not credited", list, err)
	}
	for _, amount := range []kassa.Sats{0, MinAmount - 1, MaxAmount + 1, -5} {
		if _, err := e.l.Create(t.Context(), st.ID, amount); !errors.Is(err, ErrAmount) {
			t.Errorf("top-up of %d sat: %v, want ErrAmount", amount, err)
		}
	}
}

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

// TestCreditedOnceWhenMarkFails: the top-up is credited, then the write
// that records it as credited fails (a crash between the two). Listing
// again must not credit it a second time.
func TestCreditedOnceWhenMarkFails(t *testing.T) {
	var failMark atomic.Bool
	errInjected := errors.New("injected: the mark write failed")
	e := newEnv(t, func(d *Deps) {
		d.KV = &faultyKV{KeyValue: d.KV, putErr: func(key string) error {
			if failMark.Load() && strings.HasPrefix(key, "dash/topup/") {
				return errInjected
			}
			return nil
		}}
	})
	st, _ := e.paid(func(string, string) { failMark.Store(true) })
	if _, err := e.l.List(t.Context(), st.ID); !errors.Is(err, errInjected) {
		t.Fatalf("list with the mark failing: %v, want the injected error", err)
	}
	if bal := e.balance(st.ID); bal != 25_000 {
		t.Fatalf("balance after the credit whose mark failed = %d, want 25000", bal)
	}
	failMark.Store(false)
	for range 2 {
		list, err := e.l.List(t.Context(), st.ID)
		if err != nil || len(list) != 1 || !list[0].Credited || list[0].Amount != 25_000 || list[0].Status != "Settled" {
			t.Fatalf("list after the fault = %+v, %v; want one settled top-up credited with 25000", list, err)
		}
	}
	if bal := e.balance(st.ID); bal != 25_000 {
		t.Errorf("balance = %d, want 25000: the top-up was credited again after its mark failed", bal)
	}
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// TestCreditedWithoutListing: once the top-up invoice is paid, the
// background loop raises the balance without anyone listing top-ups.
func TestCreditedWithoutListing(t *testing.T) {
	e := newEnv(t)
	e.run(e.l)
	st, _ := e.paid(nil)
	waitFor(t, "the balance to rise without a listing", func() bool { return e.balance(st.ID) == 25_000 })
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// TestCreditedOnceByTwoNodes: two ledgers over the same services (two
// nodes of a cluster) credit the same settled top-up at once, by listing
// and by CreditAll: one ledger line.
func TestCreditedOnceByTwoNodes(t *testing.T) {
	e := newEnv(t)
	st, _ := e.paid(nil)
	other := e.other()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		l := e.l
		if i%2 == 1 {
			l = other
		}
		if i%4 < 2 {
			wg.Go(func() { _, errs[i] = l.List(context.Background(), st.ID) })
		} else {
			wg.Go(func() { errs[i] = l.CreditAll(context.Background()) })
		}
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if bal := e.balance(st.ID); bal != 25_000 {
		t.Errorf("balance = %d, want 25000", bal)
	}
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// raceCtx marks the reads TestOperatorStoreCreatedOnceByTwoNodes holds
// back.
type raceCtx struct{}

// TestOperatorStoreCreatedOnceByTwoNodes: two nodes (two ledgers over
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
	ctx := context.WithValue(t.Context(), raceCtx{}, true)
	ids, errs := make([]string, 2), make([]error, 2)
	var wg sync.WaitGroup
	for i, l := range []*Ledger{e.l, e.other()} {
		wg.Go(func() { ids[i], errs[i] = l.operatorStore(ctx) })
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
	recorded, ok, err := e.deps.KV.GetValue(t.Context(), operatorStoreKey)
	if err != nil || !ok || string(recorded) != ids[0] {
		t.Fatalf("recorded operator store = %q %v %v, want %s", recorded, ok, err, ids[0])
	}
	if st, err := e.db.Store(t.Context(), ids[0]); err != nil || st.Name != "Kassa operator" {
		t.Fatalf("operator store %s: %v %v", ids[0], st, err)
	}
}

// TestPaymentAfterCreditIsCredited: a top-up is credited, then its
// invoice receives another payment (paid twice, paid late, overpaid):
// that money reaches the merchant's balance too, once.
func TestPaymentAfterCreditIsCredited(t *testing.T) {
	e := newEnv(t)
	e.run(e.l)
	st, invID := e.paid(nil)
	waitFor(t, "the top-up to be credited", func() bool { return e.balance(st.ID) == 25_000 })
	e.payAgain(invID)
	waitFor(t, "the second payment to be credited", func() bool { return e.balance(st.ID) == 30_000 })
	// Listing credits too: still once.
	list, err := e.l.List(t.Context(), st.ID)
	if err != nil || len(list) != 1 || list[0].Amount != 30_000 || len(list[0].Payments) != 2 {
		t.Fatalf("list = %+v, %v; want one top-up credited with 30000 in two payments", list, err)
	}
	if bal := e.balance(st.ID); bal != 30_000 {
		t.Errorf("balance = %d, want 30000", bal)
	}
	if lines := kassatest.TopUpLines(t, e.db, st.ID); len(lines) != 2 {
		t.Errorf("%d top-up lines, want 2", len(lines))
	}
}

// TestCreditedByEarlierVersion: an earlier version credited a top-up
// under its invoice id (what the invoice had received then), with or
// without writing its "credited" record. After the upgrade that payment
// is not credited again, and a payment arriving later is.
func TestCreditedByEarlierVersion(t *testing.T) {
	for _, marked := range []bool{false, true} {
		t.Run(map[bool]string{false: "mark lost", true: "marked"}[marked], func(t *testing.T) {
			e := newEnv(t)
			e.run(e.l)
			st, invID := e.paid(func(storeID, invID string) {
				// Played before the payment, so that the loop finds the
				// earlier version's credit when the invoice settles.
				_, err := e.sys.Service.TopUp(t.Context(), storeID, 25_000, invID)
				if err != nil {
					t.Fatal(err)
				}
				if marked {
					err = e.l.putJSON(t.Context(), topUpKey(invID), TopUp{InvoiceID: invID, StoreID: storeID, Amount: 25_000, Credited: true})
					if err != nil {
						t.Fatal(err)
					}
				}
			})
			e.payAgain(invID)
			// The positive control: the second payment is recorded as
			// credited, in the same pass that went over the first.
			waitFor(t, "the second payment to be credited", func() bool {
				rec, ok, err := e.l.Get(t.Context(), invID)
				return err == nil && ok && len(rec.Payments) == 1
			})
			if bal := e.balance(st.ID); bal != 30_000 {
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

// TestFailingLogsOnce: a top-up whose credit keeps failing is retried
// on every round of the loop but warned about once (then at most once an
// hour), not on every round for the 72 hours it is looked at.
func TestFailingLogsOnce(t *testing.T) {
	var calls, warned atomic.Int32
	e := newEnv(t, func(d *Deps) {
		d.Logger = slog.New(warnings{Handler: slog.DiscardHandler, n: &warned})
		d.Services = &faultyServices{Services: d.Services, topUpErr: func() error {
			calls.Add(1)
			return errors.New("injected: the store is unavailable")
		}}
	})
	e.run(e.l)
	e.paid(nil)
	// The positive control: the loop tried several rounds.
	waitFor(t, "five rounds of the loop", func() bool { return calls.Load() >= 5 })
	if n := warned.Load(); n != 1 {
		t.Errorf("%d warnings for one failing top-up over %d rounds, want 1", n, calls.Load())
	}
}
