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

func TestSettlementLines(t *testing.T) {
	at := scriptEpoch.Add(11 * time.Minute)
	index := uint32(7)
	lightning := Payment{ID: "h1", Method: MethodLightning, Amount: 5_000}
	onchain := Payment{ID: "tx:0", Method: MethodOnchain, Amount: 6_000, Confirmations: 1}
	unconfirmed := Payment{ID: "tx:1", Method: MethodOnchain, Amount: 900}
	dropped := Payment{ID: "h2", Method: MethodLightning, Amount: 700, Dropped: true}
	invoice := func(xpub bool, payments ...Payment) *Invoice {
		inv := &Invoice{
			ID: "inv1", StoreID: "store1", StoreCurrency: EUR, ExchangeRate: decimalOf("100000"),
			PercentFee: decimalOf("1"), WalletMessage: "Thanks!", OnchainAddress: "bc1q…",
			ConfirmationsRequired: 1, Payments: payments, UpdatedAt: at,
		}
		if xpub {
			inv.DerivationIndex = &index
		}
		return inv
	}
	forwarding := Custody{Forwarding: true}
	wallet := Custody{Forwarding: true, Onchain: true}
	type line struct {
		typ     TransactionType
		full    Sats
		forward Sats
	}
	for _, tc := range []struct {
		name    string
		inv     *Invoice
		effects []Effect
		custody Custody
		want    []line
	}{
		{"Lightning, no forwarding", invoice(true, lightning), []Effect{Settle{FullAmount: 5_000, Fee: 50, Method: MethodLightning}}, Custody{},
			[]line{{TransactionTransfer, 5_000, 0}, {TransactionFee, 5_000, 0}}},
		{"Lightning, forwarded", invoice(true, lightning), []Effect{Settle{FullAmount: 5_000, Fee: 50, Method: MethodLightning}}, forwarding,
			[]line{{TransactionTransfer, 5_000, 5_000}, {TransactionFee, 5_000, 0}}},
		{"on-chain to the store's xpub", invoice(true, onchain), []Effect{Settle{FullAmount: 6_000, Method: MethodOnchain}}, wallet,
			[]line{{TransactionTransfer, 6_000, 0}}},
		{"on-chain to the service wallet", invoice(false, onchain), []Effect{Settle{FullAmount: 6_000, Method: MethodOnchain}}, wallet,
			[]line{{TransactionTransfer, 6_000, 6_000}}},
		{"on-chain without xpub, wallet not the service's", invoice(false, onchain), []Effect{Settle{FullAmount: 6_000, Method: MethodOnchain}}, forwarding,
			[]line{{TransactionTransfer, 6_000, 0}}},
		{"partly on-chain to the xpub, partly Lightning", invoice(true, onchain, lightning, unconfirmed, dropped),
			[]Effect{Settle{FullAmount: 11_000, Method: MethodOnchain}}, wallet,
			[]line{{TransactionTransfer, 11_000, 5_000}}},
		{"paid again by Lightning", invoice(true, lightning), []Effect{PaidAgain{Amount: 2_000, Fee: 20, Method: MethodLightning}}, forwarding,
			[]line{{TransactionTransfer, 2_000, 2_000}, {TransactionFee, 2_000, 0}}},
		{"paid again on-chain to the xpub", invoice(true, lightning), []Effect{PaidAgain{Amount: 2_000, Method: MethodOnchain}}, wallet,
			[]line{{TransactionTransfer, 2_000, 0}}},
		{"paid again, no forwarding", invoice(true, lightning), []Effect{PaidAgain{Amount: 2_000, Method: MethodLightning}}, Custody{},
			[]line{{TransactionTransfer, 2_000, 0}}},
		{"settle and paid again, in order", invoice(true, lightning),
			[]Effect{Emit{Type: EventSettled}, Settle{FullAmount: 5_000, Method: MethodLightning}, PaidAgain{Amount: 300, Method: MethodLightning}}, forwarding,
			[]line{{TransactionTransfer, 5_000, 5_000}, {TransactionTransfer, 300, 300}}},
		{"no ledger effect", invoice(true, lightning), []Effect{Emit{Type: EventSettled}, StopWatching{}}, forwarding, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SettlementLines(tc.inv, tc.effects, tc.custody)
			if len(got) != len(tc.want) {
				t.Fatalf("%d lines, want %d: %+v", len(got), len(tc.want), got)
			}
			for i, w := range tc.want {
				g := got[i]
				if g.Type != w.typ || g.FullAmount != w.full || g.Forward != w.forward {
					t.Errorf("line %d: %s of %d forwarding %d, want %s of %d forwarding %d", i, g.Type, g.FullAmount, g.Forward, w.typ, w.full, w.forward)
				}
				if g.StoreID != "store1" || g.InvoiceID != "inv1" || !g.CreatedAt.Equal(at) || g.Status != TransactionSettled ||
					!g.Rate.Equal(decimalOf("100000")) || g.Currency != EUR {
					t.Errorf("line %d: %+v", i, g.Transaction)
				}
			}
		})
	}
}

func TestSettlementLineAwaiting(t *testing.T) {
	line := SettlementLine{Transaction: Transaction{
		StoreID: "store1", InvoiceID: "inv1", Type: TransactionTransfer, Status: TransactionSettled,
		Amount: 11_000, FullAmount: 11_000, DepositMethod: MethodOnchain, Hash: "tx", Comment: "Thanks!",
	}, Forward: 5_000}
	for _, tc := range []struct {
		address string
		want    TransactionStatus
	}{{"shop@example.com", TransactionPending}, {"", TransactionHeld}} {
		tx := line.Awaiting(tc.address)
		if tx.Status != tc.want || tx.Hash != "" || tx.DepositMethod != MethodLightning || tx.FullAmount != 11_000 || tx.Amount != 11_000 {
			t.Errorf("address %q: %+v, want %s by Lightning without hash", tc.address, tx, tc.want)
		}
	}
	if line.Status != TransactionSettled || line.Hash != "tx" {
		t.Errorf("Awaiting changed the line: %+v", line.Transaction)
	}
	q := line.QueuedTransfer(42)
	if q != (QueuedTransfer{TransactionID: 42, StoreID: "store1", InvoiceID: "inv1", Amount: 5_000_000, Direct: 6_000, Comment: "Thanks!"}) {
		t.Errorf("queued transfer %+v", q)
	}
	direct := SettlementLine{Transaction: line.Transaction}
	if tx := direct.Awaiting(""); tx != line.Transaction {
		t.Errorf("a line that forwards nothing: %+v, want it unchanged", tx)
	}
}

func TestCustodyWakes(t *testing.T) {
	index := uint32(1)
	paid := &Invoice{OnchainAddress: "bc1q…", DerivationIndex: &index, ConfirmationsRequired: 1,
		Payments: []Payment{{Method: MethodOnchain, Amount: 6_000, Confirmations: 1}}}
	lightning := &Invoice{Payments: []Payment{{Method: MethodLightning, Amount: 6_000}}}
	for _, tc := range []struct {
		name    string
		custody Custody
		inv     *Invoice
		effects []Effect
		want    bool
	}{
		{"settled by Lightning", Custody{Forwarding: true}, lightning, []Effect{Settle{}}, true},
		{"no forwarding", Custody{}, lightning, []Effect{Settle{}}, false},
		{"settled on-chain to the xpub", Custody{Forwarding: true, Onchain: true}, paid, []Effect{Settle{}}, false},
		{"paid again by Lightning", Custody{Forwarding: true}, paid, []Effect{PaidAgain{Method: MethodLightning}}, true},
		{"paid again on-chain to the xpub", Custody{Forwarding: true, Onchain: true}, paid, []Effect{PaidAgain{Method: MethodOnchain}}, false},
		{"no settle", Custody{Forwarding: true}, lightning, []Effect{Emit{}}, false},
	} {
		if got := tc.custody.Wakes(tc.inv, tc.effects); got != tc.want {
			t.Errorf("%s: Wakes = %v, want %v", tc.name, got, tc.want)
		}
	}
}
