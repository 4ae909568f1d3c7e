package kassa

import (
	"testing"
	"time"
)

func TestSettlementTransactions(t *testing.T) {
	inv := Invoice{
		ID: "inv1", StoreID: "store1", StoreCurrency: EUR,
		ExchangeRate: decimalOf("87000"), PercentFee: decimalOf("1"), WalletMessage: "Thanks!",
	}
	at := scriptEpoch.Add(11 * time.Minute)
	lines := SettlementTransactions(&inv, Settle{FullAmount: 11_495, Fee: 115, Method: MethodLightning, Hash: "h1"}, at)
	if len(lines) != 2 {
		t.Fatalf("%d lines, want a transfer and a fee", len(lines))
	}
	transfer, fee := lines[0], lines[1]
	want := Transaction{
		StoreID: "store1", InvoiceID: "inv1", Type: TransactionTransfer, Status: TransactionSettled,
		Amount: 11_495, FullAmount: 11_495, FeeAmount: 115, Currency: EUR,
		DepositMethod: MethodLightning, Hash: "h1", Comment: "Thanks!", CreatedAt: at,
	}
	// 11495 sats at 87000 EUR/BTC are 10.00065 EUR: the locked rate,
	// to the cent.
	if !transfer.AmountInPreferredCurrency.Equal(decimalOf("10")) {
		t.Errorf("transfer amountInPreferredCurrency = %s, want 10", transfer.AmountInPreferredCurrency)
	}
	if !transfer.Rate.Equal(decimalOf("87000")) || !fee.Rate.Equal(decimalOf("87000")) {
		t.Errorf("rates = %s, %s: want the invoice's locked rate 87000", transfer.Rate, fee.Rate)
	}
	transfer.AmountInPreferredCurrency = want.AmountInPreferredCurrency
	transfer.Rate = want.Rate
	if transfer != want {
		t.Errorf("transfer = %+v\nwant %+v", transfer, want)
	}
	if fee.Type != TransactionFee || fee.Status != TransactionSettled || fee.Amount != 115 || fee.FullAmount != 11_495 ||
		fee.FeeAmount != 115 || fee.InvoiceID != "inv1" || fee.StoreID != "store1" || fee.Hash != "h1" ||
		fee.Comment != "service fee 1%" || !fee.CreatedAt.Equal(at) || fee.Currency != EUR {
		t.Errorf("fee = %+v", fee)
	}
	if !fee.AmountInPreferredCurrency.Equal(decimalOf("0.1")) { // 0.10005
		t.Errorf("fee amountInPreferredCurrency = %s, want 0.1", fee.AmountInPreferredCurrency)
	}
	if transfer.BalanceDelta() != 0 || fee.BalanceDelta() != -115 {
		t.Errorf("balance deltas %d and %d, want 0 and -115", transfer.BalanceDelta(), fee.BalanceDelta())
	}

	// No fee line at 0 %.
	inv.PercentFee = decimalOf("0")
	lines = SettlementTransactions(&inv, Settle{FullAmount: 5000, Method: MethodOnchain, Hash: "tx"}, at)
	if len(lines) != 1 || lines[0].Type != TransactionTransfer || lines[0].FeeAmount != 0 {
		t.Errorf("without a fee: %+v", lines)
	}

	// In a currency without a minor unit.
	inv.StoreCurrency, inv.ExchangeRate = JPY, decimalOf("15000000")
	lines = SettlementTransactions(&inv, Settle{FullAmount: 6667, Method: MethodOnchain}, at)
	if !lines[0].AmountInPreferredCurrency.Equal(decimalOf("1000")) || lines[0].Currency != JPY { // 1000.05
		t.Errorf("JPY transfer: %s %s, want 1000 JPY", lines[0].AmountInPreferredCurrency, lines[0].Currency)
	}
}

func TestBalanceDelta(t *testing.T) {
	for _, tc := range []struct {
		tx   Transaction
		want Sats
	}{
		{Transaction{Type: TransactionTransfer, Amount: 1000}, 0},
		{Transaction{Type: TransactionFee, Amount: 10}, -10},
		{Transaction{Type: TransactionTopUp, Amount: 50_000}, 50_000},
		{Transaction{Type: TransactionType(9), Amount: 50_000}, 0},
	} {
		if got := tc.tx.BalanceDelta(); got != tc.want {
			t.Errorf("%s of %d: BalanceDelta = %d, want %d", tc.tx.Type, tc.tx.Amount, got, tc.want)
		}
	}
}
