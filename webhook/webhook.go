package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of a delivery.
const (
	// SignatureHeader carries "t=<unix-seconds>,v1=<hex>", the HMAC-SHA256
	// of "<t>.<raw body>".
	SignatureHeader = "X-Service-Signature"
	// SigHeader carries "sha256=<hex>", the HMAC-SHA256 of the raw body.
	// It gives no replay protection.
	SigHeader = "X-Service-Sig"
	// EventIDHeader identifies the event a delivery carries: the same on
	// every endpoint, on automatic retries and on a redelivery of that
	// event, so a receiver can recognise a repeat without reading the
	// body.
	EventIDHeader = "X-Service-Event-Id"
	// DeliveryIDHeader identifies one delivery attempt, as listed in the
	// webhook's delivery log.
	DeliveryIDHeader = "X-Service-Delivery-Id"
)

// DefaultTolerance is how far the t of X-Service-Signature may be from
// the current time, either way, for Verify to accept it.
const DefaultTolerance = 300 * time.Second

// MaxBodySize is the largest request body that VerifyRequest reads.
const MaxBodySize = 1 << 20

// macSize is the length of an HMAC-SHA256 in bytes.
const macSize = sha256.Size

// Errors of verification. The errors returned wrap one of them with
// details; compare with errors.Is.
var (
	// ErrNoSignature means that the signature header is missing or empty.
	ErrNoSignature = errors.New("webhook: missing signature")
	// ErrMalformedSignature means that a signature header does not have
	// the documented shape.
	ErrMalformedSignature = errors.New("webhook: malformed signature header")
	// ErrBadSignature means that no signature in the header matches the
	// body and the secret: the body was changed, the secret is wrong, or
	// the request was not sent by the service.
	ErrBadSignature = errors.New("webhook: signature does not match")
	// ErrTooOld means that the signature is valid but its t lies further
	// in the past than the tolerance allows: possibly a replay.
	ErrTooOld = errors.New("webhook: signature timestamp is too old")
	// ErrTooNew means that the signature is valid but its t lies further
	// in the future than the tolerance allows: a clock is wrong.
	ErrTooNew = errors.New("webhook: signature timestamp is in the future")
	// ErrNoSecret means that verification was asked with an empty secret.
	ErrNoSecret = errors.New("webhook: empty signing secret")
	// ErrBodyTooLarge means that the request body exceeds MaxBodySize.
	ErrBodyTooLarge = errors.New("webhook: request body is larger than 1 MiB")
)

// Sign returns the values of the two signature headers of a delivery of
// body signed with secret at time t: signature for SignatureHeader
// ("t=<unix-seconds>,v1=<hex>") and sig for SigHeader ("sha256=<hex>").
// Times before 1970 are not supported.
func Sign(secret string, body []byte, t time.Time) (signature, sig string) {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(signedMAC(secret, ts, body)),
		"sha256=" + hex.EncodeToString(bodyMAC(secret, body))
}

// signedMAC returns HMAC-SHA256(secret, "<ts>.<body>").
func signedMAC(secret, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// bodyMAC returns HMAC-SHA256(secret, body).
func bodyMAC(secret string, body []byte) []byte {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write(body)
	return mac.Sum(nil)
}

// Verify checks an X-Service-Signature value against the raw body and the
// secret: one of its v1 elements must equal HMAC-SHA256(secret,
// "<t>.<body>") (compared in constant time), and t must lie within
// tolerance of now, either way. A tolerance of zero or less means
// DefaultTolerance.
//
// The error wraps ErrNoSecret, ErrNoSignature, ErrMalformedSignature,
// ErrBadSignature, ErrTooOld or ErrTooNew.
func Verify(secret string, body []byte, signatureHeader string, now time.Time, tolerance time.Duration) error {
	if secret == "" {
		return ErrNoSecret
	}
	sig, err := ParseSignature(signatureHeader)
	if err != nil {
		return err
	}
	want := signedMAC(secret, strconv.FormatInt(sig.Timestamp, 10), body)
	match := false
	for _, v := range sig.V1 {
		got, err := hex.DecodeString(v)
		if err == nil && hmac.Equal(got, want) {
			match = true
		}
	}
	if !match {
		return fmt.Errorf("%w: %s", ErrBadSignature, SignatureHeader)
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	age := now.Sub(sig.Time())
	switch {
	case age > tolerance:
		return fmt.Errorf("%w: signed at %s, %s before %s (tolerance %s)",
			ErrTooOld, sig.Time().UTC().Format(time.RFC3339), age.Round(time.Second), now.UTC().Format(time.RFC3339), tolerance)
	case age < -tolerance:
		return fmt.Errorf("%w: signed at %s, %s after %s (tolerance %s)",
			ErrTooNew, sig.Time().UTC().Format(time.RFC3339), (-age).Round(time.Second), now.UTC().Format(time.RFC3339), tolerance)
	}
	return nil
}

// VerifySig checks an X-Service-Sig value ("sha256=<hex>") against the raw
// body and the secret, in constant time.
//
// X-Service-Sig signs the body only, so it gives no replay protection: a
// captured delivery verifies forever. Prefer Verify where the
// X-Service-Signature header is available.
//
// The error wraps ErrNoSecret, ErrNoSignature, ErrMalformedSignature or
// ErrBadSignature.
func VerifySig(secret string, body []byte, sigHeader string) error {
	if secret == "" {
		return ErrNoSecret
	}
	got, err := parseSig(sigHeader)
	if err != nil {
		return err
	}
	if !hmac.Equal(got, bodyMAC(secret, body)) {
		return fmt.Errorf("%w: %s", ErrBadSignature, SigHeader)
	}
	return nil
}

// parseSig reads "sha256=<64 hex digits>", ignoring surrounding spaces
// and the case of the prefix and the digits.
func parseSig(header string) ([]byte, error) {
	header = trimSpace(header)
	if header == "" {
		return nil, fmt.Errorf("%w: %s is empty", ErrNoSignature, SigHeader)
	}
	if len(header) > MaxSignatureHeaderLength {
		return nil, fmt.Errorf("%w: %s is longer than %d bytes", ErrMalformedSignature, SigHeader, MaxSignatureHeaderLength)
	}
	algorithm, value, ok := strings.Cut(header, "=")
	if !ok || !strings.EqualFold(trimSpace(algorithm), "sha256") {
		return nil, fmt.Errorf("%w: %s does not start with sha256=", ErrMalformedSignature, SigHeader)
	}
	value = trimSpace(value)
	mac, err := hex.DecodeString(value)
	if err != nil || len(mac) != macSize {
		return nil, fmt.Errorf("%w: %s value %s is not %d hexadecimal digits", ErrMalformedSignature, SigHeader, excerpt(value), 2*macSize)
	}
	return mac, nil
}

// VerifyRequest reads the body of a webhook delivery (at most MaxBodySize
// bytes) and verifies it: X-Service-Signature must be present and valid
// within DefaultTolerance of now, and X-Service-Sig, when present, must be
// valid too. It returns the verified raw body, ready to be decoded into an
// Event, or nil and an error: ErrBodyTooLarge, an error of reading the
// body, or one of the errors of Verify and VerifySig.
//
// VerifyRequest consumes r.Body; it does not close it, as the server does
// that.
func VerifyRequest(r *http.Request, secret string, now time.Time) ([]byte, error) {
	if secret == "" {
		return nil, ErrNoSecret
	}
	var body []byte
	if r.Body != nil {
		var err error
		body, err = io.ReadAll(io.LimitReader(r.Body, MaxBodySize+1))
		if err != nil {
			return nil, fmt.Errorf("webhook: read request body: %w", err)
		}
	}
	if len(body) > MaxBodySize {
		return nil, ErrBodyTooLarge
	}
	header := r.Header.Get(SignatureHeader)
	if trimSpace(header) == "" {
		return nil, fmt.Errorf("%w: no %s header", ErrNoSignature, SignatureHeader)
	}
	if err := Verify(secret, body, header, now, DefaultTolerance); err != nil {
		return nil, err
	}
	if values := r.Header.Values(SigHeader); len(values) > 0 {
		if err := VerifySig(secret, body, values[0]); err != nil {
			return nil, err
		}
	}
	return body, nil
}
