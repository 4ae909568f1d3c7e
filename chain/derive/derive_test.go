package derive

import (
	"errors"
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
)

// The test vectors of BIP84 and BIP86 (mnemonic "abandon … about",
// account 0): account keys and the first two receive addresses.
const (
	bip84Zpub     = "zpub6rFR7y4Q2AijBEqTUquhVz398htDFrtymD9xYYfG1m4wAcvPhXNfE3EfH1r1ADqtfSdVCToUG868RvUUkgDKf31mGDtKsAYz2oz2AGutZYs"
	bip84Address0 = "bc1qcr8te4kr609gcawutmrza0j4xv80jy8z306fyu"
	bip84Address1 = "bc1qnjg0jd8228aq7egyzacy8cys3knf9xvrerkf9g"

	bip86Xpub     = "xpub6BgBgsespWvERF3LHQu6CnqdvfEvtMcQjYrcRzx53QJjSxarj2afYWcLteoGVky7D3UKDP9QyrLprQ3VCECoY49yfdDEHGCtMMj92pReUsQ"
	bip86Address0 = "bc1p5cyxnuxmeuwuvkwfem96lqzszd02n6xdcjrs20cac6yqjjwudpxqkedrcr"
	bip86Address1 = "bc1p4qhjn9zdvkux4e44uhx8tc55attvtyu358kutcqkudyccelu0was9fqzwh"
)

func addresses(t *testing.T, xpub string, typ Type, params *chaincfg.Params) [2]string {
	t.Helper()
	a, err := Parse(xpub, typ, params)
	if err != nil {
		t.Fatal(err)
	}
	var out [2]string
	for i := range out {
		addr, err := a.Address(uint32(i))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = addr.EncodeAddress()
	}
	return out
}

func TestBIP84Vectors(t *testing.T) {
	got := addresses(t, bip84Zpub, SegWit, &chaincfg.MainNetParams)
	if got != [2]string{bip84Address0, bip84Address1} {
		t.Fatalf("m/0/0, m/0/1 = %v, want %s %s", got, bip84Address0, bip84Address1)
	}
	// The same account as an xpub gives the same addresses.
	key, _ := hdkeychain.NewKeyFromString(bip84Zpub)
	xpub, _ := key.CloneWithVersion(versionXpub[:])
	if again := addresses(t, xpub.String(), SegWit, &chaincfg.MainNetParams); again != got {
		t.Fatalf("xpub gives %v, zpub %v", again, got)
	}
}

func TestBIP86Vectors(t *testing.T) {
	got := addresses(t, bip86Xpub, Taproot, &chaincfg.MainNetParams)
	if got != [2]string{bip86Address0, bip86Address1} {
		t.Fatalf("m/0/0, m/0/1 = %v, want %s %s", got, bip86Address0, bip86Address1)
	}
}

func TestTestnetKeysMakeRegtestAddresses(t *testing.T) {
	key, _ := hdkeychain.NewKeyFromString(bip84Zpub)
	vpub, _ := key.CloneWithVersion(versionVpub[:])
	got := addresses(t, vpub.String(), SegWit, &chaincfg.RegressionNetParams)
	if !strings.HasPrefix(got[0], "bcrt1q") {
		t.Fatalf("regtest address %s", got[0])
	}
	key86, _ := hdkeychain.NewKeyFromString(bip86Xpub)
	tpub, _ := key86.CloneWithVersion(versionTpub[:])
	if got := addresses(t, tpub.String(), Taproot, &chaincfg.RegressionNetParams); !strings.HasPrefix(got[0], "bcrt1p") {
		t.Fatalf("regtest taproot address %s", got[0])
	}
}

func TestParseRefusesKeys(t *testing.T) {
	key, _ := hdkeychain.NewKeyFromString(bip84Zpub)
	vpub, _ := key.CloneWithVersion(versionVpub[:])
	upub, _ := key.CloneWithVersion([]byte{0x04, 0x4a, 0x52, 0x62})
	tests := []struct {
		name, xpub string
		typ        Type
		params     *chaincfg.Params
		says       string
	}{
		{"mainnet key on regtest", bip84Zpub, SegWit, &chaincfg.RegressionNetParams, "mainnet"},
		{"testnet key on mainnet", vpub.String(), SegWit, &chaincfg.MainNetParams, "testnet"},
		{"zpub for taproot", bip84Zpub, Taproot, &chaincfg.MainNetParams, "taproot"},
		{"upub", upub.String(), SegWit, &chaincfg.TestNet3Params, "upub"},
		{"garbage", "xpubnotakey", SegWit, &chaincfg.MainNetParams, "not an extended public key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(tt.xpub, tt.typ, tt.params)
			if err == nil || !strings.Contains(err.Error(), tt.says) {
				t.Fatalf("err = %v, want one that says %q", err, tt.says)
			}
			if strings.Contains(err.Error(), tt.xpub) {
				t.Fatalf("error repeats the key")
			}
		})
	}
}

func TestAddressBeyondHardened(t *testing.T) {
	a, err := Parse(bip84Zpub, SegWit, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Address(hdkeychain.HardenedKeyStart); err == nil || errors.Is(err, ErrInvalidChild) {
		t.Fatalf("err = %v", err)
	}
}
