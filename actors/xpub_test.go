package actors

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainrpc "github.com/kassapay/kassa/chain/rpc"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence"
)

// testTpub returns an account-level testnet xpub (m/84'/1'/0').
func testTpub(t *testing.T) string {
	t.Helper()
	master, err := hdkeychain.NewMaster(make([]byte, 32), &chaincfg.TestNet3Params)
	if err != nil {
		t.Fatal(err)
	}
	key := master
	for _, i := range []uint32{84, 1, 0} {
		if key, err = key.Derive(hdkeychain.HardenedKeyStart + i); err != nil {
			t.Fatal(err)
		}
	}
	pub, err := key.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	return pub.String()
}

// TestXpubAddressesNeverRepeatAcrossRestarts checks that the derivation
// index is store state: after a restart (a fresh simulated chain that
// counts from zero) the next invoice still gets a new address.
func TestXpubAddressesNeverRepeatAcrossRestarts(t *testing.T) {
	dir := t.TempDir()
	start := func() (*persistence.DB, *System) {
		db, err := persistence.Open(dir, persistence.Options{})
		if err != nil {
			t.Fatal(err)
		}
		sys := NewSystem(Config{Journal: db, Reader: db, Chain: chainsim.New(nil), Lightning: fakeLightning{}, Rates: fixedRates{},
			Webhooks: newFakeWebhookClient(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		return db, sys
	}
	ctx := context.Background()
	db, sys := start()
	st, err := sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Xpub", Currency: kassa.EUR, Xpub: testTpub(t), ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	create := func(sys *System) {
		t.Helper()
		inv, err := sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
		if err != nil {
			t.Fatal(err)
		}
		if seen[inv.OnchainAddress] {
			t.Fatalf("address %s handed out twice", inv.OnchainAddress)
		}
		if inv.DerivationIndex == nil || *inv.DerivationIndex != uint32(len(seen)) {
			t.Fatalf("invoice derivation index %v, want %d", inv.DerivationIndex, len(seen))
		}
		stored, err := sys.Runtime.cfg.Reader.Invoice(ctx, inv.ID)
		if err != nil || stored.DerivationIndex == nil || *stored.DerivationIndex != uint32(len(seen)) {
			t.Fatalf("stored derivation index %v, %v", stored.DerivationIndex, err)
		}
		seen[inv.OnchainAddress] = true
	}
	for i := 0; i < 3; i++ {
		create(sys)
	}
	sys.Runtime.Shutdown()
	db.Close()

	db, sys = start()
	defer db.Close()
	defer sys.Runtime.Shutdown()
	for i := 0; i < 3; i++ {
		create(sys)
	}
	got, err := db.Store(ctx, st.ID)
	if err != nil || got.NextAddressIndex != 6 {
		t.Fatalf("next index = %d, %v", got.NextAddressIndex, err)
	}
}

// TestAddressOfExpiredUnpaidInvoiceIsReused: once the monitoring window of
// an invoice that expired unpaid has ended, its derivation index goes back
// to the store, and the next invoice gets the same address; an invoice
// that received anything keeps its address for good.
func TestAddressOfExpiredUnpaidInvoiceIsReused(t *testing.T) {
	t.Parallel() // its own harness; about 1 s of it is waiting
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	chain, err := chainrpc.New(chainrpc.Config{Conn: chainrpc.Conn{
		Host: "127.0.0.1:1", User: "u", Pass: "p", NoTLS: true, Network: "regtest", Params: &chaincfg.RegressionNetParams,
	}})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Chain = chain })
	st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "Reuse", Currency: kassa.EUR, Xpub: testTpub(t), ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	h.store = st
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	h.sys.Runtime.RunSweeper(ctx)
	unpaid := h.invoice("1000", kassa.SATS)
	paid := h.invoice("1000", kassa.SATS)
	if err := h.sys.Service.HandleChainEvent(context.Background(), kassa.ChainEvent{Address: paid.OnchainAddress, Payment: kassa.Payment{
		ID: "aa:0", TxID: "aa", Amount: 400, Destination: paid.OnchainAddress,
	}}); err != nil {
		t.Fatal(err)
	}
	// Before the end of monitoring, a new invoice gets a new index.
	clock.Advance(16 * time.Minute)
	eventually(t, "expiry", func() bool { return h.get(unpaid.ID).Status == kassa.InvoiceExpired })
	third := h.invoice("1000", kassa.SATS)
	if *third.DerivationIndex != 2 {
		t.Fatalf("third invoice index %d, want 2", *third.DerivationIndex)
	}
	// Step through the armed timers (the sweeper's rounds, the invoices'
	// own) to the end of both windows, and no further than a round past it.
	end := h.get(unpaid.ID).MonitorUntil
	if p := h.get(paid.ID).MonitorUntil; p.After(end) {
		end = p
	}
	// The sweeper's rounds until both are near: skipped, one jump.
	clock.Advance(end.Add(-2 * sweepAhead).Sub(clock.Now()))
	clock.StepUntil(t, "end of monitoring", end.Add(sweepEvery), func() bool {
		return h.get(unpaid.ID).MonitoringDone && h.get(paid.ID).MonitoringDone
	})
	var reused *kassa.Invoice
	eventually(t, "the released index", func() bool {
		st, err := h.db.Store(context.Background(), h.store.ID)
		return err == nil && len(st.FreeAddressIndexes) == 1
	})
	reused = h.invoice("1000", kassa.SATS)
	if reused.OnchainAddress != unpaid.OnchainAddress || *reused.DerivationIndex != *unpaid.DerivationIndex {
		t.Fatalf("reused address %s (index %d), want %s (index %d)", reused.OnchainAddress, *reused.DerivationIndex, unpaid.OnchainAddress, *unpaid.DerivationIndex)
	}
	if id, err := h.db.InvoiceIDByAddress(context.Background(), unpaid.OnchainAddress); err != nil || id != reused.ID {
		t.Fatalf("address belongs to %s, %v; want the new invoice %s", id, err, reused.ID)
	}
	next := h.invoice("1000", kassa.SATS)
	if *next.DerivationIndex != 3 || next.OnchainAddress == paid.OnchainAddress {
		t.Fatalf("next invoice index %d address %s: the paid invoice's address must never come back", *next.DerivationIndex, next.OnchainAddress)
	}
}

// TestDropOfUnknownPaymentIsAcknowledged: a drop for a payment the
// invoice never recorded has nothing to undo; the watcher must be able to
// acknowledge it, or it would deliver it again forever.
func TestDropOfUnknownPaymentIsAcknowledged(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("0", "0")
	inv := h.invoice("1000", kassa.SATS)
	err := h.sys.Service.HandleChainEvent(context.Background(), kassa.ChainEvent{Address: inv.OnchainAddress, Dropped: true, Payment: kassa.Payment{
		ID: "bb:0", TxID: "bb", Amount: 1000, Destination: inv.OnchainAddress,
	}})
	if err != nil {
		t.Fatalf("drop of an unknown payment: %v", err)
	}
}

// TestXpubOfAnotherStoreIsRefused: with the real chain backend two stores
// cannot share an account key (their invoices would get the same
// addresses), whatever version bytes or address type spell it.
func TestXpubOfAnotherStoreIsRefused(t *testing.T) {
	h := newHarnessWith(t, openMem(t), kassatest.NewTestClock(time.Now()), func(c *Config) {
		chain, err := chainrpc.New(chainrpc.Config{Reader: c.Reader, Conn: chainrpc.Conn{
			Host: "127.0.0.1:1", User: "u", Pass: "p", NoTLS: true, Network: "regtest", Params: &chaincfg.RegressionNetParams,
		}})
		if err != nil {
			t.Fatal(err)
		}
		c.Chain = chain
	})
	tpub := testTpub(t)
	if _, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "One", Currency: kassa.EUR, Xpub: tpub, ConfirmationsRequired: 1}); err != nil {
		t.Fatal(err)
	}
	key, _ := hdkeychain.NewKeyFromString(tpub)
	vpub, _ := key.CloneWithVersion([]byte{0x04, 0x5f, 0x1c, 0xf6})
	for _, s := range []kassa.StoreSettings{
		{Name: "Two", Currency: kassa.EUR, Xpub: tpub, ConfirmationsRequired: 1},
		{Name: "Three", Currency: kassa.EUR, Xpub: vpub.String(), ConfirmationsRequired: 1},
		{Name: "Four", Currency: kassa.EUR, Xpub: tpub, XpubType: "taproot", ConfirmationsRequired: 1},
	} {
		_, err := h.sys.Service.CreateStore(context.Background(), s)
		if kassa.ErrorCode(err) != kassa.Invalid || !strings.Contains(kassa.ErrorMessage(err)+err.Error(), "another store") {
			t.Errorf("store %s with the key of store One: %v", s.Name, err)
		}
	}
}

// newInvoiceFault fails the commits of batches that write a new invoice
// while on is set; it injects the failure only.
type newInvoiceFault struct {
	kassa.Journal
	on atomic.Bool
}

type newInvoiceBatch struct {
	kassa.Batch
	newInvoice bool
}

func (b *newInvoiceBatch) PutInvoice(inv, prev *kassa.Invoice, seq uint64) {
	b.newInvoice = b.newInvoice || prev == nil
	b.Batch.PutInvoice(inv, prev, seq)
}

func (b *newInvoiceBatch) PutRequest(r kassa.RequestRecord) {
	b.Batch.(kassa.RequestBatch).PutRequest(r)
}

func (j *newInvoiceFault) NewBatch() kassa.Batch {
	return &newInvoiceBatch{Batch: j.Journal.NewBatch()}
}

func (j *newInvoiceFault) Commit(ctx context.Context, b kassa.Batch) error {
	nb := b.(*newInvoiceBatch)
	if nb.newInvoice && j.on.Load() {
		return errDiskFull
	}
	return j.Journal.Commit(ctx, nb.Batch)
}

// TestFailedCreateGivesItsAddressIndexBack: a create that took a
// derivation index and then failed to write its invoice gives the index
// back, so the next invoice gets that address: failed creates do not
// open a gap in the merchant's wallet.
func TestFailedCreateGivesItsAddressIndexBack(t *testing.T) {
	for _, far := range []bool{false, true} {
		t.Run(fmt.Sprintf("passivated=%v", far), func(t *testing.T) {
			db := openMem(t)
			journal := &newInvoiceFault{Journal: db}
			h := newHarnessWith(t, db, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)), func(c *Config) {
				c.Journal = journal
				if far {
					// Invoices due beyond the sweeper's reach are written
					// without an actor.
					c.InvoiceExpiry = 24 * time.Hour
				}
			})
			st, err := h.sys.Service.CreateStore(context.Background(), kassa.StoreSettings{Name: "Gap", Currency: kassa.EUR, Xpub: testTpub(t), ConfirmationsRequired: 1})
			if err != nil {
				t.Fatal(err)
			}
			h.store = st
			first := h.invoice("1000", kassa.SATS)
			journal.on.Store(true)
			for range 3 {
				if _, err := h.sys.Service.CreateInvoice(context.Background(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS}); err == nil {
					t.Fatal("a create whose write failed succeeded")
				}
			}
			journal.on.Store(false)
			var next *kassa.Invoice
			eventually(t, "the index given back", func() bool {
				s, err := h.db.Store(context.Background(), st.ID)
				return err == nil && (len(s.FreeAddressIndexes) > 0 || s.NextAddressIndex == 1)
			})
			next = h.invoice("1000", kassa.SATS)
			if *next.DerivationIndex != *first.DerivationIndex+1 {
				t.Fatalf("after three failed creates the next invoice has index %d, want %d", *next.DerivationIndex, *first.DerivationIndex+1)
			}
		})
	}
}
