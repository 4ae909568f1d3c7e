// Package http is Kassa's HTTP adapter: a chi router that serves the
// merchant API of docs/api.md under /api/v1, the admin API the kassa command
// line uses under /admin/v1, and the customer pages (checkout and pay
// link) under /checkout and /payment-requests, with /i/{invoiceId} as a
// short link to the checkout page.
//
// The package turns requests into calls of the domain interfaces
// (kassa.Reader for reads; kassa.InvoiceService, kassa.PaymentRequestService,
// kassa.StoreService and kassa.WebhookService for changes) and renders
// their results as the wire format of docs/api.md. It holds
// no state of its own beyond its rate-limit buckets; idempotency
// records live in a kassa.KeyValue.
//
// Conventions of every /api/v1 endpoint:
//
//   - Authentication by the x-api-key header (also "Authorization:
//     X-Api-Key <key>", "token <key>" or "Bearer <key>"). A missing or
//     unknown key is 401, a key of another store 403, a resource of
//     another store 404.
//   - Errors have one JSON shape, {"code","message"} plus "errors" (an
//     array of {"field","message"}) on validation failures. The code to
//     status table is in error.go and nowhere else.
//   - Request bodies are JSON of at most 1 MiB; amounts are JSON numbers
//     or decimal strings and never pass through float64.
//   - Lists stream everything in range unless a limit is given; then the
//     next page's cursor is in the Next-Cursor header.
//   - A POST with an Idempotency-Key header answers the first response
//     again for 24 hours.
//
// Responses that carry a secret (the store with its API key, webhooks with
// their signing secret) have Cache-Control: no-store. The customer pages
// are rate-limited per client address and per pay link (ratelimit.go).
// They speak the customer's language (package i18n), carry a strict
// Content-Security-Policy with no inline script (page.go), and their one
// script and style sheet are embedded under /checkout-assets/.
//
// Every request gets an OpenTelemetry span named after its method and
// route pattern, and one access-log line.
package http
