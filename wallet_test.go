package kassa

import (
	"strings"
	"testing"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
)

// accountKey returns the account key m/84'/coin'/0' of a fixed seed on
// params: private, or its public key with the given version bytes.
func accountKey(t *testing.T, params *chaincfg.Params, private bool, version []byte) string {
	t.Helper()
	key, err := hdkeychain.NewMaster(make([]byte, 32), params)
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range []uint32{84, params.HDCoinType, 0} {
		if key, err = key.Derive(hdkeychain.HardenedKeyStart + i); err != nil {
			t.Fatal(err)
		}
	}
	if !private {
		if key, err = key.Neuter(); err != nil {
			t.Fatal(err)
		}
	}
	if version != nil {
		if key, err = key.CloneWithVersion(version); err != nil {
			t.Fatal(err)
		}
	}
	return key.String()
}

// TestValidateXpub is issue 18's finding: an invalid xpub was saved
// through the admin API and the dashboard, and every later invoice of
// the store failed. The one rule every path uses.
func TestValidateXpub(t *testing.T) {
	xpub := accountKey(t, &chaincfg.MainNetParams, false, nil)
	tpub := accountKey(t, &chaincfg.TestNet3Params, false, nil)
	zpub := accountKey(t, &chaincfg.MainNetParams, false, zpubVersion[:])
	vpub := accountKey(t, &chaincfg.TestNet3Params, false, vpubVersion[:])
	ypub := accountKey(t, &chaincfg.MainNetParams, false, []byte{0x04, 0x9d, 0x7c, 0xb2})
	tprv := accountKey(t, &chaincfg.TestNet3Params, true, nil)
	last := "1"
	if strings.HasSuffix(tpub, "1") {
		last = "2"
	}
	broken := tpub[:len(tpub)-1] + last // the checksum no longer matches
	for _, tt := range []struct {
		name, xpub, typ string
		field, want     string // "" when valid
	}{
		{"empty", "", "", "", ""},
		{"xpub", xpub, "", "", ""},
		{"xpub taproot", xpub, "taproot", "", ""},
		{"tpub", tpub, "segwit", "", ""},
		{"zpub", zpub, "", "", ""},
		{"vpub", vpub, "segwit", "", ""},
		{"garbage", "vpub5Y…", "", "xpub", "is not an extended public key"},
		{"bad checksum", broken, "", "xpub", "is not an extended public key"},
		{"private key", tprv, "", "xpub", "is a private key"},
		{"vpub for taproot", vpub, "taproot", "xpub", "for segwit"},
		{"ypub", ypub, "", "xpub", "another script type"},
		{"spaces", " " + tpub, "", "xpub", "spaces"},
		{"too long", strings.Repeat("x", MaxXpubLength+1), "", "xpub", "too long"},
		{"unknown type", tpub, "legacy", "xpubType", "segwit or taproot"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			err := ValidateXpub(tt.xpub, tt.typ)
			if tt.field == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			fields := fieldErrors(err)
			if ErrorCode(err) != Invalid || len(fields) != 1 || fields[0].Field != tt.field || !strings.Contains(fields[0].Message, tt.want) {
				t.Fatalf("got %v %+v, want %s: %s", err, fields, tt.field, tt.want)
			}
			if tt.xpub != "" && strings.Contains(err.Error(), strings.TrimSpace(tt.xpub)) {
				t.Errorf("the error repeats the key: %v", err)
			}
		})
	}
}

func TestValidateLightningAddress(t *testing.T) {
	for _, ok := range []string{"", "shop@example.com", "Shop.Name+tip@pay.example.com", "shop@127.0.0.1:8080", "a_b-c@x-y.example", "shop@[::1]:9000", "shop@localhost"} {
		if err := ValidateLightningAddress(ok); err != nil {
			t.Errorf("%q refused: %v", ok, err)
		}
	}
	for _, bad := range []string{"shop", "@example.com", "shop@", "sh op@example.com", "shop@exa mple.com", "shop@example.com/path",
		"shop@a@b.com", "shop@example.com:0", "shop@example.com:http", "shop@-bad.example", "shop@bad..example", "<script>@example.com",
		"shop@[::1", "shop@[::1]x", "shop@" + strings.Repeat("a", 300) + ".com"} {
		err := ValidateLightningAddress(bad)
		fields := fieldErrors(err)
		if len(fields) != 1 || fields[0].Field != "lightningAddress" {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

// TestStoreSettingsCheckWallet: creating a store and updating one check
// the xpub and the Lightning address with the same functions.
func TestStoreSettingsCheckWallet(t *testing.T) {
	s := StoreSettings{Name: "Shop", Xpub: "not-a-key", LightningAddress: "not an address"}
	fields := fieldErrors(s.Validate())
	if len(fields) != 2 || fields[0].Field != "xpub" || fields[1].Field != "lightningAddress" {
		t.Errorf("create: %+v", fields)
	}
	st := &Store{Name: "Shop", Currency: EUR}
	_, err := st.Apply(StoreUpdate{Name: "Shop", Currency: EUR, Xpub: "not-a-key", LightningAddress: "x@y@z"})
	fields = fieldErrors(err)
	if len(fields) != 2 || fields[0].Field != "lightningAddress" || fields[1].Field != "xpub" {
		t.Errorf("update: %+v", fields)
	}
	tpub := accountKey(t, &chaincfg.TestNet3Params, false, nil)
	if _, err := st.Apply(StoreUpdate{Name: "Shop", Currency: EUR, Xpub: tpub, LightningAddress: "shop@example.com"}); err != nil {
		t.Errorf("update with a good xpub and address: %v", err)
	}
}
