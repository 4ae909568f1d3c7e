package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/expiry"
	"github.com/kassapay/kassa/kassatest"
)

// TestRestartOnPostgresFiresWhatTheLastRunClaimed: a single node on
// PostgreSQL claims an invoice's deadline early (its sweeper wakes the
// invoice so that its timer fires on time) and is killed before the
// deadline; the claim stays in the database with the dead run's name.
// The next run's first round fires the deadline at once: a single node
// is the only claimer, so what a claim held is its dead run's. Before,
// the claim kept every sweeper off until Grace past the deadline, and
// nothing else woke the invoice (a read does not), so invoices due
// while the node was down expired late (cmd/kassa TestKill9 under
// make test-pg, 2 runs of 3 at load 11-14).
func TestRestartOnPostgresFiresWhatTheLastRunClaimed(t *testing.T) {
	ctx := context.Background()
	clock := kassatest.NewTestClock(kassatest.Epoch)
	db1, open := openPG(t, clock)
	first := pgNode(t, db1, clock, &nodeClient{node: "first", rcv: &receipts{}}, "first-run", time.Second, nil)
	st, err := first.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR})
	if err != nil {
		t.Fatal(err)
	}
	inv, err := first.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(5000), HasAmount: true, Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}
	// A minute before its deadline the first run's round claims it.
	clock.Advance(inv.ExpiresAt.Add(-time.Minute).Sub(clock.Now()))
	if n, err := first.Runtime.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("the first run's round claimed %d, %v; want the invoice", n, err)
	}
	first.Runtime.Shutdown() // killed: its timer is gone, its claim is not
	clock.Advance(inv.ExpiresAt.Add(time.Second).Sub(clock.Now()))

	next := pgNode(t, open(), clock, &nodeClient{node: "next", rcv: &receipts{}}, "next-run", time.Second, nil)
	if n, err := next.Runtime.Recover(ctx); err != nil || n != 1 {
		t.Fatalf("the next run's first round claimed %d, %v; want the invoice its last run claimed (its claim runs %v more)",
			n, err, expiry.DefaultGrace-time.Second)
	}
	got, err := db1.Invoice(ctx, inv.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Status != kassa.InvoiceExpired {
		t.Errorf("after the next run's first round the invoice is %s, want Expired", got.Status)
	}
}
