// Package lnurl is a small LNURL-pay client: what Kassa needs to send a
// store's money to its Lightning address.
//
// It implements, from the LNURL specifications (the LUDs):
//
//   - LUD-16: a Lightning address user@domain names the pay request at
//     https://domain/.well-known/lnurlp/user (http for .onion hosts).
//   - LUD-01: a bech32 "lnurl1…" string (or an https URL) names it too.
//   - LUD-06: the pay request ({tag:"payRequest", callback, minSendable,
//     maxSendable, metadata}) bounds the amount in millisatoshis; the
//     callback, called with ?amount=MSAT, answers a BOLT11 invoice {pr}.
//     The invoice is checked before anyone pays it: its amount must be
//     exactly the amount asked for (a server that answers an invoice for
//     more is refused), its network must be ours, and when it carries a
//     description hash that hash must be the SHA-256 of the metadata.
//   - LUD-12: a comment is passed when the pay request allows one
//     (commentAllowed > 0), cut to the length it allows.
//
// Every request goes through the HTTP client the caller gives, which in
// the service is the egress client: it refuses loopback, private and other
// non-public addresses (server-side request forgery through a merchant's
// Lightning address), follows no redirect and uses no proxy. This package
// adds its own limits: https only (unless AllowHTTP, for tests), the
// callback must be https too, answers are read up to MaxResponseBody, and
// a {"status":"ERROR","reason":…} answer is reported with its reason.
package lnurl
