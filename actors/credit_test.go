package actors

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// countingChain is fakeChain that counts the addresses asked for and
// fails them while fail is set.
type countingChain struct {
	fakeChain
	asked atomic.Int32
	fail  atomic.Bool
}

func (c *countingChain) NewAddress(ctx context.Context, st *kassa.Store, id string) (string, error) {
	c.asked.Add(1)
	if c.fail.Load() {
		return "", errors.New("injected: chain backend down")
	}
	return c.fakeChain.NewAddress(ctx, st, id)
}

// countingLightning is fakeLightning that counts the invoices made.
type countingLightning struct {
	fakeLightning
	made *atomic.Int32
}

func (l countingLightning) CreateInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	l.made.Add(1)
	return l.fakeLightning.CreateInvoice(ctx, amount, memo, expiry)
}

// TestCreditRefusalAsksNoBackend: an invoice whose fee would pass the
// store's credit limit is refused by the store actor before any backend
// is asked, so it leaves no address and no Lightning invoice behind. It
// failed when the store actor checked the fee only after both were made
// (the caller's early check saw the balance alone).
func TestCreditRefusalAsksNoBackend(t *testing.T) {
	chain := &countingChain{}
	var made atomic.Int32
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
		c.Chain, c.Lightning = chain, countingLightning{made: &made}
	})
	h.createStore("50", "0")
	// 50% of 200 002 sat is 100 001 sat, past the 100 000 sat credit.
	_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(200_002), HasAmount: true, Currency: kassa.SATS})
	if kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("an invoice whose fee passes the credit limit: %v", err)
	}
	if n, m := chain.asked.Load(), made.Load(); n != 0 || m != 0 {
		t.Errorf("the refused invoice asked for %d addresses and made %d Lightning invoices, want none", n, m)
	}
	// The positive control: one within the limit asks both.
	h.invoice("200000", kassa.SATS)
	if n, m := chain.asked.Load(), made.Load(); n != 1 || m != 1 {
		t.Errorf("an invoice within the limit asked for %d addresses and made %d Lightning invoices, want 1 and 1", n, m)
	}
}

// TestFailedCreateReleasesItsFee: the fee the store actor reserves for
// a create is released when the create fails at a backend, so failed
// creates do not use up the credit limit.
func TestFailedCreateReleasesItsFee(t *testing.T) {
	chain := &countingChain{}
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) { c.Chain = chain })
	h.createStore("1", "0")
	create := func() error {
		_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(500_000), HasAmount: true, Currency: kassa.SATS})
		return err
	}
	// Each fee is 5 000 sat: 25 failed creates would hold 125 000 sat of
	// the 100 000 sat credit had they kept their reservations.
	chain.fail.Store(true)
	for range 25 {
		if err := create(); kassa.ErrorCode(err) != kassa.Unavailable {
			t.Fatalf("a create with the chain backend down: %v", err)
		}
	}
	chain.fail.Store(false)
	for i := range 20 {
		if err := create(); err != nil {
			t.Fatalf("create %d of the 20 whose fees fit: %v", i+1, err)
		}
	}
	if err := create(); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("a 21st invoice: %v", err)
	}
}

// TestCreateFailingToCommitReleasesItsFee: a create whose batch does not
// commit answers the error, leaves no invoice, and releases the fee the
// store actor reserved for it: an invoice due later than the sweeper's
// reach (written without an actor) and one due sooner (written by its
// actor) alike.
func TestCreateFailingToCommitReleasesItsFee(t *testing.T) {
	for _, expiry := range []time.Duration{15 * time.Minute, time.Minute} {
		t.Run(expiry.String(), func(t *testing.T) {
			var failing atomic.Bool
			db := openMem(t)
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
				c.InvoiceExpiry = expiry
				c.Journal = &faultyJournal{Journal: db, commitErr: func() error {
					if failing.Load() {
						return errDiskFull
					}
					return nil
				}}
			})
			h.createStore("1", "0")
			create := func() (*kassa.Invoice, error) {
				return h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(500_000), HasAmount: true, Currency: kassa.SATS})
			}
			// Each fee is 5 000 sat: 25 failed creates would hold 125 000
			// sat of the 100 000 sat credit had they kept their
			// reservations.
			failing.Store(true)
			for range 25 {
				if inv, err := create(); !errors.Is(err, errDiskFull) {
					t.Fatalf("a create whose commit fails: %v, %v", inv, err)
				}
			}
			failing.Store(false)
			var n int
			if _, err := db.Invoices(context.Background(), h.store.ID, kassa.ListQuery{}, func(*kassa.Invoice) error { n++; return nil }); err != nil || n != 0 {
				t.Fatalf("%d invoices stored after failed commits (%v), want none", n, err)
			}
			for i := range 20 {
				if _, err := create(); err != nil {
					t.Fatalf("create %d of the 20 whose fees fit: %v", i+1, err)
				}
			}
			if _, err := create(); kassa.ErrorCode(err) != kassa.PaymentRequired {
				t.Fatalf("a 21st invoice: %v", err)
			}
		})
	}
}
