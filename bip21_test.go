package kassa_test

import (
	"maps"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

const (
	// bip21Address is BIP84's first test address, spelled for regtest.
	bip21Address = "bcrt1qcr8te4kr609gcawutmrza0j4xv80jy8zeqchgx"
	// bip21Lightning looks like a BOLT11 invoice; BIP21 does not check.
	bip21Lightning = "lnbcrt123450n1pjtestinvoiceqqqsp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs"
)

func TestBIP21Format(t *testing.T) {
	tests := []struct {
		name      string
		address   string
		amount    kassa.Sats
		lightning string
		label     string
		want      string
	}{
		{"address only", bip21Address, 0, "", "", "bitcoin:" + bip21Address},
		{"amount", bip21Address, 12_345, "", "", "bitcoin:" + bip21Address + "?amount=0.00012345"},
		{"one satoshi", bip21Address, 1, "", "", "bitcoin:" + bip21Address + "?amount=0.00000001"},
		{"trailing zeros trimmed", bip21Address, 150_000_000, "", "", "bitcoin:" + bip21Address + "?amount=1.5"},
		{"whole bitcoin", bip21Address, 100_000_000, "", "", "bitcoin:" + bip21Address + "?amount=1"},
		{"every bitcoin", bip21Address, kassa.MaxSats, "", "", "bitcoin:" + bip21Address + "?amount=21000000"},
		{"negative amount omitted", bip21Address, -5, "", "", "bitcoin:" + bip21Address},
		{
			"unified", bip21Address, 12_345, bip21Lightning, "",
			"bitcoin:" + bip21Address + "?amount=0.00012345&lightning=" + strings.ToUpper(bip21Lightning),
		},
		{
			"label escaped", bip21Address, 0, "", "Café & Co / 100%+?#=",
			"bitcoin:" + bip21Address + "?label=Caf%C3%A9%20%26%20Co%20%2F%20100%25%2B%3F%23%3D",
		},
		{
			"everything", bip21Address, 2_030_000_000, bip21Lightning, "Luke-Jr",
			"bitcoin:" + bip21Address + "?amount=20.3&label=Luke-Jr&lightning=" + strings.ToUpper(bip21Lightning),
		},
		{"lightning only", "", 0, bip21Lightning, "", "bitcoin:?lightning=" + strings.ToUpper(bip21Lightning)},
		{"hostile address escaped", "x?amount=100", 0, "", "", "bitcoin:x%3Famount%3D100"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kassa.BIP21(tt.address, tt.amount, tt.lightning, tt.label); got != tt.want {
				t.Fatalf("BIP21 = %s\nwant   %s", got, tt.want)
			}
		})
	}
}

func TestParseBIP21(t *testing.T) {
	const legacy = "175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W" // BIP21's examples
	tests := []struct {
		uri  string
		want kassa.BIP21URI
	}{
		{"bitcoin:" + legacy, kassa.BIP21URI{Address: legacy}},
		{"bitcoin:" + legacy + "?label=Luke-Jr", kassa.BIP21URI{Address: legacy, Label: "Luke-Jr"}},
		{
			"bitcoin:" + legacy + "?amount=20.3&label=Luke-Jr",
			kassa.BIP21URI{Address: legacy, Amount: 2_030_000_000, Label: "Luke-Jr"},
		},
		{
			"bitcoin:" + legacy + "?amount=50&label=Luke-Jr&message=Donation%20for%20project%20xyz",
			kassa.BIP21URI{Address: legacy, Amount: 5_000_000_000, Label: "Luke-Jr", Message: "Donation for project xyz"},
		},
		{
			"bitcoin:" + legacy + "?somethingyoudontunderstand=50&somethingelseyoudontget=999",
			kassa.BIP21URI{Address: legacy, Params: map[string]string{"somethingyoudontunderstand": "50", "somethingelseyoudontget": "999"}},
		},
		{
			"BITCOIN:" + strings.ToUpper(bip21Address) + "?AMOUNT=0.00012345&Lightning=" + strings.ToUpper(bip21Lightning),
			kassa.BIP21URI{Address: strings.ToUpper(bip21Address), Amount: 12_345, Lightning: bip21Lightning},
		},
		{"  bitcoin:?lightning=" + bip21Lightning + "\n", kassa.BIP21URI{Lightning: bip21Lightning}},
		{"bitcoin:" + legacy + "?amount=0.000000010000", kassa.BIP21URI{Address: legacy, Amount: 1}},
		{"bitcoin:" + legacy + "?amount=1.", kassa.BIP21URI{Address: legacy, Amount: 100_000_000}},
		{"bitcoin:" + legacy + "?amount=.5", kassa.BIP21URI{Address: legacy, Amount: 50_000_000}},
		{"bitcoin:" + legacy + "?amount=0", kassa.BIP21URI{Address: legacy}},
		{"bitcoin:" + legacy + "?amount=%31", kassa.BIP21URI{Address: legacy, Amount: 100_000_000}},
		{"bitcoin:" + legacy + "?amount=21000000", kassa.BIP21URI{Address: legacy, Amount: kassa.MaxSats}},
		{"bitcoin:" + legacy + "?amount=000000000000000000000001", kassa.BIP21URI{Address: legacy, Amount: 100_000_000}},
		{"bitcoin:" + legacy + "?label=a+b&&", kassa.BIP21URI{Address: legacy, Label: "a+b"}},
		{"bitcoin:" + legacy + "?pj", kassa.BIP21URI{Address: legacy, Params: map[string]string{"pj": ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got, err := kassa.ParseBIP21(tt.uri)
			if err != nil {
				t.Fatal(err)
			}
			if !sameBIP21(got, tt.want) {
				t.Fatalf("ParseBIP21 = %+v\nwant         %+v", got, tt.want)
			}
		})
	}
}

func TestParseBIP21Refuses(t *testing.T) {
	a := "bitcoin:" + bip21Address
	tests := []struct{ uri, says string }{
		{"", "not a bitcoin URI"},
		{"bitcoin", "not a bitcoin URI"},
		{"lightning:" + bip21Lightning, "not a bitcoin URI"},
		{"bitcoin:", "neither"},
		{"bitcoin:?amount=1", "neither"},
		{"bitcoin://" + bip21Address, "address"},
		{"bitcoin:" + bip21Address + "%20", "address"},
		{a + "?req-somethingyoudontunderstand=50", "requires req-somethingyoudontunderstand"},
		{a + "?amount=1e3", "decimal"},
		{a + "?amount=-1", "decimal"},
		{a + "?amount=+1", "decimal"},
		{a + "?amount=1,5", "decimal"},
		{a + "?amount=", "decimal"},
		{a + "?amount=.", "decimal"},
		{a + "?amount=1.2.3", "decimal"},
		{a + "?amount=0.000000001", "8 decimals"},
		{a + "?amount=21000000.00000001", "21 million"},
		{a + "?amount=99999999999999999999999999", "21 million"},
		{a + "?amount=1&AMOUNT=1", "twice"},
		{a + "?label=x&label=y", "twice"},
		{a + "?label=%zz", "percent-encoded"},
		{a + "?label=%", "percent-encoded"},
		{a + "?=x", "parameter name"},
		{a + "?la%62el=x", "parameter name"},
		{a + "?label=" + strings.Repeat("x", kassa.MaxBIP21Length), "longer"},
	}
	for _, tt := range tests {
		t.Run(tt.uri[:min(len(tt.uri), 60)], func(t *testing.T) {
			got, err := kassa.ParseBIP21(tt.uri)
			if err == nil {
				t.Fatalf("ParseBIP21 accepted it: %+v", got)
			}
			if kassa.ErrorCode(err) != kassa.Invalid || !strings.Contains(kassa.ErrorMessage(err), tt.says) {
				t.Fatalf("err = %v, want an invalid error that says %q", err, tt.says)
			}
			if !sameBIP21(got, kassa.BIP21URI{}) {
				t.Fatalf("refused URI returned values %+v", got)
			}
		})
	}
}

func TestBIP21RoundTrip(t *testing.T) {
	for _, amount := range []kassa.Sats{0, 1, 10, 12_345, 99_999_999, 100_000_000, 100_000_001, 2_099_999_999_999_999, kassa.MaxSats} {
		uri := kassa.BIP21(bip21Address, amount, bip21Lightning, "Order 42: 2×🍕 & ☕")
		got, err := kassa.ParseBIP21(uri)
		if err != nil {
			t.Fatalf("%s: %v", uri, err)
		}
		want := kassa.BIP21URI{Address: bip21Address, Amount: amount, Lightning: bip21Lightning, Label: "Order 42: 2×🍕 & ☕"}
		if !sameBIP21(got, want) {
			t.Fatalf("%s parsed to %+v", uri, got)
		}
	}
}

func sameBIP21(a, b kassa.BIP21URI) bool {
	return a.Address == b.Address && a.Amount == b.Amount && a.Label == b.Label &&
		a.Message == b.Message && a.Lightning == b.Lightning && maps.Equal(a.Params, b.Params)
}

// checkBIP21Reparse checks that what BIP21 makes of u's values parses back to
// the same values.
func checkBIP21Reparse(t *testing.T, u kassa.BIP21URI) {
	t.Helper()
	uri := kassa.BIP21(u.Address, u.Amount, u.Lightning, u.Label)
	back, err := kassa.ParseBIP21(uri)
	if err != nil {
		t.Fatalf("BIP21(%q, %d, %q, %q) = %q, which does not parse: %v", u.Address, u.Amount, u.Lightning, u.Label, uri, err)
	}
	want := kassa.BIP21URI{Address: u.Address, Amount: u.Amount, Lightning: u.Lightning, Label: u.Label}
	if !sameBIP21(back, want) {
		t.Fatalf("%q parsed to %+v, want %+v", uri, back, want)
	}
}

// FuzzParseBIP21 feeds ParseBIP21 arbitrary text: it must never panic,
// what it accepts must be within bounds, and BIP21 of the values it read
// must parse back to the same values.
func FuzzParseBIP21(f *testing.F) {
	for _, seed := range []string{
		"bitcoin:175tWpb8K1S7NmH4Zx6rewF9WQrcZv245W?amount=20.3&label=Luke-Jr",
		"BITCOIN:" + strings.ToUpper(bip21Address) + "?amount=0.00012345&lightning=" + strings.ToUpper(bip21Lightning),
		"bitcoin:?lightning=" + bip21Lightning,
		"bitcoin:" + bip21Address + "?label=a%20b+c&message=%E2%98%95&pj=https%3A%2F%2Fx",
		"bitcoin:" + bip21Address + "?amount=21000000.000000000&req-x=1",
		"bitcoin:" + bip21Address + "?amount=.1&amount=1",
		"bitcoin:x?lightning=a%26b%3Dc",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		u, err := kassa.ParseBIP21(uri)
		if err != nil {
			if kassa.ErrorCode(err) != kassa.Invalid {
				t.Fatalf("error %v is not coded invalid", err)
			}
			return
		}
		if u.Amount < 0 || u.Amount > kassa.MaxSats {
			t.Fatalf("amount %d out of range", u.Amount)
		}
		if u.Address == "" && u.Lightning == "" {
			t.Fatal("accepted a URI with neither address nor lightning")
		}
		checkBIP21Reparse(t, u)
	})
}

// FuzzBIP21 makes URIs of arbitrary values: every URI BIP21 makes of a
// valid address (letters and digits, or none with a Lightning invoice)
// and an amount within bounds parses back to the same values.
func FuzzBIP21(f *testing.F) {
	f.Add(bip21Address, int64(12_345), bip21Lightning, "Luke-Jr")
	f.Add("", int64(0), "LNBC1X", "")
	f.Add("abc", int64(kassa.MaxSats), "a&b=c d", "%zz+?#")
	f.Fuzz(func(t *testing.T, address string, amount int64, lightning, label string) {
		if amount < 0 || amount > int64(kassa.MaxSats) {
			return
		}
		for _, c := range []byte(address) {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
				return
			}
		}
		if address == "" && lightning == "" {
			return
		}
		u := kassa.BIP21URI{Address: address, Amount: kassa.Sats(amount), Lightning: lightning, Label: label}
		// The parser keeps bech32-like invoices in lower case.
		if lower := strings.ToLower(lightning); bip21TestAlnum(lightning) {
			u.Lightning = lower
		}
		checkBIP21Reparse(t, u)
	})
}

func bip21TestAlnum(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// BenchmarkBIP21 formats the URI of an invoice's unified QR code: an
// address, an amount and a Lightning invoice of typical length.
func BenchmarkBIP21(b *testing.B) {
	ln := strings.Repeat(bip21Lightning, 4)
	b.ReportAllocs()
	for b.Loop() {
		kassa.BIP21(bip21Address, 12_345, ln, "")
	}
}
