package webhook_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/kassapay/kassa/webhook"
)

// A receiver verifies each delivery before it trusts the body, answers
// 2xx once the event is handled, and handles an event it has seen before
// as a no-op, because a redelivery can repeat it.
func ExampleVerifyRequest() {
	const secret = "whsec_3f9a" // the webhook's signing secret, from the dashboard

	handled := map[string]bool{} // a database table in a real receiver
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := webhook.VerifyRequest(r, secret, time.Now())
		if err != nil {
			log.Printf("refused webhook: %v", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		var event webhook.Event
		if err := json.Unmarshal(body, &event); err != nil {
			http.Error(w, "bad payload", http.StatusBadRequest)
			return
		}
		key := event.InvoiceID + "/" + event.Type
		if handled[key] {
			fmt.Println("already handled", key)
			w.WriteHeader(http.StatusOK)
			return
		}
		handled[key] = true
		fmt.Println("handle", event.Type, "of", event.InvoiceID, "for order", event.OrderID(), event.AdditionalStatus)
		w.WriteHeader(http.StatusOK)
	})

	// What the service sends: a signed delivery, then its redelivery.
	deliver := func(body string) int {
		signature, sig := webhook.Sign(secret, []byte(body), time.Now())
		r := httptest.NewRequest(http.MethodPost, "/webhooks/kassa", bytes.NewBufferString(body))
		r.Header.Set("Content-Type", "application/json")
		r.Header.Set(webhook.SignatureHeader, signature)
		r.Header.Set(webhook.SigHeader, sig)
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		return w.Code
	}
	fmt.Println(deliver(`{"type":"Settled","invoiceId":"inv_7","metadata":{"orderId":"A-17"},"additionalStatus":"None"}`))
	fmt.Println(deliver(`{"type":"Settled","invoiceId":"inv_7"}`))
	// Output:
	// handle Settled of inv_7 for order A-17 None
	// 200
	// already handled inv_7/Settled
	// 200
}

// A simulated delivery to a local receiver, such as a shop under
// development, needs only the X-Service-Sig value: the HMAC-SHA256 of the
// JSON body with the secret. The same value can be computed with
//
//	printf '%s' "$BODY" | openssl dgst -sha256 -hmac "$SECRET"
func ExampleVerifySig() {
	secret := "whsec_test"
	body := []byte(`{"type":"New","invoiceId":"inv_1"}`)

	// The sender side: Sign returns both header values; the X-Service-Sig
	// one does not depend on the time.
	_, sig := webhook.Sign(secret, body, time.Now())
	fmt.Println(webhook.SigHeader+":", sig)

	// The receiver side. X-Service-Sig has no timestamp, so it cannot
	// tell a replayed delivery from a fresh one; production receivers
	// check X-Service-Signature with Verify or VerifyRequest.
	fmt.Println(webhook.VerifySig(secret, body, sig))
	err := webhook.VerifySig(secret, []byte(`{"type":"New","invoiceId":"inv_2"}`), sig)
	fmt.Println(errors.Is(err, webhook.ErrBadSignature))
	// Output:
	// X-Service-Sig: sha256=ee3b4f2f8cf5c5a6ea5644225131e86fb52d54b03988aa505fe49683856555f9
	// <nil>
	// true
}

func ExampleSign() {
	body := []byte(`{"type":"New","invoiceId":"inv_1"}`)
	signature, sig := webhook.Sign("whsec_test", body, time.Unix(1700000000, 0))
	fmt.Println(webhook.SignatureHeader+":", signature)
	fmt.Println(webhook.SigHeader+":", sig)
	// Output:
	// X-Service-Signature: t=1700000000,v1=c535a88f1cd285edcf3b6aa43a94487f8c362be96ce08247a360eb48cc093bc1
	// X-Service-Sig: sha256=ee3b4f2f8cf5c5a6ea5644225131e86fb52d54b03988aa505fe49683856555f9
}

func ExampleVerify() {
	secret := "whsec_test"
	body := []byte(`{"type":"New","invoiceId":"inv_1"}`)
	header := "t=1700000000,v1=c535a88f1cd285edcf3b6aa43a94487f8c362be96ce08247a360eb48cc093bc1,v2=from-a-later-scheme"

	signedAt := time.Unix(1700000000, 0)
	fmt.Println(webhook.Verify(secret, body, header, signedAt.Add(time.Minute), webhook.DefaultTolerance))
	err := webhook.Verify(secret, body, header, signedAt.Add(time.Hour), webhook.DefaultTolerance)
	fmt.Println(errors.Is(err, webhook.ErrTooOld))
	// Output:
	// <nil>
	// true
}

func ExampleParseSignature() {
	sig, err := webhook.ParseSignature("t=1700000000, v1=c535a88f1cd285edcf3b6aa43a94487f8c362be96ce08247a360eb48cc093bc1, v2=ignored")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sig.Time().UTC().Format(time.RFC3339), len(sig.V1))
	_, err = webhook.ParseSignature("t=1700000000")
	fmt.Println(err)
	// Output:
	// 2023-11-14T22:13:20Z 1
	// webhook: malformed signature header: no v1 element
}
