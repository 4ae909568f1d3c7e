package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// gate holds a backend call: pass tells entered and waits for release.
type gate struct{ entered, release chan struct{} }

func newGate() gate { return gate{entered: make(chan struct{}), release: make(chan struct{})} }

func (g gate) pass() {
	g.entered <- struct{}{}
	<-g.release
}

// heldLightning is fakeLightning whose CreateInvoice waits at its gate,
// to hold creates waiting for Lightning.
type heldLightning struct {
	fakeLightning
	gate
}

func (l heldLightning) CreateInvoice(ctx context.Context, amount kassa.MSat, memo string, expiry time.Duration) (kassa.LightningInvoice, error) {
	l.pass()
	return l.fakeLightning.CreateInvoice(ctx, amount, memo, expiry)
}

// TestCreatesAwaitingLightningCountsTheWaiting: the store paces its syncs
// by the creates waiting for the Lightning backend
// (persistence.DB.PaceSyncs), so the count must rise with each create
// that waits for it and fall back to zero when they have their invoices;
// a create that never asks Lightning (refused before, or on-chain only)
// never counts.
func TestCreatesAwaitingLightningCountsTheWaiting(t *testing.T) {
	ln := heldLightning{gate: newGate()}
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
		c.Lightning = ln
	})
	h.createStore("0", "0")
	const n = 3
	errs := make(chan error, n+1)
	for range n {
		go func() {
			_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
				Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
			errs <- err
		}()
		<-ln.entered
	}
	if got := h.sys.Service.CreatesAwaitingLightning(); got != n {
		t.Errorf("with %d creates waiting for Lightning: %d counted", n, got)
	}
	// One refused at validation never asks Lightning.
	if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(-1), HasAmount: true, Currency: kassa.SATS}); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("an invoice of -1 sat: %v, want invalid", err)
	}
	if got := h.sys.Service.CreatesAwaitingLightning(); got != n {
		t.Errorf("after a refused create: %d counted, want %d", got, n)
	}
	// One on-chain only is made beside them without asking Lightning.
	if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS,
		EnabledMethods: []kassa.PaymentMethod{kassa.MethodOnchain}}); err != nil {
		t.Fatalf("an on-chain only invoice: %v", err)
	}
	if got := h.sys.Service.CreatesAwaitingLightning(); got != n {
		t.Errorf("after an on-chain only create: %d counted, want %d", got, n)
	}
	close(ln.release)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	if got := h.sys.Service.CreatesAwaitingLightning(); got != 0 {
		t.Errorf("after every create ended: %d counted", got)
	}
}

// heldChain is fakeChain whose NewAddress waits at its gate.
type heldChain struct {
	*fakeChain
	gate
}

func (c heldChain) NewAddress(ctx context.Context, st *kassa.Store, invoiceID string) (string, error) {
	c.pass()
	return c.fakeChain.NewAddress(ctx, st, invoiceID)
}

// TestCreatesAwaitingLightningLeavesOutOtherWaits: a create that waits
// for something else (here the chain backend's address) is under way but
// not awaiting Lightning: its commit does not follow at Lightning's pace.
func TestCreatesAwaitingLightningLeavesOutOtherWaits(t *testing.T) {
	chain := heldChain{fakeChain: &fakeChain{}, gate: newGate()}
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
		c.Chain = chain
	})
	h.createStore("0", "0")
	errs := make(chan error, 1)
	go func() {
		_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
			Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
		errs <- err
	}()
	<-chain.entered
	if got := h.sys.Service.CreatesAwaitingLightning(); got != 0 {
		t.Errorf("a create waiting for its address: %d awaiting Lightning", got)
	}
	close(chain.release)
	if err := <-errs; err != nil {
		t.Fatalf("create: %v", err)
	}
}

// TestCreatesUnderWayCountsEveryCreate: the store has its syncs wait
// briefly while many creates are under way (persistence.DB.PaceSyncs),
// so the count rises with each create, whatever it waits for (here its
// address or its Lightning invoice), and falls back to zero once they
// are answered; a create refused at validation never counts.
func TestCreatesUnderWayCountsEveryCreate(t *testing.T) {
	chain := heldChain{fakeChain: &fakeChain{}, gate: newGate()}
	ln := heldLightning{gate: newGate()}
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
		c.Chain, c.Lightning = chain, ln
	})
	h.createStore("0", "0")
	errs := make(chan error, 2)
	create := func(methods ...kassa.PaymentMethod) {
		_, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
			Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS, EnabledMethods: methods})
		errs <- err
	}
	go create(kassa.MethodOnchain)
	<-chain.entered
	go create(kassa.MethodLightning)
	<-ln.entered
	if got := h.sys.Service.CreatesUnderWay(); got != 2 {
		t.Errorf("one create waiting for its address, one for Lightning: %d under way, want 2", got)
	}
	if _, err := h.sys.Service.CreateInvoice(context.Background(), h.store.ID, &kassa.InvoiceRequest{
		Amount: decimal.NewFromInt(-1), HasAmount: true, Currency: kassa.SATS}); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("an invoice of -1 sat: %v, want invalid", err)
	}
	if got := h.sys.Service.CreatesUnderWay(); got != 2 {
		t.Errorf("after a refused create: %d under way, want 2", got)
	}
	close(chain.release)
	close(ln.release)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	if got := h.sys.Service.CreatesUnderWay(); got != 0 {
		t.Errorf("after every create ended: %d under way", got)
	}
}
