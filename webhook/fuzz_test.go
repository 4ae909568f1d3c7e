package webhook_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/webhook"
)

func FuzzParseSignature(f *testing.F) {
	v1 := strings.Repeat("0f", 32)
	for _, seed := range []string{
		"",
		"t=1700000000,v1=" + v1,
		"t=1700000000,v1=" + v1 + ",v1=" + strings.ToUpper(v1) + ",v2=abc",
		" t = 1 ,\tv1 = " + v1,
		"t=01,v1=" + v1,
		"t=5,,v1=",
		"v1=" + v1,
		"t=9223372036854775807,v1=" + v1,
		"=,=,=",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, header string) {
		sig, err := webhook.ParseSignature(header)
		if err != nil {
			if !errors.Is(err, webhook.ErrMalformedSignature) && !errors.Is(err, webhook.ErrNoSignature) {
				t.Fatalf("ParseSignature(%q) = %v, which wraps no sentinel", header, err)
			}
			return
		}
		if sig.Timestamp < 0 || len(sig.V1) == 0 {
			t.Fatalf("ParseSignature(%q) = %+v without error", header, sig)
		}
		for _, v := range sig.V1 {
			if len(v) != 64 || strings.ToLower(v) != v {
				t.Fatalf("ParseSignature(%q): v1 %q is not 64 lower-case digits", header, v)
			}
		}
		back, err := webhook.ParseSignature(sig.String())
		if err != nil {
			t.Fatalf("ParseSignature(%q) = %+v, whose String %q does not parse: %v", header, sig, sig.String(), err)
		}
		if !reflect.DeepEqual(back, sig) {
			t.Fatalf("round trip of %q: %+v became %+v", header, sig, back)
		}
	})
}

func FuzzVerify(f *testing.F) {
	f.Add("whsec_test", []byte(`{"type":"New","invoiceId":"inv_1"}`), "t=1700000000,v1="+strings.Repeat("ab", 32), int64(1700000000))
	f.Add("", []byte{}, "", int64(0))
	f.Add("s", []byte("{}"), "sha256="+strings.Repeat("ab", 32), int64(-1))
	f.Fuzz(func(t *testing.T, secret string, body []byte, header string, unix int64) {
		now := time.Unix(unix, 0)
		// Arbitrary input: must not panic, and must not verify unless the
		// header carries the right MAC, which a fuzzer cannot find.
		if err := webhook.Verify(secret, body, header, now, 0); err == nil {
			signature, _ := webhook.Sign(secret, body, time.Unix(mustParse(t, header).Timestamp, 0))
			if !strings.Contains(strings.ToLower(header), signature[strings.Index(signature, "v1=")+3:]) {
				t.Fatalf("Verify accepted %q, which lacks the MAC", header)
			}
		}
		_ = webhook.VerifySig(secret, body, header)

		if secret == "" {
			return
		}
		// What Sign makes verifies, and stops verifying when changed.
		if unix < 0 {
			unix = -unix
		}
		unix %= 1 << 40
		at := time.Unix(unix, 0)
		signature, sig := webhook.Sign(secret, body, at)
		if err := webhook.Verify(secret, body, signature, at, 0); err != nil {
			t.Fatalf("Verify(Sign) = %v", err)
		}
		if err := webhook.VerifySig(secret, body, sig); err != nil {
			t.Fatalf("VerifySig(Sign) = %v", err)
		}
		tampered := append(append([]byte(nil), body...), 'x')
		if err := webhook.Verify(secret, tampered, signature, at, 0); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("Verify(tampered body) = %v, want ErrBadSignature", err)
		}
		if err := webhook.VerifySig(secret, tampered, sig); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("VerifySig(tampered body) = %v, want ErrBadSignature", err)
		}
		if err := webhook.Verify(secret+"x", body, signature, at, 0); !errors.Is(err, webhook.ErrBadSignature) {
			t.Fatalf("Verify(other secret) = %v, want ErrBadSignature", err)
		}
		if err := webhook.Verify(secret, body, signature, at.Add(webhook.DefaultTolerance+time.Second), 0); !errors.Is(err, webhook.ErrTooOld) {
			t.Fatalf("Verify(late) = %v, want ErrTooOld", err)
		}
	})
}

func mustParse(t *testing.T, header string) webhook.Signature {
	t.Helper()
	sig, err := webhook.ParseSignature(header)
	if err != nil {
		t.Fatalf("Verify accepted %q, which does not parse: %v", header, err)
	}
	return sig
}
