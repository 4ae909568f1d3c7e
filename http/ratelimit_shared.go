package http

import (
	"net/http"
	"time"

	"github.com/kassapay/kassa"
)

// RateLimiter is the per-API-key limiter of the merchant API, shared
// with BTCPay's Greenfield API (package greenfield), so that a key has
// one budget whichever API it calls (Deps.Limiter).
type RateLimiter struct{ l *rateLimiter }

// NewRateLimiter returns a limiter of rate requests a second per key with
// burst in a full bucket; a rate of zero or less allows everything.
func NewRateLimiter(rate float64, burst int, clock kassa.Clock) *RateLimiter {
	return &RateLimiter{newRateLimiter(rate, burst, clock)}
}

// Allow takes a token from key's bucket. When there is none it returns
// false and how long until there is one. A nil limiter allows all.
func (l *RateLimiter) Allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	return l.l.allow(key)
}

// KeyBucket is the limiter key of an API key of a store: the same in
// both APIs.
func KeyBucket(storeID, keyID string) string { return storeID + "/" + keyID }

// ClientAddress is the key of a client's address buckets: its IP address,
// IPv6 addresses cut to their /64. With clientIPHeader set (behind a
// reverse proxy) it is the last address in that header.
func ClientAddress(r *http.Request, clientIPHeader string) string {
	s := server{Deps: Deps{ClientIPHeader: clientIPHeader}}
	return s.clientAddress(r)
}
