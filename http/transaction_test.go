package http

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// seedTransactions settles three invoices of store A a day apart (the
// newest at testNow, paid by Lightning), each a minute after its
// creation, and then one of store B. It returns store A's invoices,
// oldest first, and store B's. The env starts at transactionsStart.
func seedTransactions(e *env) (a []*kassa.Invoice, b *kassa.Invoice) {
	for i := 2; i >= 0; i-- {
		at := testNow.Add(-time.Duration(i) * 24 * time.Hour)
		inv := e.seedInvoice("store_a", at, `{"amount": 10, "walletMessage": "order `+strconv.Itoa(i)+`"}`)
		e.advanceTo(at.Add(time.Minute))
		if i == 0 {
			if err := e.sys.Service.HandleLightningEvent(e.t.Context(), kassa.LightningEvent{PaymentHash: inv.PaymentHash, AmountMSat: inv.Amount.MSat()}); err != nil {
				e.t.Fatal(err)
			}
		} else {
			e.payOnchain(inv, strings.Repeat(strconv.Itoa(i), 64), inv.Amount, 1)
		}
		a = append(a, inv)
	}
	b = e.seedInvoice("store_b", e.clock.Now(), `{"amount": 10}`)
	e.payOnchain(b, strings.Repeat("b", 64), b.Amount, 1)
	return a, b
}

// transactionsStart is when the clock of a test that calls
// seedTransactions starts.
var transactionsStart = testNow.Add(-2 * 24 * time.Hour)

func TestListTransactions(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, transactionsStart)
	seedTransactions(e)
	ids := func(query string) string {
		t.Helper()
		w := e.do("GET", "/api/v1/stores/store_a/transactions"+query, "")
		expectStatus(t, w, 200)
		var out []string
		for _, rec := range decode[[]transactionRecord](t, w) {
			out = append(out, strconv.FormatInt(rec.ID, 10))
		}
		return strings.Join(out, " ")
	}
	// Store A's lines: 1,2 (two days ago), 3,4 (yesterday), 5,6 (today);
	// 7 and 8 are store B's.
	tests := []struct{ query, want string }{
		{"", "6 5 4 3 2 1"},
		{"?startDate=" + testNow.AddDate(0, 0, -1).Format("2006-01-02"), "6 5 4 3"},
		{"?startDate=" + strconv.FormatInt(testNow.Unix(), 10), "6 5"},
		{"?endDate=" + testNow.AddDate(0, 0, -2).Format("2006-01-02"), "2 1"},
		{"?endDate=" + strconv.FormatInt(testNow.Add(-24*time.Hour+time.Minute).Unix(), 10), "4 3 2 1"},
		{"?startDate=2025-01-01T00:00:00Z&endDate=2025-01-01T23:59:59Z", "4 3"},
	}
	for _, tt := range tests {
		if got := ids(tt.query); got != tt.want {
			t.Errorf("%s: ids %q, want %q", tt.query, got, tt.want)
		}
	}

	w := e.do("GET", "/api/v1/stores/store_a/transactions?limit=4", "")
	if got := len(decode[[]transactionRecord](t, w)); got != 4 || w.Header().Get("Next-Cursor") == "" {
		t.Fatalf("first page: %d lines, cursor %q", got, w.Header().Get("Next-Cursor"))
	}
	if got := ids("?limit=4&cursor=" + w.Header().Get("Next-Cursor")); got != "2 1" {
		t.Errorf("second page %q, want 2 1", got)
	}
	expectError(t, e.do("GET", "/api/v1/stores/store_a/transactions?startDate=13/01/2025", ""), 400, kassa.Invalid)
	expectError(t, e.do("GET", "/api/v1/stores/store_a/transactions?limit=5000", ""), 400, kassa.Invalid)

	w = e.do("GET", "/api/v1/stores/store_a/transactions?startDate="+strconv.FormatInt(testNow.Unix(), 10), "")
	expectGolden(t, "transactions", w.Body.Bytes())
}

func TestGetTransaction(t *testing.T) {
	t.Parallel()
	e := newEnvAt(t, transactionsStart)
	invoices, other := seedTransactions(e)
	tests := []struct {
		name, id string
		headers  []header
		status   int
		wantID   int64
	}{
		{"by id", "5", nil, 200, 5},
		{"fee line by id", "6", nil, 200, 6},
		{"by invoice id: the deposit", invoices[2].ID, nil, 200, 5},
		{"by invoice id of an older invoice", invoices[0].ID, nil, 200, 1},
		{"another store's line", "7", nil, 404, 0},
		{"another store's invoice", other.ID, nil, 404, 0},
		{"unknown id", "99", nil, 404, 0},
		{"zero", "0", nil, 404, 0},
		{"unknown invoice", "inv_9999", nil, 404, 0},
		{"no id", "no%20id", nil, 404, 0},
		{"another store's key", "5", []header{asB}, 403, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := e.do("GET", "/api/v1/stores/store_a/transactions/"+tt.id, "", tt.headers...)
			if tt.status != 200 {
				expectStatus(t, w, tt.status)
				return
			}
			expectStatus(t, w, 200)
			if got := decode[transactionRecord](t, w); got.ID != tt.wantID {
				t.Errorf("transaction %d, want %d", got.ID, tt.wantID)
			}
		})
	}
	w := e.do("GET", "/api/v1/stores/store_a/transactions/"+invoices[2].ID, "")
	expectGolden(t, "transaction", w.Body.Bytes())
}

func TestTransactionRecordAmounts(t *testing.T) {
	t.Parallel()
	rec := newTransactionRecord(&kassa.Transaction{
		ID: 9, Type: kassa.TransactionTopUp, Status: kassa.TransactionSettled, Amount: 5,
		AmountInPreferredCurrency: decimal.RequireFromString("0.0000000123456789012345"),
	})
	if rec.DepositMethod != "" || rec.Type != "topup" || string(rec.AmountInPreferredCurrency) != "0.0000000123456789012345" {
		t.Errorf("record %+v", rec)
	}
}
