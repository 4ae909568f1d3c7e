// Package webhook signs and verifies the webhook deliveries of the Kassa
// payment service, and describes the event payload that they carry.
//
// Merchants import this package in the program that receives webhooks; the
// service uses the same code to sign what it sends. The package depends on
// nothing but the Go standard library.
//
// # Signatures
//
// Every delivery is an HTTP POST with a JSON body and two headers, both
// computed with the webhook's signing secret using HMAC-SHA256 and
// lower-case hexadecimal output:
//
//	X-Service-Signature: t=<unix-seconds>,v1=<hex>   signs "<t>.<raw body>"
//	X-Service-Sig: sha256=<hex>                      signs the raw body only
//
// Prefer X-Service-Signature: its timestamp lets a receiver refuse a
// captured delivery that is replayed later ([Verify] rejects a t more than
// [DefaultTolerance] away from the current time). X-Service-Sig gives no
// replay protection; it exists for simple receivers and for simulated
// deliveries ([VerifySig]). A later signature scheme will add an element
// such as v2= inside X-Service-Signature rather than a new header, so
// [ParseSignature] ignores elements it does not know.
//
// Always verify the raw bytes of the body as received, before decoding
// them: re-encoding decoded JSON does not give the same bytes. [VerifyRequest]
// reads the body of a [net/http.Request] (at most [MaxBodySize] bytes),
// checks the headers and returns the verified body.
//
// # Events
//
// The body is an [Event]: its type (New, Processing, Settled, Expired), the
// invoice id, the metadata given when the invoice was created (metadata.orderId
// carries the merchant's order id), the additionalStatus and, on Expired
// events, isUnderpaid.
//
// A delivery is attempted once; a receiver that is unreachable or answers
// with a status other than 2xx makes it fail, and the merchant can redeliver
// it from the dashboard or through the API. A redelivered event carries only
// type and invoiceId and is signed at redelivery time. Receivers must
// therefore be idempotent: the same event can arrive twice, for example
// when a delivery that the receiver did process is redelivered. Every
// delivery names its event in the header X-Service-Event-Id
// ([EventIDHeader]), the same for every attempt at that event, and itself
// in X-Service-Delivery-Id ([DeliveryIDHeader]): keep the event ids you
// have processed to recognise a repeat, and fetch the invoice from the API
// when the payload lacks what you need.
package webhook
