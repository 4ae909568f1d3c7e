package actors

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence"
)

// fakeChain hands out unique addresses and delivers nothing by itself.
type fakeChain struct {
	mu sync.Mutex
	n  int
}

var _ kassa.Chain = (*fakeChain)(nil)

func (c *fakeChain) NewAddress(context.Context, *kassa.Store, string) (string, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	return fmt.Sprintf("bcrt1qfake%d", c.n), nil
}
func (c *fakeChain) Start(context.Context, func(context.Context, kassa.ChainEvent) error) error {
	return nil
}
func (c *fakeChain) Info(context.Context) kassa.BackendInfo {
	return kassa.BackendInfo{Backend: "fake"}
}

// fakeLightning makes invoices with random hashes; cancel, when set,
// sees every CancelInvoice.
type fakeLightning struct {
	cancel func(ctx context.Context, paymentHash string) error
}

var _ kassa.Lightning = fakeLightning{}

func (fakeLightning) CreateInvoice(_ context.Context, amount kassa.MSat, _ string, _ time.Duration) (kassa.LightningInvoice, error) {
	var b [32]byte
	_, _ = rand.Read(b[:])
	return kassa.LightningInvoice{PaymentRequest: fmt.Sprintf("lnbcrtfake%d", amount), PaymentHash: hex.EncodeToString(b[:])}, nil
}
func (l fakeLightning) CancelInvoice(ctx context.Context, paymentHash string) error {
	if l.cancel != nil {
		return l.cancel(ctx, paymentHash)
	}
	return nil
}

func (fakeLightning) Start(context.Context, func(context.Context, kassa.LightningEvent) error) error {
	return nil
}
func (fakeLightning) Info(context.Context) kassa.BackendInfo {
	return kassa.BackendInfo{Backend: "fake"}
}

type fixedRates struct{}

func (fixedRates) Rate(_ context.Context, c kassa.Currency) (decimal.Decimal, error) {
	return decimal.NewFromInt(50_000), nil
}
func (fixedRates) Entries(context.Context) []kassa.RateEntry { return nil }
func (fixedRates) Source() string                            { return "fixed" }
func (fixedRates) Currencies() []kassa.Currency              { return kassa.FiatCurrencies }

// recordingSink keeps every webhook event in order.
type recordingSink struct {
	mu     sync.Mutex
	events []string
}

func (r *recordingSink) InvoiceEvent(_ context.Context, inv *kassa.Invoice, e kassa.Emit) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, inv.ID+":"+string(e.Type)+":"+e.AdditionalStatus.String())
}

func (r *recordingSink) of(id string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.events {
		if len(e) > len(id) && e[:len(id)+1] == id+":" {
			out = append(out, e[len(id)+1:])
		}
	}
	return out
}

type harness struct {
	hooks *fakeWebhookClient
	t     testing.TB
	db    *persistence.DB
	sys   *System
	clock *kassatest.TestClock
	sink  *recordingSink
	store *kassa.Store
}

func newHarness(t testing.TB, db *persistence.DB, clock *kassatest.TestClock) *harness {
	t.Helper()
	return newHarnessWith(t, db, clock, nil)
}

// newHarnessWith is newHarness with a chance to change the configuration
// (to inject a failure) before the system starts.
func newHarnessWith(t testing.TB, db *persistence.DB, clock *kassatest.TestClock, configure func(*Config)) *harness {
	t.Helper()
	sink := &recordingSink{}
	hooks := newFakeWebhookClient()
	cfg := Config{
		Journal: db, Reader: db, Chain: &fakeChain{}, Lightning: fakeLightning{}, Rates: fixedRates{},
		Webhooks: hooks, Events: sink, Clock: clock, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InvoiceExpiry: 15 * time.Minute, Monitoring: time.Hour,
	}
	if configure != nil {
		configure(&cfg)
	}
	sys := NewSystem(cfg)
	t.Cleanup(sys.Runtime.Shutdown)
	return &harness{t: t, db: db, sys: sys, clock: clock, sink: sink, hooks: hooks}
}

// openDir opens the Pebble store in dir; the caller closes it.
func openDir(t *testing.T, dir string) *persistence.DB {
	t.Helper()
	db, err := persistence.Open(dir, persistence.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return db
}

// reopen stops h's system and closes db, as a stopped process does, and
// opens the store in dir again for the next start; the caller closes it.
func reopen(t *testing.T, h *harness, db *persistence.DB, dir string) *persistence.DB {
	t.Helper()
	h.sys.Runtime.Shutdown()
	db.Close()
	return openDir(t, dir)
}

func openMem(t testing.TB) *persistence.DB {
	t.Helper()
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func (h *harness) createStore(percentFee, tolerance string) *kassa.Store {
	h.t.Helper()
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{
		Name: "Test", Currency: kassa.EUR, PercentFee: decimal.RequireFromString(percentFee),
		UnderpaymentTolerance: decimal.RequireFromString(tolerance), ConfirmationsRequired: 1,
	})
	if err != nil {
		h.t.Fatal(err)
	}
	h.store = st
	return st
}

// runSweeper runs the deadline sweeper until the test ends, as kassa
// serve runs it: a New invoice's actor passivates until its deadline is
// near, and only the sweeper wakes it then. Tests that count the clock's
// timers, or fire deadlines themselves, leave it out.
func (h *harness) runSweeper() {
	ctx, cancel := context.WithCancel(context.Background())
	h.t.Cleanup(cancel)
	h.sys.Runtime.RunSweeper(ctx)
}

func (h *harness) invoice(amount string, currency kassa.Currency) *kassa.Invoice {
	h.t.Helper()
	inv, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.RequireFromString(amount), HasAmount: true, Currency: currency, OrderID: "42",
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

func (h *harness) get(id string) *kassa.Invoice {
	h.t.Helper()
	inv, err := h.db.Invoice(context.Background(), id)
	if err != nil {
		h.t.Fatal(err)
	}
	return inv
}

// eventually polls cond until it holds or a deadline passes.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	kassatest.WaitFor(t, 5*time.Second, what, cond)
}

func (h *harness) pay(inv *kassa.Invoice, sats kassa.Sats, confs int32, txid string) {
	h.t.Helper()
	err := h.sys.Service.HandleChainEvent(context.Background(), kassa.ChainEvent{Address: inv.OnchainAddress, Payment: kassa.Payment{
		ID: txid + ":0", TxID: txid, Amount: sats, Destination: inv.OnchainAddress, Confirmations: confs,
	}})
	if err != nil {
		h.t.Fatalf("chain event: %v", err)
	}
}

// payLightning delivers a settle of inv's Lightning invoice and fails the
// test when it is not acknowledged.
func (h *harness) payLightning(inv *kassa.Invoice, sats kassa.Sats) {
	h.t.Helper()
	if err := h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: sats.MSat()}); err != nil {
		h.t.Fatalf("lightning event: %v", err)
	}
}

// active reports whether inv's actor is running.
func (h *harness) active(inv *kassa.Invoice) bool {
	_, ok := h.sys.Runtime.actorSystem().ProcessRegistry.GetLocal(h.sys.Runtime.store(inv.StoreID).Id + "/" + invoiceName(inv.ID))
	return ok
}

func TestLightningSettlesWithTransactionAndFee(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("1", "0")
	inv := h.invoice("10", kassa.EUR) // 10 EUR at 50 000 EUR/BTC = 20 000 sat
	if inv.Amount != 20_000 || inv.Status != kassa.InvoiceNew {
		t.Fatalf("invoice = %d sat %s", inv.Amount, inv.Status)
	}
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 20_000_000})
	got := h.get(inv.ID)
	if got.Status != kassa.InvoiceSettled {
		t.Fatalf("status = %s", got.Status)
	}
	if ev := h.sink.of(inv.ID); fmt.Sprint(ev) != "[New:None Processing:None Settled:None]" {
		t.Fatalf("events = %v", ev)
	}
	txs, err := h.db.TransactionsByInvoice(context.Background(), inv.ID)
	if err != nil || len(txs) != 2 {
		t.Fatalf("transactions = %v, %v", txs, err)
	}
	if txs[0].Type != kassa.TransactionTransfer || txs[0].FullAmount != 20_000 || txs[0].FeeAmount != 200 || !txs[0].AmountInPreferredCurrency.Equal(decimal.RequireFromString("10")) {
		t.Fatalf("transfer = %+v", txs[0])
	}
	if txs[1].Type != kassa.TransactionFee || txs[1].Amount != 200 {
		t.Fatalf("fee line = %+v", txs[1])
	}
	if bal, _ := h.db.Balance(context.Background(), h.store.ID); bal != -200 {
		t.Fatalf("balance = %d", bal)
	}
	// A repeated settle notification changes nothing.
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 20_000_000})
	if txs, _ := h.db.TransactionsByInvoice(context.Background(), inv.ID); len(txs) != 2 {
		t.Fatalf("duplicate transactions: %d", len(txs))
	}
}

func TestOnchainProcessingThenSettledOnConfirmation(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	inv := h.invoice("20000", kassa.SATS)
	h.pay(inv, 20_000, 0, "aa")
	if got := h.get(inv.ID); got.Status != kassa.InvoiceProcessing {
		t.Fatalf("after mempool: %s", got.Status)
	}
	h.pay(inv, 20_000, 1, "aa")
	if got := h.get(inv.ID); got.Status != kassa.InvoiceSettled || got.AdditionalStatus != kassa.StatusNone {
		t.Fatalf("after block: %s %s", got.Status, got.AdditionalStatus)
	}
	if ev := h.sink.of(inv.ID); fmt.Sprint(ev) != "[New:None Processing:None Settled:None]" {
		t.Fatalf("events = %v", ev)
	}
}

func TestExpiryFiresOnTimeAndUnderpaid(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.runSweeper()
	h.createStore("0", "0")
	// control is created a minute before the others: its expiry, due at
	// the first Advance, proves the timers had time to fire.
	control := h.invoice("1000", kassa.SATS)
	clock.Advance(time.Minute)
	empty := h.invoice("1000", kassa.SATS)
	partial := h.invoice("1000", kassa.SATS)
	h.pay(partial, 400, 1, "bb")
	if got := h.get(partial.ID); got.Status != kassa.InvoiceNew || got.TotalPaid() != 400 {
		t.Fatalf("partial: %s %d", got.Status, got.TotalPaid())
	}
	clock.Advance(14 * time.Minute)
	eventually(t, "expiry of the control", func() bool { return h.get(control.ID).Status == kassa.InvoiceExpired })
	for _, inv := range []*kassa.Invoice{empty, partial} {
		if got := h.get(inv.ID); got.Status != kassa.InvoiceNew {
			t.Fatalf("expired a minute early: %s", got.Status)
		}
	}
	clock.Advance(time.Minute)
	eventually(t, "expiry", func() bool {
		return h.get(empty.ID).Status == kassa.InvoiceExpired && h.get(partial.ID).Status == kassa.InvoiceExpired
	})
	if got := h.get(partial.ID); got.AdditionalStatus != kassa.StatusUnderpaid {
		t.Fatalf("partial additional = %s", got.AdditionalStatus)
	}
	// The status is durable before the actor performs the event's effects,
	// so the Expired event may reach the sink just after the status shows.
	eventually(t, "the Expired event", func() bool { return len(h.sink.of(partial.ID)) >= 2 })
	if ev := h.sink.of(partial.ID); fmt.Sprint(ev) != "[New:None Expired:Underpaid]" {
		t.Fatalf("events = %v", ev)
	}
	// The rest arrives after expiry, within monitoring: PaidAfterExpiration.
	h.pay(partial, 600, 1, "cc")
	if got := h.get(partial.ID); got.Status != kassa.InvoiceSettled || got.AdditionalStatus != kassa.StatusPaidAfterExpiration {
		t.Fatalf("late payment: %s %s", got.Status, got.AdditionalStatus)
	}
}

func TestRestartRecoversAndExpiresOverdue(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	h.createStore("0", "0")
	soon := h.invoice("1000", kassa.SATS)
	db2 := reopen(t, h, db, dir)
	// Down for 20 minutes: the invoice must expire at start-up.
	clock.Advance(20 * time.Minute)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	n, err := h2.sys.Runtime.Recover(context.Background())
	if err != nil || n != 1 {
		t.Fatalf("recover = %d, %v", n, err)
	}
	eventually(t, "overdue expiry", func() bool { return h2.get(soon.ID).Status == kassa.InvoiceExpired })
}

func TestPanicRestartsOnlyThatInvoice(t *testing.T) {
	t.Parallel() // its own harness
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	a := h.invoice("1000", kassa.SATS)
	b := h.invoice("1000", kassa.SATS)
	// A New invoice keeps an actor only once its expiry is near: wake a
	// there, as the sweeper would.
	clock.Advance(a.ExpiresAt.Add(-time.Minute).Sub(clock.Now()))
	if err := h.sys.Service.FireDeadline(context.Background(), a.StoreID, a.ID); err != nil {
		t.Fatal(err)
	}
	pid := h.sys.Runtime.store(h.store.ID)
	child := actor.NewPID(h.sys.Runtime.actorSystem().Address(), pid.Id+"/"+invoiceName(a.ID))
	if _, ok := h.sys.Runtime.actorSystem().ProcessRegistry.GetLocal(child.Id); !ok {
		t.Fatal("invoice actor not found")
	}
	crashActor(t, h, child)
	// Both invoices still work.
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: a.PaymentHash, AmountMSat: 1_000_000})
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: b.PaymentHash, AmountMSat: 1_000_000})
	if h.get(a.ID).Status != kassa.InvoiceSettled || h.get(b.ID).Status != kassa.InvoiceSettled {
		t.Fatalf("after panic: a=%s b=%s", h.get(a.ID).Status, h.get(b.ID).Status)
	}
}

func TestBadInputStoresNothing(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	for _, r := range []kassa.InvoiceRequest{
		{Amount: decimal.RequireFromString("-1"), HasAmount: true},
		{Amount: decimal.Zero, HasAmount: true},
		{Amount: decimal.RequireFromString("1"), HasAmount: true, Currency: "XYZ"},
		{Amount: decimal.RequireFromString("1"), HasAmount: true, WalletMessage: string(make([]byte, 256))},
	} {
		if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &r); kassa.ErrorCode(err) != kassa.Invalid {
			t.Errorf("%+v: err = %v", r, err)
		}
	}
	n := 0
	h.db.Invoices(context.Background(), h.store.ID, kassa.ListQuery{}, func(*kassa.Invoice) error { n++; return nil })
	if n != 0 {
		t.Fatalf("%d invoices stored", n)
	}
	if _, err := h.sys.Service.CreateInvoice(context.Background(), "nostore", &kassa.InvoiceRequest{}); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("unknown store: %v", err)
	}
}

func TestCreditLimitBlocksInvoices(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("50", "0")
	// An invoice whose fee alone passes the credit limit is refused: 50%
	// of 200 002 sat is 100 001 sat.
	if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(200_002), HasAmount: true, Currency: kassa.SATS}); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("an invoice whose fee passes the credit limit: %v", err)
	}
	// 50% of 200 000 sat = 100 000 sat of fees, the whole credit.
	inv := h.invoice("200000", kassa.SATS)
	h.payLightning(inv, 200_000)
	_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1), HasAmount: true, Currency: kassa.SATS})
	if kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("err = %v", err)
	}
	if _, err := h.sys.Service.TopUp(context.Background(), h.store.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1), HasAmount: true, Currency: kassa.SATS}); err != nil {
		t.Fatalf("after top-up: %v", err)
	}
}

func TestConcurrentSettleCreatesOneTransaction(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("1", "0")
	inv := h.invoice("5000", kassa.SATS)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 32; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 5_000_000})
		}()
	}
	close(start)
	wg.Wait()
	txs, _ := h.db.TransactionsByInvoice(context.Background(), inv.ID)
	if len(txs) != 2 {
		t.Fatalf("%d transactions", len(txs))
	}
}

func TestPaymentRequestLifecycle(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	ctx := context.Background()
	pr, err := h.sys.Service.CreatePaymentRequest(ctx, h.store.ID, &kassa.PaymentRequestInput{Amount: decimal.NewFromInt(5), HasAmount: true, Title: "Shoes"})
	if err != nil {
		t.Fatal(err)
	}
	if pr.Currency != kassa.EUR || !pr.ExpiryDate.Equal(pr.CreatedAt.Add(30*24*time.Hour)) {
		t.Fatalf("defaults: %+v", pr)
	}
	if _, err := h.sys.Service.UpdatePaymentRequest(ctx, h.store.ID, pr.ID, &kassa.PaymentRequestInput{Amount: decimal.NewFromInt(7), HasAmount: true, Title: "Boots"}); err != nil {
		t.Fatal(err)
	}
	got, _ := h.db.PaymentRequest(ctx, pr.ID)
	if got.Title != "Boots" || !got.Amount.Equal(decimal.NewFromInt(7)) {
		t.Fatalf("after update: %+v", got)
	}
	if err := h.sys.Service.ArchivePaymentRequest(ctx, h.store.ID, pr.ID); err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Service.ArchivePaymentRequest(ctx, h.store.ID, pr.ID); kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("second archive: %v", err)
	}
	if _, err := h.sys.Service.CreatePaymentRequest(ctx, h.store.ID, &kassa.PaymentRequestInput{Title: "x"}); kassa.ErrorCode(err) != kassa.Invalid {
		t.Fatalf("no amount: %v", err)
	}
}

func TestEventActivatesPassivatedInvoice(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	h.sys.Service.HandleLightningEvent(context.Background(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: 1_000_000})
	// The settled invoice's actor passivates; a later on-chain payment to
	// its address activates it from storage and is recorded.
	pid := h.sys.Runtime.store(h.store.ID)
	child := pid.Id + "/" + invoiceName(inv.ID)
	eventually(t, "passivation", func() bool {
		_, ok := h.sys.Runtime.actorSystem().ProcessRegistry.GetLocal(child)
		return !ok
	})
	h.pay(inv, 500, 1, "dd")
	got := h.get(inv.ID)
	if got.Status != kassa.InvoiceSettled || got.TotalPaid() != 1500 || len(got.Payments) != 2 {
		t.Fatalf("after late payment: %s paid %d, %d payments", got.Status, got.TotalPaid(), len(got.Payments))
	}
}

func TestManyConcurrentCreatesAllExpire(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.runSweeper()
	h.createStore("0", "0")
	var wg sync.WaitGroup
	ids := make(chan string, 200)
	errs := make(chan error, 200)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 25; i++ {
				inv, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
					Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS,
				})
				if err != nil {
					errs <- err
					continue
				}
				ids <- inv.ID
			}
		}()
	}
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatalf("create: %v", err)
	}
	clock.Advance(15 * time.Minute)
	for id := range ids {
		eventually(t, "expiry of "+id, func() bool { return h.get(id).Status == kassa.InvoiceExpired })
	}
}

// TestStorePanicKeepsInvoiceTimers checks that the invoices of a store
// actor restarted after a panic (which stops its invoice actors, and
// their timers) still expire: an invoice due soon is woken by the store
// at once, the others by the sweeper as their deadline approaches.
func TestStorePanicKeepsInvoiceTimers(t *testing.T) {
	t.Parallel() // its own harness
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.sys.Runtime.RunSweeper(ctx)
	if _, err := h.sys.Runtime.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	due := h.invoice("1000", kassa.SATS)
	clock.Advance(14 * time.Minute)
	// The jump runs one round of the sweeper, which fires due early; the
	// crash waits until that round is over (its next round armed beside
	// due's timer). A fire still in flight when the store crashes is
	// lost with the invoice actor the crash stops, and holds the round,
	// and so the sweeper's next timer, until its request times out.
	eventually(t, "the sweeper's round after the jump", func() bool { return clock.Pending() == 2 })
	other := h.invoice("1000", kassa.SATS)
	crashActor(t, h, h.sys.Runtime.store(h.store.ID))
	// due expires in a minute, before the sweeper's next round: the
	// restarted store wakes it at once and it arms its timer again. The
	// pending timers are then the sweeper's and due's.
	eventually(t, "re-activation of the invoice due soon", func() bool { return h.active(due) })
	eventually(t, "its timer", func() bool { return clock.Pending() == 2 })
	if h.active(other) {
		t.Fatal("an invoice 15 minutes from its deadline was woken")
	}
	clock.Advance(time.Minute)
	eventually(t, "expiry after the store's restart", func() bool { return h.get(due.ID).Status == kassa.InvoiceExpired })
	if got := h.get(due.ID); !got.UpdatedAt.Equal(got.ExpiresAt) {
		t.Fatalf("expired at %v, want %v", got.UpdatedAt, got.ExpiresAt)
	}
	// The sweeper wakes the other one in its turn.
	clock.Advance(14 * time.Minute)
	eventually(t, "expiry of the other invoice", func() bool { return h.get(other.ID).Status == kassa.InvoiceExpired })
}

// TestExpiredInvoicesPassivateAndSweeperWakesThem checks that an expired
// invoice's actor does not wait out the monitoring window in memory, and
// that the sweeper wakes it in time to end monitoring.
func TestExpiredInvoicesPassivateAndSweeperWakesThem(t *testing.T) {
	t.Parallel() // its own harness; about 1 s of it is waiting
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.createStore("0", "0")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.sys.Runtime.RunSweeper(ctx)
	inv := h.invoice("1000", kassa.SATS)
	child := h.sys.Runtime.store(h.store.ID).Id + "/" + invoiceName(inv.ID)
	active := func() bool { _, ok := h.sys.Runtime.actorSystem().ProcessRegistry.GetLocal(child); return ok }

	clock.Advance(15 * time.Minute)
	eventually(t, "expiry", func() bool { return h.get(inv.ID).Status == kassa.InvoiceExpired })
	eventually(t, "passivation after expiry", func() bool { return !active() })

	// Move on through the hour of monitoring (the harness's window),
	// in one jump to shortly before the sweeper's reach, then a round
	// at a time; the sweeper wakes the invoice before its end.
	clock.Advance(h.get(inv.ID).MonitorUntil.Add(-2 * sweepAhead).Sub(clock.Now()))
	clock.StepUntil(t, "end of monitoring", h.get(inv.ID).MonitorUntil.Add(sweepEvery), func() bool {
		return h.get(inv.ID).MonitoringDone
	})
	if got := h.get(inv.ID); got.Status != kassa.InvoiceExpired || clock.Now().Before(got.MonitorUntil) {
		t.Fatalf("after monitoring: %s at %v (until %v)", got.Status, clock.Now(), got.MonitorUntil)
	}
	eventually(t, "passivation after monitoring", func() bool { return !active() })
}
