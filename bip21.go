package kassa

import (
	"bytes"
	"net/url"
	"strconv"
	"strings"
)

// BIP21URI is what a bitcoin: URI says (BIP21, with the lightning
// parameter of BIP321 for unified QR codes).
type BIP21URI struct {
	// Address is the on-chain address as written; empty when the URI
	// pays only by Lightning.
	Address string
	// Amount is the amount asked for; zero when the URI names none.
	Amount Sats
	Label  string
	// Message describes the payment to the payer.
	Message string
	// Lightning is the lightning parameter (a BOLT11 invoice, usually),
	// in lower case when it is bech32-like (letters and digits only).
	Lightning string
	// Params holds every other optional parameter by its key in lower
	// case; nil when there is none.
	Params map[string]string
}

// MaxBIP21Length is the longest URI ParseBIP21 reads: room for the longest
// BOLT11 invoice (7089 characters) and more.
const MaxBIP21Length = 16 << 10

// bip21Scheme is the URI scheme, matched without regard to case.
const bip21Scheme = "bitcoin:"

// BIP21 returns the bitcoin: URI that asks for amount (omitted when not
// positive) to address, with label and, for a unified QR code, the
// Lightning invoice lightning (omitted when empty). The amount is in BTC
// with at most 8 decimals and no trailing zeros; a bech32 Lightning
// invoice is written in upper case, which QR codes encode more densely;
// every other character outside RFC 3986's unreserved set is
// percent-encoded, a space as %20.
func BIP21(address string, amount Sats, lightning string, label string) string {
	// A bech32 invoice is written as it is, in upper case; anything
	// else may need three bytes for each of its own.
	upper := bip21Alnum(lightning)
	lnLen := 3 * len(lightning)
	if upper {
		lnLen = len(lightning)
	}
	var b strings.Builder
	b.Grow(len(bip21Scheme) + 3*len(address) + len("?amount=21000000.00000000") + 3*len(label) + len("&label=&lightning=") + lnLen)
	b.WriteString(bip21Scheme)
	bip21Escape(&b, address, false)
	sep := byte('?')
	key := func(key string) {
		b.WriteByte(sep)
		sep = '&'
		b.WriteString(key)
		b.WriteByte('=')
	}
	if amount > 0 {
		key("amount")
		bip21FormatBTC(&b, amount)
	}
	if label != "" {
		key("label")
		bip21Escape(&b, label, false)
	}
	if lightning != "" {
		key("lightning")
		bip21Escape(&b, lightning, upper)
	}
	return b.String()
}

// ParseBIP21 reads a bitcoin: URI. The scheme and parameter keys are
// matched without regard to case; the amount is read as a decimal number
// of BTC (no sign, no exponent, at most 8 significant decimals, at most
// 21 million) straight into satoshis. A URI is refused when its address is
// not letters and digits, when it has neither address nor lightning
// parameter, when a parameter appears twice or is badly percent-encoded,
// or when it requires (req-…) a parameter this reader does not know.
// '+' is a plus sign, not a space (RFC 3986).
func ParseBIP21(uri string) (BIP21URI, error) {
	var u BIP21URI
	uri = strings.TrimSpace(uri)
	if len(uri) > MaxBIP21Length {
		return u, Errorf(Invalid, "the bitcoin URI is longer than %d characters", MaxBIP21Length)
	}
	if len(uri) < len(bip21Scheme) || !strings.EqualFold(uri[:len(bip21Scheme)], bip21Scheme) {
		return u, Errorf(Invalid, "not a bitcoin URI: it must start with %q", bip21Scheme)
	}
	address, query, _ := strings.Cut(uri[len(bip21Scheme):], "?")
	if address != "" && !bip21Alnum(address) {
		return u, Errorf(Invalid, "the bitcoin URI's address may hold only letters and digits")
	}
	u.Address = address

	seen := make(map[string]bool)
	for part := range strings.SplitSeq(query, "&") {
		if part == "" {
			continue
		}
		rawKey, rawValue, _ := strings.Cut(part, "=")
		key := strings.ToLower(rawKey)
		if !bip21ParamKey(key) {
			return BIP21URI{}, Errorf(Invalid, "the bitcoin URI has a malformed parameter name")
		}
		if seen[key] {
			return BIP21URI{}, Errorf(Invalid, "the bitcoin URI gives %s twice", key)
		}
		seen[key] = true
		value, err := url.PathUnescape(rawValue)
		if err != nil {
			return BIP21URI{}, Errorf(Invalid, "the bitcoin URI's %s is badly percent-encoded", key)
		}
		switch {
		case key == "amount":
			if u.Amount, err = bip21ParseBTC(value); err != nil {
				return BIP21URI{}, err
			}
		case key == "label":
			u.Label = value
		case key == "message":
			u.Message = value
		case key == "lightning":
			if bip21Alnum(value) {
				value = strings.ToLower(value)
			}
			u.Lightning = value
		case strings.HasPrefix(key, "req-"):
			return BIP21URI{}, Errorf(Invalid, "the bitcoin URI requires %s, which is not supported", key)
		default:
			if u.Params == nil {
				u.Params = make(map[string]string)
			}
			u.Params[key] = value
		}
	}
	if u.Address == "" && u.Lightning == "" {
		return BIP21URI{}, Errorf(Invalid, "the bitcoin URI has neither an address nor a lightning invoice")
	}
	return u, nil
}

// bip21FormatBTC writes s to b in BTC: up to 8 decimals, trailing zeros trimmed, no
// decimal point for whole bitcoins.
func bip21FormatBTC(b *strings.Builder, s Sats) {
	whole, frac := s/SatsPerBTC, s%SatsPerBTC
	var buf [32]byte
	out := strconv.AppendInt(buf[:0], int64(whole), 10)
	if frac != 0 {
		out = append(out, '.')
		// frac+SatsPerBTC is "1" and frac's 8 digits, zeros leading.
		var fb [16]byte
		digits := strconv.AppendInt(fb[:0], int64(frac+SatsPerBTC), 10)[1:]
		out = append(out, bytes.TrimRight(digits, "0")...)
	}
	b.Write(out)
}

// bip21ParseBTC reads a BIP21 amount, a decimal number of BTC, into satoshis
// without rounding: digits beyond the eighth decimal must be zeros.
func bip21ParseBTC(s string) (Sats, error) {
	whole, frac, _ := strings.Cut(s, ".")
	if whole == "" && frac == "" || !bip21Digits(whole) || !bip21Digits(frac) {
		return 0, Errorf(Invalid, "the bitcoin URI's amount must be a decimal number of BTC, such as 0.0015")
	}
	var btc int64
	for i := 0; i < len(whole); i++ {
		btc = btc*10 + int64(whole[i]-'0')
		if btc > int64(MaxSats/SatsPerBTC) {
			return 0, errBIP21TooMuch
		}
	}
	var sats int64
	for i := 0; i < 8; i++ {
		sats *= 10
		if i < len(frac) {
			sats += int64(frac[i] - '0')
		}
	}
	if strings.Trim(frac[min(len(frac), 8):], "0") != "" {
		return 0, Errorf(Invalid, "the bitcoin URI's amount has more than 8 decimals")
	}
	sats += btc * SatsPerBTC
	if sats > int64(MaxSats) {
		return 0, errBIP21TooMuch
	}
	return Sats(sats), nil
}

var errBIP21TooMuch = Errorf(Invalid, "the bitcoin URI's amount is more than 21 million bitcoin")

// bip21Escape writes s to b with every byte outside RFC 3986's
// unreserved characters percent-encoded, and with upper, its letters in
// upper case.
func bip21Escape(b *strings.Builder, s string, upper bool) {
	const hexDigits = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if bip21AlnumByte(c) || c == '-' || c == '.' || c == '_' || c == '~' {
			if upper && 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&15])
	}
}

// bip21ParamKey reports whether key is a plausible parameter name: letters,
// digits, '-', '_' and '.', not empty.
func bip21ParamKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !bip21AlnumByte(c) && c != '-' && c != '_' && c != '.' {
			return false
		}
	}
	return true
}

// bip21Alnum reports whether s is ASCII letters and digits only, as
// bech32 and base58 strings are, and not empty.
func bip21Alnum(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !bip21AlnumByte(s[i]) {
			return false
		}
	}
	return true
}

// bip21Digits reports whether s is ASCII digits only (or empty).
func bip21Digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// bip21AlnumByte reports whether c is an ASCII letter or digit.
func bip21AlnumByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
