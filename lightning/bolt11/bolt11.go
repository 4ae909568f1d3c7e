// Package bolt11 decodes and encodes BOLT11 Lightning invoices, the part
// of the format Kassa uses: amount, payment hash and secret, description
// or its hash, expiry, final CLTV delta, payee (the n field or the key
// recovered from the signature), route hints and feature bits. Fallback
// addresses, metadata and blinded paths are skipped unread, like unknown
// fields (zpay32 refuses some malformed ones; lnd, which pays, still does).
//
// It follows lnd's zpay32 (v0.21), which its tests use as an oracle: an
// invoice zpay32 encodes is encoded here byte for byte, and what one
// decodes the other decodes alike. It is stricter in two places, where
// zpay32 lets a number wrap: an amount above 21 million bitcoin and an
// expiry beyond time.Duration are refused.
package bolt11

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/ecdsa"
	"github.com/btcsuite/btcd/btcutil/bech32"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
)

const (
	// DefaultExpiry applies when an invoice has no x field.
	DefaultExpiry = time.Hour
	// DefaultFinalCLTVDelta applies when an invoice has no c field (lnd's
	// choice; BOLT11 asks for at least 18).
	DefaultFinalCLTVDelta = 24
	// MaxMSat is 21 million bitcoin in millisatoshi.
	MaxMSat = 21_000_000 * mSatPerBTC

	mSatPerBTC   = 100_000_000_000
	maxLength    = 7089 // zpay32's limit, against decoding cost
	sigGroups    = 104  // 520 bits: 64-byte signature and recovery id
	stampGroups  = 7    // 35-bit timestamp
	hopHintBytes = 51
)

// Field types (5-bit values).
const (
	fieldP    = 1  // payment hash
	fieldR    = 3  // route hint
	fieldFeat = 5  // feature bits ("9")
	fieldX    = 6  // expiry
	fieldD    = 13 // description
	fieldS    = 16 // payment secret
	fieldN    = 19 // payee key
	fieldH    = 23 // description hash
	fieldC    = 24 // final CLTV delta
)

// Invoice is a decoded BOLT11 invoice, or one to encode. A nil pointer
// field is absent.
type Invoice struct {
	Net *chaincfg.Params
	// MilliSat is the amount; nil lets the payer choose.
	MilliSat    *uint64
	Timestamp   time.Time
	PaymentHash *[32]byte
	PaymentAddr *[32]byte // the payment secret (s)
	// Exactly one of Description and DescriptionHash is set.
	Description     *string
	DescriptionHash *[32]byte
	// Destination is the payee. Decode fills it from the n field or the
	// signature; Encode writes an n field only when it is set.
	Destination *btcec.PublicKey
	// ExpiryTime and FinalCLTV are the x and c fields; see Expiry and
	// MinFinalCLTVExpiry for their defaults.
	ExpiryTime *time.Duration
	FinalCLTV  *uint64
	RouteHints [][]HopHint
	// Features holds the numbers of the feature bits set, ascending.
	Features []int
}

// HopHint is one channel of a route hint.
type HopHint struct {
	NodeID                    *btcec.PublicKey
	ChannelID                 uint64
	FeeBaseMSat               uint32
	FeeProportionalMillionths uint32
	CLTVExpiryDelta           uint16
}

// Expiry returns how long after Timestamp the invoice expires.
func (inv *Invoice) Expiry() time.Duration {
	if inv.ExpiryTime != nil {
		return *inv.ExpiryTime
	}
	return DefaultExpiry
}

// MinFinalCLTVExpiry returns the final hop's CLTV delta.
func (inv *Invoice) MinFinalCLTVExpiry() uint64 {
	if inv.FinalCLTV != nil {
		return *inv.FinalCLTV
	}
	return DefaultFinalCLTVDelta
}

// HasFeature says whether feature bit is set.
func (inv *Invoice) HasFeature(bit int) bool { return slices.Contains(inv.Features, bit) }

// prefix is the human-readable prefix of net's invoices (lntbs for
// signet, which shares testnet's bech32 prefix).
func prefix(net *chaincfg.Params) string {
	if net.Name == chaincfg.SigNetParams.Name {
		return "lntbs"
	}
	return "ln" + net.Bech32HRPSegwit
}

// Decode parses invoice, checks its signature and that it is for net.
func Decode(invoice string, net *chaincfg.Params) (*Invoice, error) {
	if len(invoice) > maxLength {
		return nil, errors.New("invoice is too large")
	}
	hrp, data, version, err := bech32.DecodeNoLimitWithVersion(invoice)
	if err != nil {
		return nil, err
	}
	if version != bech32.Version0 {
		return nil, errors.New("invoice checksum is not bech32")
	}
	if len(hrp) < 3 || hrp[:2] != "ln" {
		return nil, errors.New("not a Lightning invoice (prefix ln)")
	}
	want := prefix(net)
	if !strings.HasPrefix(hrp, want) {
		return nil, fmt.Errorf("invoice not for current active network '%s'", net.Name)
	}
	inv := &Invoice{Net: net}
	if amount := hrp[len(want):]; amount != "" {
		msat, err := decodeAmount(amount)
		if err != nil {
			return nil, err
		}
		inv.MilliSat = &msat
	}
	if len(data) < sigGroups+stampGroups {
		return nil, errors.New("short invoice")
	}
	body, sig5 := data[:len(data)-sigGroups], data[len(data)-sigGroups:]
	inv.Timestamp = time.Unix(int64(toUint(body[:stampGroups])), 0)
	if err := inv.parseFields(body[stampGroups:]); err != nil {
		return nil, err
	}

	sig, err := bech32.ConvertBits(sig5, 5, 8, true)
	if err != nil {
		return nil, err
	}
	hash, err := sigHash(hrp, body)
	if err != nil {
		return nil, err
	}
	if inv.Destination != nil {
		var r, s btcec.ModNScalar
		if r.SetByteSlice(sig[:32]) || r.IsZero() || s.SetByteSlice(sig[32:64]) || s.IsZero() {
			return nil, errors.New("invalid invoice signature")
		}
		if !ecdsa.NewSignature(&r, &s).Verify(hash, inv.Destination) {
			return nil, errors.New("invalid invoice signature")
		}
	} else {
		compact := append([]byte{sig[64] + 27 + 4}, sig[:64]...)
		key, _, err := ecdsa.RecoverCompact(compact, hash)
		if err != nil {
			return nil, err
		}
		inv.Destination = key
	}
	if err := inv.validate(); err != nil {
		return nil, err
	}
	return inv, nil
}

// parseFields reads the tagged fields. The first field of a type wins
// (route hints add up); p, h, s and n fields of the wrong length are
// skipped, as BOLT11 asks.
func (inv *Invoice) parseFields(fields []byte) error {
	for len(fields) > 0 {
		if len(fields) < 3 {
			return errors.New("last tagged field is broken")
		}
		typ, n := fields[0], int(fields[1])<<5|int(fields[2])
		if len(fields) < 3+n {
			return errors.New("invalid field length")
		}
		data := fields[3 : 3+n]
		fields = fields[3+n:]
		var err error
		switch typ {
		case fieldP:
			if inv.PaymentHash == nil {
				inv.PaymentHash, err = bytes32(data)
			}
		case fieldS:
			if inv.PaymentAddr == nil {
				inv.PaymentAddr, err = bytes32(data)
			}
		case fieldH:
			if inv.DescriptionHash == nil {
				inv.DescriptionHash, err = bytes32(data)
			}
		case fieldD:
			if inv.Description == nil {
				var b []byte
				if b, err = bech32.ConvertBits(data, 5, 8, false); err == nil {
					if !utf8.Valid(b) {
						return errors.New("description is not valid UTF-8")
					}
					d := string(b)
					inv.Description = &d
				}
			}
		case fieldN:
			if inv.Destination == nil && len(data) == 53 {
				var b []byte
				if b, err = bech32.ConvertBits(data, 5, 8, false); err == nil {
					inv.Destination, err = btcec.ParsePubKey(b)
				}
			}
		case fieldX:
			if inv.ExpiryTime == nil {
				if len(data) > 13 || toUint(data) > math.MaxInt64/uint64(time.Second) {
					return errors.New("expiry out of range")
				}
				d := time.Duration(toUint(data)) * time.Second
				inv.ExpiryTime = &d
			}
		case fieldC:
			if inv.FinalCLTV == nil {
				if len(data) > 13 {
					return errors.New("final CLTV delta out of range")
				}
				c := toUint(data)
				inv.FinalCLTV = &c
			}
		case fieldR:
			var hint []HopHint
			if hint, err = parseRouteHint(data); err == nil {
				inv.RouteHints = append(inv.RouteHints, hint)
			}
		case fieldFeat:
			if inv.Features == nil {
				inv.Features = []int{}
				for i := range len(data) * 5 {
					if data[len(data)-1-i/5]>>(i%5)&1 == 1 {
						inv.Features = append(inv.Features, i)
					}
				}
			}
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func parseRouteHint(data []byte) ([]HopHint, error) {
	b, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil {
		return nil, err
	}
	if len(b) == 0 || len(b)%hopHintBytes != 0 {
		return nil, errors.New("route hint is not a whole number of hops")
	}
	var hint []HopHint
	for ; len(b) > 0; b = b[hopHintBytes:] {
		key, err := btcec.ParsePubKey(b[:33])
		if err != nil {
			return nil, err
		}
		hint = append(hint, HopHint{
			NodeID:                    key,
			ChannelID:                 binary.BigEndian.Uint64(b[33:41]),
			FeeBaseMSat:               binary.BigEndian.Uint32(b[41:45]),
			FeeProportionalMillionths: binary.BigEndian.Uint32(b[45:49]),
			CLTVExpiryDelta:           binary.BigEndian.Uint16(b[49:51]),
		})
	}
	return hint, nil
}

// bytes32 reads a 256-bit field; one of another length is skipped (nil).
func bytes32(data []byte) (*[32]byte, error) {
	if len(data) != 52 {
		return nil, nil
	}
	b, err := bech32.ConvertBits(data, 5, 8, false)
	if err != nil {
		return nil, err
	}
	return (*[32]byte)(b), nil
}

func (inv *Invoice) validate() error {
	switch {
	case inv.Net == nil:
		return errors.New("net params not set")
	case inv.PaymentHash == nil:
		return errors.New("no payment hash found")
	case inv.Description != nil && inv.DescriptionHash != nil:
		return errors.New("both description and description hash set")
	case inv.Description == nil && inv.DescriptionHash == nil:
		return errors.New("neither description nor description hash set")
	case inv.MilliSat != nil && *inv.MilliSat > MaxMSat:
		return errors.New("amount exceeds 21 million bitcoin")
	}
	return nil
}

// Encode signs the invoice with key and returns it. Its fields are
// written in zpay32's order, so that both encode an invoice alike.
func (inv *Invoice) Encode(key *btcec.PrivateKey) (string, error) {
	if err := inv.validate(); err != nil {
		return "", err
	}
	if inv.Destination != nil && !inv.Destination.IsEqual(key.PubKey()) {
		return "", errors.New("signature does not match provided pubkey")
	}
	stamp := inv.Timestamp.Unix()
	if stamp < 0 || stamp >= 1<<35 {
		return "", fmt.Errorf("timestamp out of range: %d", stamp)
	}
	var w writer
	w.buf = append(w.buf, make([]byte, stampGroups-len(fromUint(uint64(stamp))))...)
	w.buf = append(w.buf, fromUint(uint64(stamp))...)
	w.bytes(fieldP, inv.PaymentHash[:])
	if inv.Description != nil {
		w.bytes(fieldD, []byte(*inv.Description))
	}
	if inv.DescriptionHash != nil {
		w.bytes(fieldH, inv.DescriptionHash[:])
	}
	if inv.FinalCLTV != nil {
		w.field(fieldC, fromUint(*inv.FinalCLTV))
	}
	if inv.ExpiryTime != nil {
		w.field(fieldX, fromUint(uint64(inv.ExpiryTime.Seconds())))
	}
	for _, hint := range inv.RouteHints {
		var b []byte
		for _, h := range hint {
			b = append(b, h.NodeID.SerializeCompressed()...)
			b = binary.BigEndian.AppendUint64(b, h.ChannelID)
			b = binary.BigEndian.AppendUint32(b, h.FeeBaseMSat)
			b = binary.BigEndian.AppendUint32(b, h.FeeProportionalMillionths)
			b = binary.BigEndian.AppendUint16(b, h.CLTVExpiryDelta)
		}
		w.bytes(fieldR, b)
	}
	if inv.Destination != nil {
		w.bytes(fieldN, inv.Destination.SerializeCompressed())
	}
	if inv.PaymentAddr != nil {
		w.bytes(fieldS, inv.PaymentAddr[:])
	}
	if len(inv.Features) > 0 {
		top := slices.Max(inv.Features)
		groups := make([]byte, top/5+1)
		for _, bit := range inv.Features {
			if bit < 0 {
				return "", fmt.Errorf("feature bit %d", bit)
			}
			groups[len(groups)-1-bit/5] |= 1 << (bit % 5)
		}
		w.field(fieldFeat, groups)
	}
	if w.err != nil {
		return "", w.err
	}

	hrp := prefix(inv.Net)
	if inv.MilliSat != nil {
		if *inv.MilliSat%100 != 0 && *inv.MilliSat > math.MaxUint64/10 {
			return "", fmt.Errorf("%d msat has no pico-bitcoin amount", *inv.MilliSat)
		}
		hrp += encodeAmount(*inv.MilliSat)
	}
	hash, err := sigHash(hrp, w.buf)
	if err != nil {
		return "", err
	}
	compact := ecdsa.SignCompact(key, hash, true)
	sig, err := bech32.ConvertBits(append(compact[1:], compact[0]-27-4), 8, 5, true)
	if err != nil {
		return "", err
	}
	s, err := bech32.Encode(hrp, append(w.buf, sig...))
	if err != nil {
		return "", err
	}
	if len(s) > maxLength {
		return "", errors.New("invoice is too large")
	}
	return s, nil
}

// writer appends tagged fields as 5-bit groups.
type writer struct {
	buf []byte
	err error
}

func (w *writer) field(typ byte, groups []byte) {
	if len(groups) > 1023 {
		w.err = fmt.Errorf("data length too big to fit within 10 bits: %d", len(groups))
		return
	}
	w.buf = append(w.buf, typ, byte(len(groups)>>5), byte(len(groups)&31))
	w.buf = append(w.buf, groups...)
}

func (w *writer) bytes(typ byte, b []byte) {
	groups, err := bech32.ConvertBits(b, 8, 5, true)
	if err != nil {
		w.err = err
		return
	}
	w.field(typ, groups)
}

// sigHash is the SHA-256 the signature covers: the human-readable part
// and the data before the signature, padded to whole bytes.
func sigHash(hrp string, body []byte) ([]byte, error) {
	b, err := bech32.ConvertBits(body, 5, 8, true)
	if err != nil {
		return nil, err
	}
	return chainhash.HashB(append([]byte(hrp), b...)), nil
}

// toUint reads big-endian 5-bit groups (at most 13 fit in a uint64).
func toUint(groups []byte) uint64 {
	var v uint64
	for _, g := range groups {
		v = v<<5 | uint64(g)
	}
	return v
}

// fromUint writes v in as few 5-bit groups as it takes (at least one).
func fromUint(v uint64) []byte {
	out := []byte{byte(v & 31)}
	for v >>= 5; v > 0; v >>= 5 {
		out = append([]byte{byte(v & 31)}, out...)
	}
	return out
}

// units are the amount multipliers but pico (ten pico-bitcoin make a
// millisatoshi), largest first, with their millisatoshi.
var units = []struct {
	suffix byte
	msat   uint64
}{{'m', 100_000_000}, {'u', 100_000}, {'n', 100}}

func decodeAmount(s string) (uint64, error) {
	last := s[len(s)-1]
	if last >= '0' && last <= '9' {
		btc, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return 0, err
		}
		if btc > MaxMSat/mSatPerBTC {
			return 0, errors.New("amount exceeds 21 million bitcoin")
		}
		return btc * mSatPerBTC, nil
	}
	if len(s) < 2 {
		return 0, errors.New("number must be non-empty")
	}
	n, err := strconv.ParseUint(s[:len(s)-1], 10, 64)
	if err != nil {
		return 0, err
	}
	if last == 'p' {
		if n < 10 {
			return 0, errors.New("minimum amount is 10p")
		}
		if n%10 != 0 {
			return 0, fmt.Errorf("amount %d pBTC not expressible in msat", n)
		}
		return n / 10, nil
	}
	for _, u := range units {
		if u.suffix == last {
			if n > MaxMSat/u.msat {
				return 0, errors.New("amount exceeds 21 million bitcoin")
			}
			return n * u.msat, nil
		}
	}
	return 0, fmt.Errorf("unknown multiplier %c", last)
}

// encodeAmount writes msat in the fewest characters.
func encodeAmount(msat uint64) string {
	if msat%mSatPerBTC == 0 {
		return strconv.FormatUint(msat/mSatPerBTC, 10)
	}
	for _, u := range units {
		if msat%u.msat == 0 {
			return strconv.FormatUint(msat/u.msat, 10) + string(u.suffix)
		}
	}
	return strconv.FormatUint(msat*10, 10) + "p"
}
