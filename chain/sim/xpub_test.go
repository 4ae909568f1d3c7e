package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
)

// The test vector of BIP84 (bip-0084.mediawiki): the account key
// m/84'/0'/0' of the mnemonic "abandon … about", and the addresses of
// m/84'/0'/0'/0/0 and m/84'/0'/0'/0/1 with their public keys.
const (
	bip84AccountZprv = "zprvAdG4iTXWBoARxkkzNpNh8r6Qag3irQB8PzEMkAFeTRXxHpbF9z4QgEvBRmfvqWvGp42t42nvgGpNgYSJA9iefm1yYNZKEm7z6qUWCroSQnE"
	// bip84AccountZpub is the public key of bip84AccountZprv as SLIP-132
	// publishes it.
	bip84AccountZpub = "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
	bip84Address0    = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
	bip84PubKey0     = "0330d54fd0dd420a6e5f8d3624f5f3482cae350f79d5f0753bf5beef9c2d91af3c"
	bip84Address1    = "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"
)

// bip84Account returns the vector's account key as a tpub and as a vpub,
// converted from the document's zprv: same key and chain code, testnet
// version bytes.
func bip84Account(t *testing.T) (tpub, vpub string) {
	t.Helper()
	zprv, err := hdkeychain.NewKeyFromString(bip84AccountZprv)
	if err != nil {
		t.Fatal(err)
	}
	tprv, err := zprv.CloneWithVersion(chaincfg.TestNet3Params.HDPrivateKeyID[:])
	if err != nil {
		t.Fatal(err)
	}
	pub, err := tprv.Neuter()
	if err != nil {
		t.Fatal(err)
	}
	// The neutered key must be SLIP-132's published zpub, re-versioned.
	zpub, err := hdkeychain.NewKeyFromString(bip84AccountZpub)
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := zpub.CloneWithVersion(versionTpub[:]); pub.String() != want.String() {
		t.Fatalf("account key: neutered zprv %s differs from published zpub %s", pub, want)
	}
	v, err := pub.CloneWithVersion(versionVpub[:])
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(pub.String(), "tpub") || !strings.HasPrefix(v.String(), "vpub") {
		t.Fatalf("conversion gave %s and %s", pub, v)
	}
	return pub.String(), v.String()
}

// regtestTwin returns the regtest address with the witness program of the
// mainnet address mainnet: the same key, spelled for regtest.
func regtestTwin(t *testing.T, mainnet string) string {
	t.Helper()
	addr, err := btcutil.DecodeAddress(mainnet, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	twin, err := btcutil.NewAddressWitnessPubKeyHash(addr.ScriptAddress(), &chaincfg.RegressionNetParams)
	if err != nil {
		t.Fatal(err)
	}
	return twin.EncodeAddress()
}

func TestNewAddressFromXpubFollowsBIP84(t *testing.T) {
	tpub, vpub := bip84Account(t)
	want0, want1 := regtestTwin(t, bip84Address0), regtestTwin(t, bip84Address1)
	if !strings.HasPrefix(want0, "bcrt1q") {
		t.Fatalf("twin of %s is %s", bip84Address0, want0)
	}

	c := New(nil)
	ctx := context.Background()
	store := &kassa.Store{ID: "store_a", Xpub: tpub}
	got0, err := c.NewAddress(ctx, store, "inv1")
	if err != nil {
		t.Fatal(err)
	}
	got1, err := c.NewAddress(ctx, store, "inv2")
	if err != nil {
		t.Fatal(err)
	}
	if got0 != want0 || got1 != want1 {
		t.Fatalf("addresses m/0/0, m/0/1 = %s, %s; want %s, %s", got0, got1, want0, want1)
	}

	// The public key behind m/0/0 is the vector's.
	account, _ := hdkeychain.NewKeyFromString(tpub)
	receive, _ := account.Derive(0)
	first, _ := receive.Derive(0)
	pub, _ := first.ECPubKey()
	if got := hexString(pub.SerializeCompressed()); got != bip84PubKey0 {
		t.Fatalf("pubkey m/0/0 = %s, want %s", got, bip84PubKey0)
	}

	// The vpub of the same account continues the same counter, even from
	// another store: one wallet never hands out an address twice.
	got2, err := c.NewAddress(ctx, &kassa.Store{ID: "store_b", Xpub: " " + vpub + "\n"}, "inv3")
	if err != nil {
		t.Fatal(err)
	}
	third, _ := receive.Derive(2)
	pub2, _ := third.ECPubKey()
	want2, _ := p2wpkhAddress(pub2)
	if got2 != want2 {
		t.Fatalf("third address = %s, want m/0/2 %s", got2, want2)
	}
}

func TestNewAddressStartsAtStoreIndex(t *testing.T) {
	tpub, _ := bip84Account(t)
	c := New(nil)
	got, err := c.NewAddress(context.Background(), &kassa.Store{ID: "s", Xpub: tpub, NextAddressIndex: 1}, "inv")
	if err != nil {
		t.Fatal(err)
	}
	if want := regtestTwin(t, bip84Address1); got != want {
		t.Fatalf("address = %s, want m/0/1 %s", got, want)
	}
}

func TestNewAddressRefusesKeys(t *testing.T) {
	zprv, err := hdkeychain.NewKeyFromString(bip84AccountZprv)
	if err != nil {
		t.Fatal(err)
	}
	tprv, _ := zprv.CloneWithVersion(chaincfg.TestNet3Params.HDPrivateKeyID[:])
	zpub, _ := hdkeychain.NewKeyFromString(bip84AccountZpub)
	xpub, _ := zpub.CloneWithVersion(chaincfg.MainNetParams.HDPublicKeyID[:])
	upub, _ := zpub.CloneWithVersion([]byte{0x04, 0x4a, 0x52, 0x62})
	odd, _ := zpub.CloneWithVersion([]byte{1, 2, 3, 4})

	tests := []struct {
		name, xpub, says string
	}{
		{"zpub", bip84AccountZpub, "mainnet"},
		{"xpub", xpub.String(), "mainnet"},
		{"zprv", bip84AccountZprv, "private key"},
		{"tprv", tprv.String(), "private key"},
		{"upub", upub.String(), "upub"},
		{"unknown version", odd.String(), "version"},
		{"garbage", "tpubnotakey", "not an extended public key"},
		{"bad checksum", bip84AccountZpub[:len(bip84AccountZpub)-1] + "t", "not an extended public key"},
	}
	c := New(nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := c.NewAddress(context.Background(), &kassa.Store{ID: "s", Xpub: tt.xpub}, "inv")
			if kassa.ErrorCode(err) != kassa.Invalid {
				t.Fatalf("err = %v, want an invalid error", err)
			}
			msg := kassa.ErrorMessage(err)
			if !strings.Contains(msg, tt.says) {
				t.Errorf("message %q does not say %q", msg, tt.says)
			}
			if strings.Contains(msg, tt.xpub) {
				t.Errorf("message %q repeats the key", msg)
			}
		})
	}
}

func TestNewAddressExhausted(t *testing.T) {
	tpub, _ := bip84Account(t)
	c := New(nil)
	store := &kassa.Store{ID: "s", Xpub: tpub, NextAddressIndex: hdkeychain.HardenedKeyStart - 1}
	if _, err := c.NewAddress(context.Background(), store, "last"); err != nil {
		t.Fatal(err)
	}
	_, err := c.NewAddress(context.Background(), store, "one too many")
	if !errors.Is(err, ErrAddressesExhausted) {
		t.Fatalf("err = %v, want ErrAddressesExhausted", err)
	}
}
