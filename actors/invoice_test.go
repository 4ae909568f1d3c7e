package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// TestPaidAgainIsRecorded pays a settled invoice again, by its Lightning
// invoice and twice on-chain to its address, with the invoice's actor
// passivated in between: every satoshi reaches the ledger, the invoice
// turns Overpaid with a payment record per payment, and no second
// Settled event goes out.
func TestPaidAgainIsRecorded(t *testing.T) {
	h := newHarness(t, openMem(t), kassa.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
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
	h := newHarness(t, openMem(t), kassa.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	tx, err := h.sys.TopUp(context.Background(), h.store.ID, 100_000)
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
