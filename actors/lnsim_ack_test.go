package actors_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/actors"
	chainsim "github.com/kassapay/kassa/chain/sim"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/rates"
)

// This file is the simulated Lightning node's redelivery under the real
// actors: it lives here rather than in lightning/sim so that the node's
// own test binary does not link the actor system.

// faultyJournal is the real journal whose Commit fails while fail is set.
// It injects the failure only.
type faultyJournal struct {
	kassa.Journal
	fail atomic.Bool
}

var errInjected = errors.New("injected: no space left on device")

func (j *faultyJournal) Commit(ctx context.Context, b kassa.Batch) error {
	if j.fail.Load() {
		return errInjected
	}
	return j.Journal.Commit(ctx, b)
}

// TestSettleRedeliveredUntilSaved runs the real actors over in-memory
// Pebble with the simulated node: while the journal cannot commit, a
// Lightning payment answers an error and the invoice stays New; once the
// fault is gone the node delivers the settlement again by itself and the
// invoice settles exactly once.
func TestSettleRedeliveredUntilSaved(t *testing.T) {
	ctx := t.Context()
	db, err := persistence.Open("", persistence.Options{InMemory: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	node, err := lnsim.Open(ctx, nil, db.State("lnsim"))
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := rates.FromOptions("fixed", rates.Options{})
	if err != nil {
		t.Fatal(err)
	}
	journal := &faultyJournal{Journal: db}
	sys := actors.NewSystem(actors.Config{
		Journal: journal, Reader: db, Chain: chainsim.New(nil), Lightning: node, Rates: fixed,
		Clock: kassa.SystemClock{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		InvoiceExpiry: 15 * time.Minute, Monitoring: time.Hour,
	})
	defer sys.Runtime.Shutdown()
	if err := node.Start(ctx, sys.Service.HandleLightningEvent); err != nil {
		t.Fatal(err)
	}
	st, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, PercentFee: decimal.NewFromInt(1)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sys.Service.TopUp(ctx, st.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	inv, err := sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
	if err != nil {
		t.Fatal(err)
	}

	journal.fail.Store(true)
	if _, err := node.Pay(ctx, inv.LightningInvoice, 0); !errors.Is(err, lnsim.ErrNotRecorded) {
		t.Fatalf("Pay while commits fail = %v, want ErrNotRecorded", err)
	}
	if got, _ := db.Invoice(ctx, inv.ID); got.Status != kassa.InvoiceNew || len(got.Payments) != 0 {
		t.Fatalf("after the failed settle: %s with %d payments, want New with none", got.Status, len(got.Payments))
	}

	journal.fail.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, err := db.Invoice(ctx, inv.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.Status == kassa.InvoiceSettled {
			if len(got.Payments) != 1 || got.TotalPaid() != 1000 {
				t.Fatalf("settled with %d payments, %d sat; want one of 1000", len(got.Payments), got.TotalPaid())
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the settle was not delivered again: invoice %s", got.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if txs, _ := db.TransactionsByInvoice(ctx, inv.ID); len(txs) != 2 {
		t.Errorf("%d ledger lines, want a transfer and a fee", len(txs))
	}
	if _, err := node.Pay(ctx, inv.LightningInvoice, 0); !errors.Is(err, lnsim.ErrInvoiceAlreadyPaid) {
		t.Errorf("second Pay = %v, want ErrInvoiceAlreadyPaid", err)
	}
}
