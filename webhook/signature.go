package webhook

import (
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// MaxSignatureHeaderLength is the longest X-Service-Signature value that
// ParseSignature reads. A v1 element takes 68 bytes, so this leaves room
// for many of them and for later schemes.
const MaxSignatureHeaderLength = 4096

// Signature is a parsed X-Service-Signature value.
type Signature struct {
	// Timestamp is the t element: when the delivery was signed, in Unix
	// seconds.
	Timestamp int64
	// V1 holds the values of the v1 elements in the order they appeared,
	// each 64 lower-case hexadecimal digits: HMAC-SHA256 of
	// "<t>.<raw body>". A header may carry several, for example while a
	// secret is being replaced; one matching value suffices.
	V1 []string
}

// Time returns Timestamp as a time.
func (s Signature) Time() time.Time { return time.Unix(s.Timestamp, 0) }

// String formats s as a header value: "t=<t>,v1=<hex>[,v1=<hex>...]".
// Elements that ParseSignature ignored are not part of s and do not
// reappear.
func (s Signature) String() string {
	var b strings.Builder
	b.WriteString("t=")
	b.WriteString(strconv.FormatInt(s.Timestamp, 10))
	for _, v := range s.V1 {
		b.WriteString(",v1=")
		b.WriteString(v)
	}
	return b.String()
}

// ParseSignature parses an X-Service-Signature value: comma-separated
// key=value elements, exactly one t (Unix seconds, decimal digits without
// sign or leading zero) and at least one v1 (64 hexadecimal digits, in
// either case). Spaces and tabs around elements, keys and values are
// ignored, and so are elements with other keys, such as the v2= of a later
// scheme. Errors wrap ErrNoSignature for an empty value and
// ErrMalformedSignature for anything else that does not fit.
func ParseSignature(header string) (Signature, error) {
	var sig Signature
	if len(header) > MaxSignatureHeaderLength {
		return sig, fmt.Errorf("%w: longer than %d bytes", ErrMalformedSignature, MaxSignatureHeaderLength)
	}
	if trimSpace(header) == "" {
		return sig, fmt.Errorf("%w: %s is empty", ErrNoSignature, SignatureHeader)
	}
	seenT := false
	for i, element := range strings.Split(header, ",") {
		n := i + 1
		element = trimSpace(element)
		if element == "" {
			return sig, fmt.Errorf("%w: element %d is empty", ErrMalformedSignature, n)
		}
		key, value, ok := strings.Cut(element, "=")
		if !ok {
			return sig, fmt.Errorf("%w: element %d (%s) is not key=value", ErrMalformedSignature, n, excerpt(element))
		}
		key, value = trimSpace(key), trimSpace(value)
		if !validKey(key) {
			return sig, fmt.Errorf("%w: element %d has an invalid key %s", ErrMalformedSignature, n, excerpt(key))
		}
		switch key {
		case "t":
			if seenT {
				return sig, fmt.Errorf("%w: more than one t element", ErrMalformedSignature)
			}
			seenT = true
			t, err := parseTimestamp(value)
			if err != nil {
				return sig, fmt.Errorf("%w: t=%s: %s", ErrMalformedSignature, excerpt(value), err)
			}
			sig.Timestamp = t
		case "v1":
			if len(value) != 2*macSize || !isHex(value) {
				return sig, fmt.Errorf("%w: v1=%s is not %d hexadecimal digits", ErrMalformedSignature, excerpt(value), 2*macSize)
			}
			sig.V1 = append(sig.V1, strings.ToLower(value))
		}
	}
	if !seenT {
		return Signature{}, fmt.Errorf("%w: no t element", ErrMalformedSignature)
	}
	if len(sig.V1) == 0 {
		return Signature{}, fmt.Errorf("%w: no v1 element", ErrMalformedSignature)
	}
	return sig, nil
}

// parseTimestamp reads the canonical decimal form of a non-negative Unix
// time, the only form that Sign writes. Because the signed input contains
// t as sent, accepting other spellings ("+5", "05") would let two headers
// denote one time but different signed inputs.
func parseTimestamp(s string) (int64, error) {
	switch {
	case s == "":
		return 0, errString("empty")
	case !isDigits(s):
		return 0, errString("not a decimal number of seconds")
	case len(s) > 1 && s[0] == '0':
		return 0, errString("leading zero")
	}
	t, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errString("out of range")
	}
	return t, nil
}

type errString string

func (e errString) Error() string { return string(e) }

func trimSpace(s string) string { return strings.Trim(s, " \t") }

// validKey reports whether key is a token of letters, digits, '_', '-'
// and '.'.
func validKey(key string) bool {
	if key == "" {
		return false
	}
	for i := 0; i < len(key); i++ {
		c := key[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil
}

// excerpt quotes s for an error message, cut to a readable length, so that
// a hostile header cannot make error messages long.
func excerpt(s string) string {
	const max = 24
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
