// Package dashboard is the merchant dashboard: server-rendered pages under
// /dashboard for accounts, stores and their settings, API keys, webhooks
// and their deliveries, invoices, pay links, transactions (with a CSV
// export) and the prepaid balance.
//
// Every change goes through the same services the API uses (the store
// actors); the dashboard's own records (users, sessions, invitations,
// top-ups) live in the key-value port. Pages embed their templates, style
// sheet and one small script, load nothing from other origins and are
// served under a strict Content-Security-Policy. See docs/decisions.md
// ("The merchant dashboard").
package dashboard
