// Package egress is the service's outbound HTTP client for merchants'
// webhook URLs: it checks a URL when a webhook is registered ([Client.Validate])
// and sends each delivery ([Client.Deliver]).
//
// Webhook URLs come from merchants, so every request is treated as a
// possible server-side request forgery. Unless [Config.AllowPrivate] is set
// (the --dev flag), a Client refuses to connect to any address that is not
// public unicast: loopback, private (RFC 1918, fc00::/7), link-local,
// unspecified, multicast, carrier-grade NAT (100.64.0.0/10), documentation,
// benchmarking and reserved ranges, and IPv6 forms that embed such an IPv4
// address. The check is made on the addresses the Client itself resolved and
// then dials, and once more on the socket address just before it connects,
// so a name that resolves to a public address when checked and to a private
// one a moment later (DNS rebinding) gains nothing. Environment proxies are
// not used, redirects are not followed, and response bodies are read only
// up to [MaxResponseBody] bytes.
//
// Errors meant for the merchant are *kassa.Error values with code
// kassa.Invalid whose message says what happened, for example
// "webhook URL answered 404 Not Found" or
// "webhook URL did not answer within 5s".
package egress
