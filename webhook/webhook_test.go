package webhook_test

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/webhook"
)

const testSecret = "whsec_test"

// hmacHex computes HMAC-SHA256 independently of the package.
func hmacHex(secret, message string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(message))
	return hex.EncodeToString(mac.Sum(nil))
}

func TestSignKnownAnswers(t *testing.T) {
	tests := []struct {
		secret string
		body   string
		unix   int64
	}{
		{"whsec_test", `{"type":"New","invoiceId":"inv_1"}`, 1700000000},
		{"s", ``, 0},
		{"a much longer secret that is longer than the sha256 block size of sixty-four bytes", `{"type":"Settled","invoiceId":"inv_2","metadata":{"orderId":"42"},"additionalStatus":"Overpaid"}`, 1767225600},
		{"ünïcode", "{\"x\":\"\u00e9\\n\"}\n", 4102444800},
	}
	for _, tt := range tests {
		ts := fmt.Sprint(tt.unix)
		wantSignature := "t=" + ts + ",v1=" + hmacHex(tt.secret, ts+"."+tt.body)
		wantSig := "sha256=" + hmacHex(tt.secret, tt.body)

		signature, sig := webhook.Sign(tt.secret, []byte(tt.body), time.Unix(tt.unix, 999_000_000))
		if signature != wantSignature {
			t.Errorf("Sign(%q, %q) signature = %q, want %q", tt.secret, tt.body, signature, wantSignature)
		}
		if sig != wantSig {
			t.Errorf("Sign(%q, %q) sig = %q, want %q", tt.secret, tt.body, sig, wantSig)
		}
		now := time.Unix(tt.unix, 0)
		if err := webhook.Verify(tt.secret, []byte(tt.body), signature, now, 0); err != nil {
			t.Errorf("Verify(own signature) = %v", err)
		}
		if err := webhook.VerifySig(tt.secret, []byte(tt.body), sig); err != nil {
			t.Errorf("VerifySig(own sig) = %v", err)
		}
	}
}

// TestSignFixedVector pins the scheme to values computed outside Go with
//
//	printf '%s' '1700000000.{"type":"New","invoiceId":"inv_1"}' | openssl dgst -sha256 -hmac whsec_test
//	printf '%s' '{"type":"New","invoiceId":"inv_1"}' | openssl dgst -sha256 -hmac whsec_test
func TestSignFixedVector(t *testing.T) {
	signature, sig := webhook.Sign("whsec_test", []byte(`{"type":"New","invoiceId":"inv_1"}`), time.Unix(1700000000, 0))
	if want := "t=1700000000,v1=c535a88f1cd285edcf3b6aa43a94487f8c362be96ce08247a360eb48cc093bc1"; signature != want {
		t.Errorf("signature = %q, want %q", signature, want)
	}
	if want := "sha256=ee3b4f2f8cf5c5a6ea5644225131e86fb52d54b03988aa505fe49683856555f9"; sig != want {
		t.Errorf("sig = %q, want %q", sig, want)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(`{"type":"Settled","invoiceId":"inv_1","metadata":{"orderId":"A-1"},"additionalStatus":"None"}`)
	signedAt := time.Unix(1767225600, 0)
	signature, _ := webhook.Sign(testSecret, body, signedAt)
	v1 := strings.TrimPrefix(signature, "t=1767225600,v1=")
	other := strings.Repeat("ab", 32)

	tests := []struct {
		name      string
		secret    string
		body      []byte
		header    string
		now       time.Time
		tolerance time.Duration
		want      error
	}{
		{name: "valid", header: signature},
		{name: "valid at tolerance in the past", header: signature, now: signedAt.Add(300 * time.Second)},
		{name: "valid at tolerance in the future", header: signature, now: signedAt.Add(-300 * time.Second)},
		{name: "too old", header: signature, now: signedAt.Add(301 * time.Second), want: webhook.ErrTooOld},
		{name: "much too old", header: signature, now: signedAt.Add(24 * time.Hour), want: webhook.ErrTooOld},
		{name: "in the future", header: signature, now: signedAt.Add(-301 * time.Second), want: webhook.ErrTooNew},
		{name: "custom tolerance", header: signature, now: signedAt.Add(11 * time.Second), tolerance: 10 * time.Second, want: webhook.ErrTooOld},
		{name: "custom tolerance accepts", header: signature, now: signedAt.Add(10 * time.Second), tolerance: 10 * time.Second},
		{name: "negative tolerance is the default", header: signature, now: signedAt.Add(299 * time.Second), tolerance: -1},
		{name: "tampered body", body: append(bytes.Clone(body), ' '), header: signature, want: webhook.ErrBadSignature},
		{name: "tampered byte", body: bytes.Replace(body, []byte("inv_1"), []byte("inv_2"), 1), header: signature, want: webhook.ErrBadSignature},
		{name: "empty body", body: []byte{}, header: signature, want: webhook.ErrBadSignature},
		{name: "wrong secret", secret: "whsec_other", header: signature, want: webhook.ErrBadSignature},
		{name: "empty secret", secret: "-", header: signature, want: webhook.ErrNoSecret},
		{name: "changed t", header: "t=1767225601,v1=" + v1, now: signedAt, want: webhook.ErrBadSignature},
		{name: "bad signature is reported before age", header: "t=1,v1=" + v1, want: webhook.ErrBadSignature},
		{name: "v2 element ignored", header: signature + ",v2=" + other},
		{name: "v2 element first", header: "v2=whatever-it-is," + signature},
		{name: "unknown element between", header: "t=1767225600,scheme=x,v1=" + v1},
		{name: "elements reordered", header: "v1=" + v1 + ",t=1767225600"},
		{name: "spaces", header: " t = 1767225600 ,\tv1= " + v1 + " "},
		{name: "upper-case hex", header: "t=1767225600,v1=" + strings.ToUpper(v1)},
		{name: "second v1 matches", header: "t=1767225600,v1=" + other + ",v1=" + v1},
		{name: "first v1 matches", header: "t=1767225600,v1=" + v1 + ",v1=" + other},
		{name: "no v1 matches", header: "t=1767225600,v1=" + other + ",v1=" + other, want: webhook.ErrBadSignature},
		{name: "only v2", header: "t=1767225600,v2=" + v1, want: webhook.ErrMalformedSignature},
		{name: "empty header", header: "", want: webhook.ErrNoSignature},
		{name: "blank header", header: "  ", want: webhook.ErrNoSignature},
		{name: "sig header given as signature", header: "sha256=" + v1, want: webhook.ErrMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret, b, now := tt.secret, tt.body, tt.now
			switch secret {
			case "":
				secret = testSecret
			case "-":
				secret = ""
			}
			if b == nil {
				b = body
			}
			if now.IsZero() {
				now = signedAt
			}
			err := webhook.Verify(secret, b, tt.header, now, tt.tolerance)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("Verify = %v, want nil", err)
				}
				return
			}
			if !errors.Is(err, tt.want) {
				t.Fatalf("Verify = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyErrorSaysWhy(t *testing.T) {
	body := []byte(`{}`)
	signature, _ := webhook.Sign(testSecret, body, time.Unix(1767225600, 0))
	err := webhook.Verify(testSecret, body, signature, time.Unix(1767225600+3600, 0), 0)
	want := "webhook: signature timestamp is too old: signed at 2026-01-01T00:00:00Z, 1h0m0s before 2026-01-01T01:00:00Z (tolerance 5m0s)"
	if err == nil || err.Error() != want {
		t.Errorf("Verify = %v, want %q", err, want)
	}
}

func TestVerifyExtremeTimestamps(t *testing.T) {
	body := []byte(`{}`)
	for _, unix := range []int64{0, 1<<63 - 1} {
		ts := fmt.Sprint(unix)
		header := "t=" + ts + ",v1=" + hmacHex(testSecret, ts+"."+string(body))
		err := webhook.Verify(testSecret, body, header, time.Unix(1767225600, 0), 0)
		if !errors.Is(err, webhook.ErrTooOld) && !errors.Is(err, webhook.ErrTooNew) {
			t.Errorf("t=%d: Verify = %v, want a timestamp error", unix, err)
		}
	}
}

func TestParseSignature(t *testing.T) {
	v1 := strings.Repeat("0f", 32)
	v1b := strings.Repeat("e1", 32)
	tests := []struct {
		header string
		want   webhook.Signature
	}{
		{"t=1700000000,v1=" + v1, webhook.Signature{Timestamp: 1700000000, V1: []string{v1}}},
		{"t=0,v1=" + v1, webhook.Signature{Timestamp: 0, V1: []string{v1}}},
		{"v1=" + v1 + ",t=5", webhook.Signature{Timestamp: 5, V1: []string{v1}}},
		{"t=5,v1=" + strings.ToUpper(v1b), webhook.Signature{Timestamp: 5, V1: []string{v1b}}},
		{"t=5,v1=" + v1 + ",v1=" + v1b, webhook.Signature{Timestamp: 5, V1: []string{v1, v1b}}},
		{"t=5,v1=" + v1 + ",v2=" + v1b + ",v2=", webhook.Signature{Timestamp: 5, V1: []string{v1}}},
		{"t=5,v1=" + v1 + ",future_scheme-3.1=a=b c", webhook.Signature{Timestamp: 5, V1: []string{v1}}},
		{"\tt = 5 , v1 =\t" + v1 + "  ", webhook.Signature{Timestamp: 5, V1: []string{v1}}},
		{"t=9223372036854775807,v1=" + v1, webhook.Signature{Timestamp: 1<<63 - 1, V1: []string{v1}}},
	}
	for _, tt := range tests {
		got, err := webhook.ParseSignature(tt.header)
		if err != nil {
			t.Errorf("ParseSignature(%q) = %v", tt.header, err)
			continue
		}
		if got.String() != tt.want.String() || got.Timestamp != tt.want.Timestamp {
			t.Errorf("ParseSignature(%q) = %v, want %v", tt.header, got, tt.want)
		}
	}
}

func TestParseSignatureMalformed(t *testing.T) {
	v1 := strings.Repeat("0f", 32)
	tests := []struct {
		header string
		want   error
		says   string
	}{
		{"", webhook.ErrNoSignature, "empty"},
		{" \t ", webhook.ErrNoSignature, "empty"},
		{"t=5", webhook.ErrMalformedSignature, "no v1 element"},
		{"v1=" + v1, webhook.ErrMalformedSignature, "no t element"},
		{"t=5,v2=" + v1, webhook.ErrMalformedSignature, "no v1 element"},
		{"t=,v1=" + v1, webhook.ErrMalformedSignature, "t=\"\": empty"},
		{"t=abc,v1=" + v1, webhook.ErrMalformedSignature, "not a decimal number"},
		{"t=-5,v1=" + v1, webhook.ErrMalformedSignature, "not a decimal number"},
		{"t=+5,v1=" + v1, webhook.ErrMalformedSignature, "not a decimal number"},
		{"t=1.5,v1=" + v1, webhook.ErrMalformedSignature, "not a decimal number"},
		{"t=05,v1=" + v1, webhook.ErrMalformedSignature, "leading zero"},
		{"t=9223372036854775808,v1=" + v1, webhook.ErrMalformedSignature, "out of range"},
		{"t=5,t=5,v1=" + v1, webhook.ErrMalformedSignature, "more than one t"},
		{"t=5,v1=" + v1[:62], webhook.ErrMalformedSignature, "not 64 hexadecimal digits"},
		{"t=5,v1=" + v1 + "00", webhook.ErrMalformedSignature, "not 64 hexadecimal digits"},
		{"t=5,v1=" + strings.Repeat("zz", 32), webhook.ErrMalformedSignature, "not 64 hexadecimal digits"},
		{"t=5,v1=", webhook.ErrMalformedSignature, "not 64 hexadecimal digits"},
		{"t=5,v1=" + v1[:30] + " " + v1[31:], webhook.ErrMalformedSignature, "not 64 hexadecimal digits"},
		{"t=5,,v1=" + v1, webhook.ErrMalformedSignature, "element 2 is empty"},
		{"t=5,v1=" + v1 + ",", webhook.ErrMalformedSignature, "element 3 is empty"},
		{"t5,v1=" + v1, webhook.ErrMalformedSignature, "element 1 (\"t5\") is not key=value"},
		{"t=5,=x,v1=" + v1, webhook.ErrMalformedSignature, "invalid key"},
		{"t=5,v 2=x,v1=" + v1, webhook.ErrMalformedSignature, "invalid key"},
		{"t=5;v1=" + v1, webhook.ErrMalformedSignature, "not a decimal number"},
		{"t=5,v1=" + v1 + "," + strings.Repeat("x", 5000), webhook.ErrMalformedSignature, "longer than 4096 bytes"},
	}
	for _, tt := range tests {
		_, err := webhook.ParseSignature(tt.header)
		if !errors.Is(err, tt.want) {
			t.Errorf("ParseSignature(%.40q) = %v, want %v", tt.header, err, tt.want)
			continue
		}
		if !strings.Contains(err.Error(), tt.says) {
			t.Errorf("ParseSignature(%.40q) = %q, want it to say %q", tt.header, err, tt.says)
		}
		if len(err.Error()) > 200 {
			t.Errorf("ParseSignature(%.40q): error is %d bytes long", tt.header, len(err.Error()))
		}
	}
}

func TestVerifySig(t *testing.T) {
	body := []byte(`{"type":"New","invoiceId":"inv_1"}`)
	_, sig := webhook.Sign(testSecret, body, time.Unix(1, 0))
	hexValue := strings.TrimPrefix(sig, "sha256=")
	tests := []struct {
		name   string
		secret string
		body   []byte
		header string
		want   error
	}{
		{name: "valid", header: sig},
		{name: "spaces and case", header: " SHA256=" + strings.ToUpper(hexValue) + " "},
		{name: "tampered body", body: []byte(`{"type":"New","invoiceId":"inv_2"}`), header: sig, want: webhook.ErrBadSignature},
		{name: "wrong secret", secret: "other", header: sig, want: webhook.ErrBadSignature},
		{name: "empty secret", secret: "-", header: sig, want: webhook.ErrNoSecret},
		{name: "empty", header: "", want: webhook.ErrNoSignature},
		{name: "other algorithm", header: "sha1=" + hexValue, want: webhook.ErrMalformedSignature},
		{name: "no prefix", header: hexValue, want: webhook.ErrMalformedSignature},
		{name: "short", header: "sha256=" + hexValue[:10], want: webhook.ErrMalformedSignature},
		{name: "not hex", header: "sha256=" + strings.Repeat("g", 64), want: webhook.ErrMalformedSignature},
		{name: "signature header given as sig", header: "t=1,v1=" + hexValue, want: webhook.ErrMalformedSignature},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			secret, b := tt.secret, tt.body
			switch secret {
			case "":
				secret = testSecret
			case "-":
				secret = ""
			}
			if b == nil {
				b = body
			}
			err := webhook.VerifySig(secret, b, tt.header)
			if tt.want == nil && err != nil || tt.want != nil && !errors.Is(err, tt.want) {
				t.Fatalf("VerifySig = %v, want %v", err, tt.want)
			}
		})
	}
}

func TestVerifyRequest(t *testing.T) {
	body := []byte(`{"type":"Expired","invoiceId":"inv_9","metadata":{},"additionalStatus":"Underpaid","isUnderpaid":true}`)
	now := time.Unix(1767225600, 0)
	signature, sig := webhook.Sign(testSecret, body, now.Add(-time.Minute))
	_, otherSig := webhook.Sign(testSecret, []byte(`{}`), now)
	bigBody := bytes.Repeat([]byte{' '}, webhook.MaxBodySize)
	bigSignature, _ := webhook.Sign(testSecret, bigBody, now)
	tooBig := append(bytes.Clone(bigBody), ' ')
	tooBigSignature, _ := webhook.Sign(testSecret, tooBig, now)

	tests := []struct {
		name    string
		body    []byte
		headers map[string]string
		want    error
	}{
		{name: "both headers", headers: map[string]string{webhook.SignatureHeader: signature, webhook.SigHeader: sig}},
		{name: "signature only", headers: map[string]string{webhook.SignatureHeader: signature}},
		{name: "lower-case header names", headers: map[string]string{"x-service-signature": signature, "x-service-sig": sig}},
		{name: "no headers", headers: nil, want: webhook.ErrNoSignature},
		{name: "sig only", headers: map[string]string{webhook.SigHeader: sig}, want: webhook.ErrNoSignature},
		{name: "sig does not match", headers: map[string]string{webhook.SignatureHeader: signature, webhook.SigHeader: otherSig}, want: webhook.ErrBadSignature},
		{name: "sig empty", headers: map[string]string{webhook.SignatureHeader: signature, webhook.SigHeader: ""}, want: webhook.ErrNoSignature},
		{name: "tampered", body: append(bytes.Clone(body), '\n'), headers: map[string]string{webhook.SignatureHeader: signature, webhook.SigHeader: sig}, want: webhook.ErrBadSignature},
		{name: "body of 1 MiB", body: bigBody, headers: map[string]string{webhook.SignatureHeader: bigSignature}},
		{name: "body over 1 MiB", body: tooBig, headers: map[string]string{webhook.SignatureHeader: tooBigSignature}, want: webhook.ErrBodyTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := tt.body
			if b == nil {
				b = body
			}
			r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(b))
			for k, v := range tt.headers {
				r.Header.Set(k, v)
			}
			got, err := webhook.VerifyRequest(r, testSecret, now)
			if tt.want != nil {
				if !errors.Is(err, tt.want) || got != nil {
					t.Fatalf("VerifyRequest = %d bytes, %v; want nil, %v", len(got), err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("VerifyRequest = %v", err)
			}
			if !bytes.Equal(got, b) {
				t.Fatalf("VerifyRequest returned %d bytes, want the %d of the body", len(got), len(b))
			}
		})
	}

	t.Run("too old", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
		r.Header.Set(webhook.SignatureHeader, signature)
		if _, err := webhook.VerifyRequest(r, testSecret, now.Add(10*time.Minute)); !errors.Is(err, webhook.ErrTooOld) {
			t.Fatalf("VerifyRequest = %v, want ErrTooOld", err)
		}
	})
	t.Run("empty secret", func(t *testing.T) {
		r := httptest.NewRequest(http.MethodPost, "/hook", bytes.NewReader(body))
		r.Header.Set(webhook.SignatureHeader, signature)
		if _, err := webhook.VerifyRequest(r, "", now); !errors.Is(err, webhook.ErrNoSecret) {
			t.Fatalf("VerifyRequest = %v, want ErrNoSecret", err)
		}
	})
}

func TestEventJSON(t *testing.T) {
	underpaid := true
	tests := []struct {
		name  string
		event webhook.Event
		json  string
	}{
		{
			name: "settled",
			event: webhook.Event{
				Type: webhook.EventSettled, InvoiceID: "inv_1",
				Metadata:         json.RawMessage(`{"orderId":"A-17","note":"x"}`),
				AdditionalStatus: webhook.StatusOverpaid,
			},
			json: `{"type":"Settled","invoiceId":"inv_1","metadata":{"orderId":"A-17","note":"x"},"additionalStatus":"Overpaid"}`,
		},
		{
			name: "expired underpaid",
			event: webhook.Event{
				Type: webhook.EventExpired, InvoiceID: "inv_2", Metadata: json.RawMessage(`{}`),
				AdditionalStatus: webhook.StatusUnderpaid, IsUnderpaid: &underpaid,
			},
			json: `{"type":"Expired","invoiceId":"inv_2","metadata":{},"additionalStatus":"Underpaid","isUnderpaid":true}`,
		},
		{
			name:  "redelivered",
			event: webhook.Event{Type: webhook.EventNew, InvoiceID: "inv_3"},
			json:  `{"type":"New","invoiceId":"inv_3"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := json.Marshal(tt.event)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.json {
				t.Errorf("Marshal = %s, want %s", got, tt.json)
			}
			var back webhook.Event
			if err := json.Unmarshal([]byte(tt.json), &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != tt.json {
				t.Errorf("Unmarshal then Marshal = %s, want %s", again, tt.json)
			}
		})
	}
}

func TestEventOrderID(t *testing.T) {
	tests := []struct {
		metadata string
		want     string
	}{
		{``, ""},
		{`null`, ""},
		{`{}`, ""},
		{`{"orderId":"A-17"}`, "A-17"},
		{`{"orderId":"caf\u00e9"}`, "café"},
		{`{"orderId":1234}`, "1234"},
		{`{"orderId":null}`, ""},
		{`{"orderId":{"x":1}}`, ""},
		{`[1,2]`, ""},
		{`{"orderId":-7}`, "-7"},
		// Digits beyond float64's 53 bits are kept as given.
		{`{"orderId":12345678901234567891}`, "12345678901234567891"},
		{`{"orderId":9007199254740993}`, "9007199254740993"},
		{`{"orderId":true}`, ""},
		{`{"orderId":["1"]}`, ""},
		{`{"order":"1"}`, ""},
		{`"1001"`, ""},
		{`{"orderId":`, ""},
	}
	for _, tt := range tests {
		e := webhook.Event{Metadata: json.RawMessage(tt.metadata)}
		if got := e.OrderID(); got != tt.want {
			t.Errorf("OrderID of metadata %s = %q, want %q", tt.metadata, got, tt.want)
		}
	}
}
