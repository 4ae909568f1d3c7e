package actors

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
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
	st, err := sys.CreateStore(ctx, kassa.StoreSettings{Name: "Xpub", Currency: kassa.EUR, Xpub: testTpub(t), ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	create := func(sys *System) {
		t.Helper()
		inv, err := sys.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(1000), HasAmount: true, Currency: kassa.SATS})
		if err != nil {
			t.Fatal(err)
		}
		if seen[inv.OnchainAddress] {
			t.Fatalf("address %s handed out twice", inv.OnchainAddress)
		}
		if inv.DerivationIndex == nil || *inv.DerivationIndex != uint32(len(seen)) {
			t.Fatalf("invoice derivation index %v, want %d", inv.DerivationIndex, len(seen))
		}
		stored, err := sys.cfg.Reader.Invoice(ctx, inv.ID)
		if err != nil || stored.DerivationIndex == nil || *stored.DerivationIndex != uint32(len(seen)) {
			t.Fatalf("stored derivation index %v, %v", stored.DerivationIndex, err)
		}
		seen[inv.OnchainAddress] = true
	}
	for i := 0; i < 3; i++ {
		create(sys)
	}
	sys.Shutdown()
	db.Close()

	db, sys = start()
	defer db.Close()
	defer sys.Shutdown()
	for i := 0; i < 3; i++ {
		create(sys)
	}
	got, err := db.Store(ctx, st.ID)
	if err != nil || got.NextAddressIndex != 6 {
		t.Fatalf("next index = %d, %v", got.NextAddressIndex, err)
	}
}
