// Package greenfield serves BTCPay Server's Greenfield API for BTCPay's
// shop plugins (WooCommerce Greenfield and the others built on
// btcpayserver-greenfield-php): a second HTTP adapter over the same
// service ports as package http, mounted under /greenfield
// (docs/decisions.md, "BTCPay's Greenfield API under its own base
// URL").
//
// The adapter translates and decides nothing (DESIGN.md §9): amounts,
// statuses, fees and what a key may do come from the domain; this
// package renames them, reshapes them and turns kassa errors into
// Greenfield's: {"code","message"}, and 422 with [{"path","message"}]
// for bad fields. Every shape is BTCPay's version BTCPayVersion.
//
// Conventions:
//
//   - Authentication by "Authorization: token <key>", the store's API
//     keys looked up as package http does (kassahttp.StoreByKey). Every
//     route asks the request's kassa.Principal for the permission
//     routePermissions names; a key made without a choice of permissions
//     holds every one of StorePermissions, and api-keys/current reports
//     those, or exactly the ones a key was made with.
//   - A key lacking the permission, or another store's id, is 403
//     missing-permission; another store's invoice under one's own store
//     is 404 invoice-not-found.
//   - A route Kassa does not serve answers with a message naming it as
//     unsupported; nothing is stored on bad input.
//   - checkout.speedPolicy and expirationMinutes become the invoice's own
//     confirmations and expiry (kassa.InvoiceRequest, bounded there).
//     Create fields with no domain counterpart yet (monitoringMinutes,
//     paymentTolerance, defaultPaymentMethod, lazyPaymentMethods,
//     receipt, additionalSearchTerms) are checked for their type and
//     ignored; answers report the invoice's real values.
//   - Refunds (refund.go) are BTCPay's pull payments and payouts over
//     kassa.RefundService: a pull payment's viewLink is
//     PublicURL/pull-payments/<id>; GET /api/v1/pull-payments/{id} is
//     served without a key, as BTCPay does.
//   - Webhooks registered here are Greenfield-format (kassa.FormatGreenfield):
//     delivered as BTCPay's WebhookInvoiceEvent, signed BTCPay-Sig, and
//     registered without the unsigned probe; the webhook routes see only
//     Greenfield-format webhooks.
package greenfield
