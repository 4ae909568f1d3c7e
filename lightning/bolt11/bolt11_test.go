package bolt11_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/kassapay/kassa/lightning/bolt11"
	"github.com/lightningnetwork/lnd/lnwire"
	"github.com/lightningnetwork/lnd/zpay32"
)

// The examples of BOLT #11 (lightning/bolts, 11-payment-encoding.md,
// CC-BY 4.0), all signed with specKey.
const (
	specKey   = "e126f68f7eafcc8b74f54d269fe206be715000f94dac067d1c04a8ca3b2db734"
	specPayee = "03e7156ae33b0a208d0744199163177e909e80176e55d97a2f221ede0f934dd9ad"
	specHash  = "0001020304050607080900010203040506070809000102030405060708090102"
	specStamp = 1496314658
	cakeHash  = "3925b6f67e2c340036ed12093dd44e0368df1b6ea26c53dbe4811f58fd5db8c1" // SHA-256 of the chocolate cake list
)

type specVector struct {
	name        string
	invoice     string
	net         *chaincfg.Params
	msat        uint64 // 0: none
	description string // "" with descHash set: hashed
	descHash    string
	expiry      time.Duration
	cltv        uint64
	hints       int
	features    []int
	reencodes   bool // its fields are in the order Encode writes them
}

var specValid = []specVector{
	{name: "donation", invoice: "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6twvus8g6rfwvs8qun0dfjkxaq8rkx3yf5tcsyz3d73gafnh3cax9rn449d9p5uxz9ezhhypd0elx87sjle52x86fux2ypatgddc6k63n7erqz25le42c4u4ecky03ylcqca784w",
		description: "Please consider supporting this project", expiry: time.Hour, cltv: 24, reencodes: true},
	{name: "coffee", invoice: "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpuaztrnwngzn3kdzw5hydlzf03qdgm2hdq27cqv3agm2awhz5se903vruatfhq77w3ls4evs3ch9zw97j25emudupq63nyw24cg27h2rspfj9srp",
		msat: 250_000_000, description: "1 cup coffee", expiry: time.Minute, cltv: 24, reencodes: true},
	{name: "nonsense", invoice: "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny",
		msat: 250_000_000, description: "ナンセンス 1杯", expiry: time.Minute, cltv: 24, reencodes: true},
	{name: "hashed", invoice: "lnbc20m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqscc6gd6ql3jrc5yzme8v4ntcewwz5cnw92tz0pc8qcuufvq7khhr8wpald05e92xw006sq94mg8v2ndf4sefvf9sygkshp5zfem29trqq2yxxz7",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24, reencodes: true},
	{name: "testnet fallback", net: &chaincfg.TestNet3Params, invoice: "lntb20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfpp3x9et2e20v6pu37c5d9vax37wxq72un98kmzzhznpurw9sgl2v0nklu2g4d0keph5t7tj9tcqd8rexnd07ux4uv2cjvcqwaxgj7v4uwn5wmypjd5n69z2xm3xgksg28nwht7f6zspwp3f9t",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24},
	{name: "fallback and route", invoice: "lnbc20m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqsfpp3qjmp7lwpagxun9pygexvgpjdc4jdj85fr9yq20q82gphp2nflc7jtzrcazrra7wwgzxqc8u7754cdlpfrmccae92qgzqvzq2ps8pqqqqqqpqqqqq9qqqvpeuqafqxu92d8lr6fvg0r5gv0heeeqgcrqlnm6jhphu9y00rrhy4grqszsvpcgpy9qqqqqqgqqqqq7qqzqj9n4evl6mr5aj9f58zp6fyjzup6ywn3x6sk8akg5v4tgn2q8g4fhx05wf6juaxu9760yp46454gpg5mtzgerlzezqcqvjnhjh8z3g2qqdhhwkj",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24, hints: 1},
	{name: "P2SH fallback", invoice: "lnbc20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfppj3a24vwu6r8ejrss3axul8rxldph2q7z9kmrgvr7xlaqm47apw3d48zm203kzcq357a4ls9al2ea73r8jcceyjtya6fu5wzzpe50zrge6ulk4nvjcpxlekvmxl6qcs9j3tz0469gq5g658y",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24},
	{name: "P2WPKH fallback", invoice: "lnbc20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfppqw508d6qejxtdg4y5r3zarvary0c5xw7kepvrhrm9s57hejg0p662ur5j5cr03890fa7k2pypgttmh4897d3raaq85a293e9jpuqwl0rnfuwzam7yr8e690nd2ypcq9hlkdwdvycqa0qza8",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24},
	{name: "P2WSH fallback", invoice: "lnbc20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfp4qrp33g0q5c5txsp9arysrx4k6zdkfs4nce4xj0gdcccefvpysxf3q28j0v3rwgy9pvjnd48ee2pl8xrpxysd5g44td63g6xcjcu003j3qe8878hluqlvl3km8rm92f5stamd3jw763n3hck0ct7p8wwj463cql26ava",
		msat: 2_000_000_000, descHash: cakeHash, expiry: time.Hour, cltv: 24},
	{name: "coffee beans with features", invoice: "lnbc25m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5vdhkven9v5sxyetpdeessp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs9q5sqqqqqqqqqqqqqqqpqsq67gye39hfg3zd8rgc80k32tvy9xk2xunwm5lzexnvpx6fd77en8qaq424dxgt56cag2dpt359k3ssyhetktkpqh24jqnjyw6uqd08sgptq44qu",
		msat: 2_500_000_000, description: "coffee beans", expiry: time.Hour, cltv: 24, features: []int{9, 15, 99}, reencodes: true},
	{name: "upper case", invoice: "LNBC25M1PVJLUEZPP5QQQSYQCYQ5RQWZQFQQQSYQCYQ5RQWZQFQQQSYQCYQ5RQWZQFQYPQDQ5VDHKVEN9V5SXYETPDEESSP5ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYG3ZYGS9Q5SQQQQQQQQQQQQQQQPQSQ67GYE39HFG3ZD8RGC80K32TVY9XK2XUNWM5LZEXNVPX6FD77EN8QAQ424DXGT56CAG2DPT359K3SSYHETKTKPQH24JQNJYW6UQD08SGPTQ44QU",
		msat: 2_500_000_000, description: "coffee beans", expiry: time.Hour, cltv: 24, features: []int{9, 15, 99}},
	{name: "fields to ignore", invoice: "lnbc25m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5vdhkven9v5sxyetpdeessp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs9q5sqqqqqqqqqqqqqqqpqsq2qrqqqfppnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqppnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqpp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhpnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqhp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqspnqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqsp4qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqnp5qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqnpkqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq2jxxfsnucm4jf4zwtznpaxphce606fvhvje5x7d4gw7n73994hgs7nteqvenq8a4ml8aqtchv5d9pf7l558889hp4yyrqv6a7zpq9fgpskqhza",
		msat: 2_500_000_000, description: "coffee beans", expiry: time.Hour, cltv: 24, features: []int{9, 15, 99}},
	// Not in the spec's order of checks but valid: an unknown even
	// feature is the payer's to refuse (lnd does), so it decodes.
	{name: "unknown feature 100", invoice: "lnbc25m1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5vdhkven9v5sxyetpdeessp5zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zyg3zygs9q4psqqqqqqqqqqqqqqqpqsqq40wa3khl49yue3zsgm26jrepqr2eghqlx86rttutve3ugd05em86nsefzh4pfurpd9ek9w2vp95zxqnfe2u7ckudyahsa52q66tgzcp6t2dyk",
		msat: 2_500_000_000, description: "coffee beans", expiry: time.Hour, cltv: 24, features: []int{9, 15, 99, 100}},
}

var specInvalid = map[string]string{
	"checksum":        "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrnt",
	"no 1":            "pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny",
	"mixed case":      "LNBC2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpquwpc4curk03c9wlrswe78q4eyqc7d8d0xqzpuyk0sg5g70me25alkluzd2x62aysf2pyy8edtjeevuv4p2d5p76r4zkmneet7uvyakky2zr4cusd45tftc9c5fh0nnqpnl2jfll544esqchsrny",
	"not recoverable": "lnbc2500u1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpuaxtrnwngzn3kdzw5hydlzf03qdgm2hdq27cqv3agm2awhz5se903vruatfhq77w3ls4evs3ch9zw97j25emudupq63nyw24cg27h2rspk28uwq",
	"too short":       "lnbc1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdpl2pkx2ctnv5sxxmmwwd5kgetjypeh2ursdae8g6na6hlh",
	"multiplier":      "lnbc2500x1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpujr6jxr9gq9pv6g46y7d20jfkegkg4gljz2ea2a3m9lmvvr95tq2s0kvu70u3axgelz3kyvtp2ywwt0y8hkx2869zq5dll9nelr83zzqqpgl2zg",
	"sub-msat":        "lnbc2500000001p1pvjluezpp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqdq5xysxxatsyp3k7enxv4jsxqzpu7hqtk93pkf7sw55rdv4k9z2vj050rxdr6za9ekfs3nlt5lr89jqpdmxsmlj9urqumg0h9wzpqecw7th56tdms40p2ny9q4ddvjsedzcplva53s",
	"other network":   "lntb20m1pvjluezhp58yjmdan79s6qqdhdzgynm4zwqd5d7xmw5fk98klysy043l2ahrqspp5qqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqqqsyqcyq5rqwzqfqypqfpp3x9et2e20v6pu37c5d9vax37wxq72un98kmzzhznpurw9sgl2v0nklu2g4d0keph5t7tj9tcqd8rexnd07ux4uv2cjvcqwaxgj7v4uwn5wmypjd5n69z2xm3xgksg28nwht7f6zspwp3f9t",
}

func key(t testing.TB, h string) *btcec.PrivateKey {
	t.Helper()
	b, err := hex.DecodeString(h)
	if err != nil {
		t.Fatal(err)
	}
	k, _ := btcec.PrivKeyFromBytes(b)
	return k
}

func TestSpecVectors(t *testing.T) {
	priv := key(t, specKey)
	for _, v := range specValid {
		t.Run(v.name, func(t *testing.T) {
			net := v.net
			if net == nil {
				net = &chaincfg.MainNetParams
			}
			inv, err := bolt11.Decode(v.invoice, net)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if got := hex.EncodeToString(inv.Destination.SerializeCompressed()); got != specPayee {
				t.Errorf("payee %s, want %s", got, specPayee)
			}
			if v.name != "coffee beans with features" && v.name != "upper case" && v.name != "fields to ignore" && v.name != "unknown feature 100" {
				if got := hex.EncodeToString(inv.PaymentHash[:]); got != specHash {
					t.Errorf("payment hash %s", got)
				}
			}
			if !inv.Timestamp.Equal(time.Unix(specStamp, 0)) {
				t.Errorf("timestamp %v", inv.Timestamp)
			}
			switch {
			case v.msat == 0 && inv.MilliSat != nil:
				t.Errorf("amount %d, want none", *inv.MilliSat)
			case v.msat != 0 && (inv.MilliSat == nil || *inv.MilliSat != v.msat):
				t.Errorf("amount %v, want %d", inv.MilliSat, v.msat)
			}
			if v.descHash != "" {
				if inv.DescriptionHash == nil || hex.EncodeToString(inv.DescriptionHash[:]) != v.descHash || inv.Description != nil {
					t.Errorf("description hash %x, description %v", inv.DescriptionHash, inv.Description)
				}
			} else if inv.Description == nil || *inv.Description != v.description {
				t.Errorf("description %v, want %q", inv.Description, v.description)
			}
			if inv.Expiry() != v.expiry || inv.MinFinalCLTVExpiry() != v.cltv {
				t.Errorf("expiry %s, final CLTV delta %d", inv.Expiry(), inv.MinFinalCLTVExpiry())
			}
			if len(inv.RouteHints) != v.hints {
				t.Errorf("%d route hints, want %d", len(inv.RouteHints), v.hints)
			}
			if !slices.Equal(inv.Features, v.features) && (len(inv.Features) != 0 || len(v.features) != 0) {
				t.Errorf("features %v, want %v", inv.Features, v.features)
			}
			if v.reencodes {
				inv.Destination = nil // recovered, not an n field
				got, err := inv.Encode(priv)
				if err != nil || got != v.invoice {
					t.Errorf("encode: %v\n got %s\nwant %s", err, got, v.invoice)
				}
			}
		})
	}
}

// TestSpecRouteHint checks the spec's two-hop route hint field by field.
func TestSpecRouteHint(t *testing.T) {
	inv, err := bolt11.Decode(specValid[5].invoice, &chaincfg.MainNetParams)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		node   string
		chanID uint64
		base   uint32
		prop   uint32
		cltv   uint16
	}{
		{"029e03a901b85534ff1e92c43c74431f7ce72046060fcf7a95c37e148f78c77255", 0x0102030405060708, 1, 20, 3},
		{"039e03a901b85534ff1e92c43c74431f7ce72046060fcf7a95c37e148f78c77255", 0x030405060708090a, 2, 30, 4},
	}
	if len(inv.RouteHints) != 1 || len(inv.RouteHints[0]) != len(want) {
		t.Fatalf("route hints %v", inv.RouteHints)
	}
	for i, w := range want {
		h := inv.RouteHints[0][i]
		if hex.EncodeToString(h.NodeID.SerializeCompressed()) != w.node || h.ChannelID != w.chanID ||
			h.FeeBaseMSat != w.base || h.FeeProportionalMillionths != w.prop || h.CLTVExpiryDelta != w.cltv {
			t.Errorf("hop %d: %+v", i, h)
		}
	}
}

func TestSpecInvalid(t *testing.T) {
	for name, invoice := range specInvalid {
		if inv, err := bolt11.Decode(invoice, &chaincfg.MainNetParams); err == nil {
			t.Errorf("%s: decoded %+v", name, inv)
		}
	}
}

// TestAmountBounds: an amount that would wrap a uint64 (zpay32 lets it)
// or exceed the bitcoin supply is refused; the largest is kept.
func TestAmountBounds(t *testing.T) {
	priv := key(t, specKey)
	hash := [32]byte{1}
	desc := "x"
	for _, msat := range []uint64{1, 10, 999, 1_000_000_000, bolt11.MaxMSat, bolt11.MaxMSat - 1} {
		inv := &bolt11.Invoice{Net: &chaincfg.MainNetParams, MilliSat: &msat, Timestamp: time.Unix(specStamp, 0), PaymentHash: &hash, Description: &desc}
		s, err := inv.Encode(priv)
		if msat == bolt11.MaxMSat-1 {
			if err == nil {
				t.Errorf("encoded %d msat, which has no pico-bitcoin amount in a uint64: %s", msat, s)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d msat: %v", msat, err)
		}
		back, err := bolt11.Decode(s, &chaincfg.MainNetParams)
		if err != nil || *back.MilliSat != msat {
			t.Errorf("%d msat: decoded %v, %v", msat, back, err)
		}
	}
	for _, amount := range []string{"21000001", "184467440738m", "184467440737096u", "21000000000001u", "21000000001m"} {
		s := sign(t, priv, "lnbc"+amount, body(t, hash, desc))
		if inv, err := bolt11.Decode(s, &chaincfg.MainNetParams); err == nil {
			t.Errorf("amount %s decoded as %d msat", amount, *inv.MilliSat)
		}
	}
}

// body is a timestamp, payment hash and description as 5-bit groups.
func body(t testing.TB, hash [32]byte, desc string) []byte {
	groups := []byte{0, 0, 0, 0, 0, 0, 1}
	conv := func(b []byte) []byte {
		g, err := bech32.ConvertBits(b, 8, 5, true)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	h, d := conv(hash[:]), conv([]byte(desc))
	groups = append(groups, 1, byte(len(h)>>5), byte(len(h)&31))
	groups = append(groups, h...)
	groups = append(groups, 13, byte(len(d)>>5), byte(len(d)&31))
	return append(groups, d...)
}

// sign signs hrp and the 5-bit body as BOLT11 does and encodes them.
func sign(t testing.TB, priv *btcec.PrivateKey, hrp string, groups []byte) string {
	t.Helper()
	b, err := bech32.ConvertBits(groups, 5, 8, true)
	if err != nil {
		t.Fatal(err)
	}
	c := ecdsa.SignCompact(priv, chainhash.HashB(append([]byte(hrp), b...)), true)
	sig, err := bech32.ConvertBits(append(c[1:], c[0]-31), 8, 5, true)
	if err != nil {
		t.Fatal(err)
	}
	s, err := bech32.Encode(hrp, append(groups, sig...))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

var nets = []*chaincfg.Params{&chaincfg.MainNetParams, &chaincfg.TestNet3Params, &chaincfg.SigNetParams, &chaincfg.RegressionNetParams, &chaincfg.SimNetParams}

// randomInvoice makes an invoice with a random choice of the fields
// Kassa reads and writes, as zpay32 options and as a bolt11.Invoice.
func randomInvoice(r *rand.Rand, priv *btcec.PrivateKey) (*zpay32.Invoice, *bolt11.Invoice) {
	net := nets[r.IntN(len(nets))]
	var hash [32]byte
	for i := range hash {
		hash[i] = byte(r.Uint32())
	}
	stamp := time.Unix(r.Int64N(1<<35), 0)
	var opts []func(*zpay32.Invoice)
	ours := &bolt11.Invoice{Net: net, Timestamp: stamp, PaymentHash: &hash}
	if r.IntN(4) > 0 {
		var msat uint64
		switch r.IntN(4) {
		case 0:
			msat = r.Uint64N(1000) + 1
		case 1:
			msat = (r.Uint64N(1000) + 1) * 1000
		case 2:
			msat = r.Uint64N(bolt11.MaxMSat/100) * 100
		default:
			msat = (r.Uint64N(21_000_000) + 1) * 100_000_000_000
		}
		opts = append(opts, zpay32.Amount(lnwire.MilliSatoshi(msat)))
		ours.MilliSat = &msat
	}
	if r.IntN(2) == 0 {
		d := strings.Repeat("Kassa ☕ ", r.IntN(60))
		opts = append(opts, zpay32.Description(d))
		ours.Description = &d
	} else {
		h := sha256.Sum256([]byte{byte(r.Uint32())})
		opts = append(opts, zpay32.DescriptionHash(h))
		ours.DescriptionHash = &h
	}
	if r.IntN(2) == 0 {
		e := time.Duration(r.Int64N(1<<32)) * time.Second
		opts = append(opts, zpay32.Expiry(e))
		ours.ExpiryTime = &e
	}
	if r.IntN(2) == 0 {
		c := r.Uint64N(1 << 20)
		opts = append(opts, zpay32.CLTVExpiry(c))
		ours.FinalCLTV = &c
	}
	if r.IntN(2) == 0 {
		var addr [32]byte
		for i := range addr {
			addr[i] = byte(r.Uint32())
		}
		opts = append(opts, zpay32.PaymentAddr(addr))
		ours.PaymentAddr = &addr
	}
	if r.IntN(3) == 0 {
		opts = append(opts, zpay32.Destination(priv.PubKey()))
		ours.Destination = priv.PubKey()
	}
	for range r.IntN(3) {
		var theirs []zpay32.HopHint
		var hint []bolt11.HopHint
		for range r.IntN(3) + 1 {
			k, _ := btcec.NewPrivateKey()
			h := bolt11.HopHint{NodeID: k.PubKey(), ChannelID: r.Uint64(), FeeBaseMSat: r.Uint32(), FeeProportionalMillionths: r.Uint32(), CLTVExpiryDelta: uint16(r.Uint32())}
			hint = append(hint, h)
			theirs = append(theirs, zpay32.HopHint{NodeID: h.NodeID, ChannelID: h.ChannelID, FeeBaseMSat: h.FeeBaseMSat, FeeProportionalMillionths: h.FeeProportionalMillionths, CLTVExpiryDelta: h.CLTVExpiryDelta})
		}
		opts = append(opts, zpay32.RouteHint(theirs))
		ours.RouteHints = append(ours.RouteHints, hint)
	}
	if r.IntN(2) == 0 {
		raw := lnwire.NewRawFeatureVector()
		for _, bit := range []int{8, 14, 17, 25, 48, 99, 100, 255} {
			if r.IntN(2) == 0 {
				raw.Set(lnwire.FeatureBit(bit))
				ours.Features = append(ours.Features, bit)
			}
		}
		opts = append(opts, zpay32.Features(lnwire.NewFeatureVector(raw, lnwire.Features)))
	}
	theirs, err := zpay32.NewInvoice(net, hash, stamp, opts...)
	if err != nil {
		panic(err)
	}
	return theirs, ours
}

// TestEncodeLikeZpay32: what zpay32 encodes, Encode encodes byte for
// byte, and each decodes the other's invoice alike.
func TestEncodeLikeZpay32(t *testing.T) {
	priv := key(t, specKey)
	signer := zpay32.MessageSigner{SignCompact: func(msg []byte) ([]byte, error) {
		return ecdsa.SignCompact(priv, chainhash.HashB(msg), true), nil
	}}
	r := rand.New(rand.NewPCG(21, 11))
	n := 200
	if testing.Short() {
		n = 50
	}
	for i := range n {
		theirs, ours := randomInvoice(r, priv)
		want, err := theirs.Encode(signer)
		if err != nil {
			t.Fatalf("%d: zpay32: %v", i, err)
		}
		got, err := ours.Encode(priv)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		if got != want {
			t.Fatalf("%d: encoded\n %s\nzpay32 encoded\n %s", i, got, want)
		}
		sameDecode(t, want, ours.Net)
	}
}

// sameDecode decodes s with both and compares what Kassa reads.
func sameDecode(t *testing.T, s string, net *chaincfg.Params) {
	t.Helper()
	theirs, errTheirs := zpay32.Decode(s, net)
	ours, errOurs := bolt11.Decode(s, net)
	if errOurs != nil {
		// Stricter than zpay32 only where it lets a number wrap.
		if errTheirs == nil && !strings.Contains(errOurs.Error(), "out of range") && !strings.Contains(errOurs.Error(), "21 million") {
			t.Fatalf("%s: refused (%v), zpay32 decodes it", s, errOurs)
		}
		return
	}
	if errTheirs != nil {
		// Laxer only on the fields it skips unread.
		if !hasSkippedField(s) {
			t.Fatalf("%s: decoded, zpay32 refuses it (%v)", s, errTheirs)
		}
		return
	}
	diff := func(what string, a, b any) { t.Fatalf("%s: %s %v, zpay32 %v", s, what, a, b) }
	if (ours.MilliSat == nil) != (theirs.MilliSat == nil) || ours.MilliSat != nil && *ours.MilliSat != uint64(*theirs.MilliSat) {
		diff("amount", ours.MilliSat, theirs.MilliSat)
	}
	if !ours.Timestamp.Equal(theirs.Timestamp) {
		diff("timestamp", ours.Timestamp, theirs.Timestamp)
	}
	if *ours.PaymentHash != *theirs.PaymentHash {
		diff("payment hash", ours.PaymentHash, theirs.PaymentHash)
	}
	if (ours.PaymentAddr != nil) != theirs.PaymentAddr.IsSome() || ours.PaymentAddr != nil && *ours.PaymentAddr != theirs.PaymentAddr.UnwrapOr([32]byte{}) {
		diff("payment secret", ours.PaymentAddr, theirs.PaymentAddr)
	}
	if (ours.Description == nil) != (theirs.Description == nil) || ours.Description != nil && *ours.Description != *theirs.Description {
		diff("description", ours.Description, theirs.Description)
	}
	if (ours.DescriptionHash == nil) != (theirs.DescriptionHash == nil) || ours.DescriptionHash != nil && *ours.DescriptionHash != *theirs.DescriptionHash {
		diff("description hash", ours.DescriptionHash, theirs.DescriptionHash)
	}
	if !ours.Destination.IsEqual(theirs.Destination) {
		diff("payee", ours.Destination, theirs.Destination)
	}
	if ours.Expiry() != theirs.Expiry() || ours.MinFinalCLTVExpiry() != theirs.MinFinalCLTVExpiry() {
		diff("expiry and CLTV", []any{ours.Expiry(), ours.MinFinalCLTVExpiry()}, []any{theirs.Expiry(), theirs.MinFinalCLTVExpiry()})
	}
	if len(ours.RouteHints) != len(theirs.RouteHints) {
		diff("route hints", ours.RouteHints, theirs.RouteHints)
	}
	for i, hint := range ours.RouteHints {
		if len(hint) != len(theirs.RouteHints[i]) {
			diff("route hint", hint, theirs.RouteHints[i])
		}
		for j, h := range hint {
			o := theirs.RouteHints[i][j]
			if !h.NodeID.IsEqual(o.NodeID) || h.ChannelID != o.ChannelID || h.FeeBaseMSat != o.FeeBaseMSat ||
				h.FeeProportionalMillionths != o.FeeProportionalMillionths || h.CLTVExpiryDelta != o.CLTVExpiryDelta {
				diff("hop hint", h, o)
			}
		}
	}
	var bits []int
	for b := range theirs.Features.Features() {
		bits = append(bits, int(b))
	}
	slices.Sort(bits)
	if !slices.Equal(ours.Features, bits) && (len(ours.Features) != 0 || len(bits) != 0) {
		diff("features", ours.Features, bits)
	}
}

// hasSkippedField says whether s has a fallback address, blinded path or
// metadata field, which Decode skips unread and zpay32 checks.
func hasSkippedField(s string) bool {
	_, data, err := bech32.DecodeNoLimit(s)
	if err != nil || len(data) < 111 {
		return false
	}
	fields := data[7 : len(data)-104]
	for len(fields) >= 3 {
		switch fields[0] {
		case 9, 20, 27:
			return true
		}
		fields = fields[min(len(fields), 3+int(fields[1])<<5|int(fields[2])):]
	}
	return false
}

// TestDecodeLikeZpay32 decodes the spec's examples and damaged invoices
// (5-bit groups changed, dropped or added, with a valid checksum, so that
// the decoders get past bech32) with both decoders.
func TestDecodeLikeZpay32(t *testing.T) {
	priv := key(t, specKey)
	r := rand.New(rand.NewPCG(11, 21))
	var seeds []string
	for _, v := range specValid {
		seeds = append(seeds, strings.ToLower(v.invoice))
	}
	for range 40 {
		_, ours := randomInvoice(r, priv)
		s, err := ours.Encode(priv)
		if err != nil {
			t.Fatal(err)
		}
		seeds = append(seeds, s)
	}
	n := 1000
	if testing.Short() {
		n = 200
	}
	for i := range n {
		s := seeds[i%len(seeds)]
		for _, net := range nets {
			sameDecode(t, s, net)
		}
		hrp, data, err := bech32.DecodeNoLimit(s)
		if err != nil {
			t.Fatal(err)
		}
		data = bytes.Clone(data)
		switch r.IntN(4) {
		case 0: // change a group of the body
			data[r.IntN(len(data))] = byte(r.IntN(32))
		case 1: // drop a group
			j := r.IntN(len(data))
			data = append(data[:j], data[j+1:]...)
		case 2: // add a group
			j := r.IntN(len(data))
			data = slices.Insert(data, j, byte(r.IntN(32)))
		default: // change the amount
			hrp = strings.TrimRight(hrp, "0123456789munp") + []string{"", "1", "10p", "25m", "9u", "2500000001p", "0", "184467440738m"}[r.IntN(8)]
		}
		damaged, err := bech32.Encode(hrp, data)
		if err != nil {
			continue
		}
		for _, net := range nets {
			sameDecode(t, damaged, net)
		}
	}
}

// FuzzDecode compares the two decoders on any string.
func FuzzDecode(f *testing.F) {
	for _, v := range specValid {
		f.Add(v.invoice)
	}
	for _, s := range specInvalid {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, net := range nets {
			sameDecode(t, s, net)
		}
	})
}
