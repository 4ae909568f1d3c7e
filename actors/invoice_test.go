package actors

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// TestPaidAgainIsRecorded pays a settled invoice again, by its Lightning
// invoice and twice on-chain to its address, with the invoice's actor
// passivated in between: every satoshi reaches the ledger, the invoice
// turns Overpaid with a payment record per payment, and no second
// Settled event goes out.
func TestPaidAgainIsRecorded(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("1", "0")
	ctx := context.Background()
	inv := h.invoice("1000", kassa.SATS)
	h.pay(inv, 1000, 1, "aa")
	if got := h.get(inv.ID); got.Status != kassa.InvoiceSettled || got.AdditionalStatus != kassa.StatusNone {
		t.Fatalf("after settling: %s %s", got.Status, got.AdditionalStatus)
	}
	eventually(t, "passivation", func() bool { return !h.active(inv) })

	h.payLightning(inv, 1000)
	h.pay(inv, 500, 0, "bb")
	if got := h.get(inv.ID); got.TotalPaid() != 2500 || got.ConfirmedPaid() != 2000 {
		t.Fatalf("paid %d, confirmed %d", got.TotalPaid(), got.ConfirmedPaid())
	}
	h.pay(inv, 500, 1, "bb")
	h.pay(inv, 500, 2, "bb") // a deeper block adds nothing

	got := h.get(inv.ID)
	if got.Status != kassa.InvoiceSettled || got.AdditionalStatus != kassa.StatusOverpaid || len(got.Payments) != 3 {
		t.Fatalf("invoice: %s %s with %d payments", got.Status, got.AdditionalStatus, len(got.Payments))
	}
	txs, err := h.db.TransactionsByInvoice(ctx, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	var deposited kassa.Sats
	for _, tx := range txs {
		lines = append(lines, fmt.Sprintf("%s %d %s", tx.Type, tx.Amount, tx.Hash))
		if tx.Type == kassa.TransactionTransfer {
			deposited += tx.Amount
		}
	}
	if want := "[transfer 1000 aa fee 10 aa transfer 1000 " + inv.PaymentHash + " fee 10 " + inv.PaymentHash + " transfer 500 bb fee 5 bb]"; fmt.Sprint(lines) != want {
		t.Fatalf("ledger = %v\nwant %s", lines, want)
	}
	if deposited != got.TotalPaid() {
		t.Fatalf("ledger deposits %d sat of %d received", deposited, got.TotalPaid())
	}
	if bal, _ := h.db.Balance(ctx, h.store.ID); bal != -25 {
		t.Fatalf("balance = %d, want -25 (three fee lines)", bal)
	}
	if ev := h.sink.of(inv.ID); fmt.Sprint(ev) != "[New:None Processing:None Settled:None]" {
		t.Fatalf("events = %v: a payment after settlement must not send Settled again", ev)
	}
}

// TestTopUpIsValuedInTheStoreCurrency checks that amountInPreferredCurrency
// has one unit: a top-up line is in the store's currency at the rate of
// the day, like the sales, and carries that rate.
func TestTopUpIsValuedInTheStoreCurrency(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	tx, err := h.sys.Service.TopUp(context.Background(), h.store.ID, 100_000, "")
	if err != nil {
		t.Fatal(err)
	}
	// 100 000 sat at 50 000 EUR/BTC are 50 EUR.
	if tx.Currency != kassa.EUR || !tx.AmountInPreferredCurrency.Equal(decimal.NewFromInt(50)) || !tx.Rate.Equal(decimal.NewFromInt(50_000)) {
		t.Fatalf("top-up line: %s %s at %s, want 50 EUR at 50000", tx.AmountInPreferredCurrency, tx.Currency, tx.Rate)
	}
	stored, err := h.db.Transaction(context.Background(), tx.ID)
	if err != nil || stored.Currency != kassa.EUR || !stored.AmountInPreferredCurrency.Equal(decimal.NewFromInt(50)) {
		t.Fatalf("stored top-up line: %+v, %v", stored, err)
	}
}

// TestCreditLimitHoldsUnderConcurrentCreates releases many creates at
// once against a store whose credit covers the fees of only some of them:
// the store actor reserves the fee of each open invoice, so exactly those
// that fit are created, and an expired invoice gives its room back.
func TestCreditLimitHoldsUnderConcurrentCreates(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.runSweeper()
	h.createStore("1", "0")
	// Balance 0, credit limit 100 000 sat: 20 invoices with a fee of
	// 5 000 sat (1% of 500 000) fit.
	create := func() error {
		_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
			Amount: decimal.NewFromInt(500_000), HasAmount: true, Currency: kassa.SATS,
		})
		return err
	}
	const n = 50
	start := make(chan struct{})
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs <- create()
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	created := 0
	for err := range errs {
		switch {
		case err == nil:
			created++
		case kassa.ErrorCode(err) != kassa.PaymentRequired:
			t.Fatalf("create: %v", err)
		}
	}
	if created != 20 {
		t.Fatalf("%d invoices created, want the 20 whose fees fit in the credit limit", created)
	}
	if err := create(); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("a 21st invoice: %v", err)
	}
	// Once the open invoices expire their fees are no longer reserved.
	clock.Advance(15 * time.Minute)
	eventually(t, "room after expiry", func() bool { return create() == nil })
}

// TestPayLinkReusesSessionInvoice checks that paying a pay link again in
// the same customer session returns the session's invoice while it is
// New and unexpired, and a new one otherwise.
func TestPayLinkReusesSessionInvoice(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, openMem(t), clock)
	h.runSweeper()
	h.createStore("0", "0")
	ctx := context.Background()
	pr, err := h.sys.Service.CreatePaymentRequest(ctx, h.store.ID, &kassa.PaymentRequestInput{
		Amount: decimal.NewFromInt(20), HasAmount: true, Title: "Shoes", Discount: decimal.NewFromInt(5),
	})
	if err != nil {
		t.Fatal(err)
	}
	pay := func(session string) *kassa.Invoice {
		t.Helper()
		inv, err := h.sys.Service.PayPaymentRequest(ctx, h.store.ID, pr.ID, session)
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	first := pay("s1")
	if first.PaymentLinkID != pr.ID || !first.InvoiceAmount.Equal(decimal.NewFromInt(19)) || first.Currency != kassa.EUR {
		t.Fatalf("invoice of the pay link: %s %s %s", first.PaymentLinkID, first.InvoiceAmount, first.Currency)
	}
	if again := pay("s1"); again.ID != first.ID {
		t.Fatalf("the same session got a new invoice %s, want %s", again.ID, first.ID)
	}
	if other := pay("s2"); other.ID == first.ID {
		t.Fatal("another session got the first session's invoice")
	}
	if a, b := pay(""), pay(""); a.ID == b.ID || a.ID == first.ID {
		t.Fatal("without a session every pay makes a new invoice")
	}
	if _, err := h.sys.Service.PayPaymentRequest(ctx, "otherstore", pr.ID, "s1"); kassa.ErrorCode(err) != kassa.NotFound {
		t.Fatalf("another store's pay link: %v", err)
	}

	// Once the session's invoice expires, the session gets a new one.
	clock.Advance(15 * time.Minute)
	eventually(t, "expiry", func() bool { return h.get(first.ID).Status == kassa.InvoiceExpired })
	if next := pay("s1"); next.ID == first.ID || next.Status != kassa.InvoiceNew {
		t.Fatalf("after expiry: %s %s", next.ID, next.Status)
	}
}

// TestExpiryCancelsLightningInvoice checks that an invoice's expiry
// cancels its Lightning invoice at the node, once the expiry is durable,
// and that an invoice settled by Lightning cancels nothing.
func TestExpiryCancelsLightningInvoice(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	type cancelled struct {
		hash   string
		status kassa.InvoiceStatus // of the invoice in storage when cancelled
	}
	cancels := make(chan cancelled, 10)
	db := openMem(t)
	h := newHarnessWith(t, db, clock, func(c *Config) {
		c.Lightning = fakeLightning{cancel: func(ctx context.Context, hash string) error {
			status := kassa.InvoiceStatus(0)
			if id, err := db.InvoiceIDByPaymentHash(ctx, hash); err == nil {
				if inv, err := db.Invoice(ctx, id); err == nil {
					status = inv.Status
				}
			}
			cancels <- cancelled{hash, status}
			return nil
		}}
	})
	h.runSweeper()
	h.createStore("0", "0")
	paid := h.invoice("1000", kassa.SATS)
	h.payLightning(paid, 1000)
	open := h.invoice("1000", kassa.SATS)
	clock.Advance(15 * time.Minute)
	eventually(t, "expiry", func() bool { return h.get(open.ID).Status == kassa.InvoiceExpired })
	var got cancelled
	eventually(t, "cancel", func() bool {
		select {
		case got = <-cancels:
			return true
		default:
			return false
		}
	})
	if got.hash != open.PaymentHash || got.status != kassa.InvoiceExpired {
		t.Fatalf("cancelled %s with the invoice %s, want %s once Expired", got.hash, got.status, open.PaymentHash)
	}
	if len(cancels) != 0 {
		t.Fatalf("%d more cancels: the paid invoice's was cancelled too", len(cancels))
	}
}

// TestPayLinkSessionRace releases many pays of one session at once: they
// all get the same invoice.
func TestPayLinkSessionRace(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	ctx := context.Background()
	pr, err := h.sys.Service.CreatePaymentRequest(ctx, h.store.ID, &kassa.PaymentRequestInput{Amount: decimal.NewFromInt(20), HasAmount: true, Title: "Shoes"})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	start := make(chan struct{})
	ids := make(chan string, n)
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			inv, err := h.sys.Service.PayPaymentRequest(ctx, h.store.ID, pr.ID, "same-session")
			if err != nil {
				errs <- err
				return
			}
			ids <- inv.ID
		}()
	}
	close(start)
	wg.Wait()
	close(ids)
	close(errs)
	for err := range errs {
		t.Fatalf("pay: %v", err)
	}
	seen := map[string]bool{}
	for id := range ids {
		seen[id] = true
	}
	if len(seen) != 1 {
		t.Fatalf("%d invoices for one session, want 1", len(seen))
	}
}

// TestPaidAgainByLightningIsForwarded checks that money paid again by
// Lightning, which lands on the service's node, is forwarded to the
// store's Lightning address like a settlement's.
func TestPaidAgainByLightningIsForwarded(t *testing.T) {
	m := newMerchant(t)
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), m, lnsim.NewPayer(m.node))
	h.createStore()
	inv := h.invoice("10", kassa.EUR) // 20,000 sat
	h.pay(inv, inv.Amount, 1, "aa")   // settled on-chain: nothing to forward
	h.payLightning(inv, inv.Amount)   // then paid again by Lightning

	var again kassa.Transaction
	eventually(t, "the forward of the payment made again", func() bool {
		txs, err := h.db.TransactionsByInvoice(context.Background(), inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range txs {
			if tx.Type == kassa.TransactionTransfer && tx.DepositMethod == kassa.MethodLightning {
				again = tx
			}
		}
		return again.Status == kassa.TransactionSettled
	})
	if paid := m.paid(); len(paid) != 1 || again.Hash != paid[0] || again.Amount != inv.Amount {
		t.Fatalf("forwarded %+v; merchant invoices paid %v", again, paid)
	}
}
