package http

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// maxBuckets bounds the buckets of one limiter. The per-key limiter never
// comes near it; the public ones are keyed by client address and pay-link
// id, which callers choose, so a full limiter first forgets the buckets
// that have filled up again (their callers have been quiet long enough
// to be back at a full burst) and, if that is not enough, all of them.
const maxBuckets = 100_000

// rateLimiter keeps one token bucket per key: an API key, a client
// address or a pay link.
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64
	clock kassa.Clock

	mu      sync.Mutex
	buckets map[string]*bucket
}

// bucket is a token bucket: tokens as of last.
type bucket struct {
	tokens float64
	last   time.Time
}

// newRateLimiter returns a limiter of rate tokens a second with burst
// tokens in a full bucket (burst < 1: the rate rounded up), or nil when
// rate is not positive: a nil limiter allows everything.
func newRateLimiter(rate float64, burst int, clock kassa.Clock) *rateLimiter {
	if rate <= 0 {
		return nil
	}
	if burst < 1 {
		burst = max(1, int(math.Ceil(rate)))
	}
	return &rateLimiter{rate: rate, burst: float64(burst), clock: clock, buckets: map[string]*bucket{}}
}

// allow takes a token from key's bucket. When there is none it returns
// false and how long until there is one.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
		if len(l.buckets) >= maxBuckets {
			l.forgetFull(now)
		}
		b = &bucket{tokens: l.burst, last: now}
		l.buckets[key] = b
	}
	if elapsed := now.Sub(b.last).Seconds(); elapsed > 0 {
		b.tokens = math.Min(l.burst, b.tokens+elapsed*l.rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// forgetFull drops the buckets that are full again as of now (a new
// bucket would be the same), and every bucket if that frees less than a
// tenth of the limiter. The caller holds l.mu.
func (l *rateLimiter) forgetFull(now time.Time) {
	for key, b := range l.buckets {
		if b.tokens+now.Sub(b.last).Seconds()*l.rate >= l.burst {
			delete(l.buckets, key)
		}
	}
	if len(l.buckets) > maxBuckets*9/10 {
		clear(l.buckets)
	}
}

// retryAfter answers 429 with Retry-After (whole seconds, at least 1):
// in the JSON error shape, or as an HTML page when page is set.
func (s *server) retryAfter(w http.ResponseWriter, r *http.Request, wait time.Duration, page bool) {
	secs := max(1, int(math.Ceil(wait.Seconds())))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	err := kassa.Errorf(kassa.RateLimited, "too many requests: retry in %d s", secs)
	if page {
		s.pageError(w, r, err)
		return
	}
	s.writeError(w, r, err)
}

// rateLimit answers 429 when the caller's API key has used up its
// bucket.
func (s *server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := callerFrom(r.Context())
		if ok, wait := s.limiter.allow(KeyBucket(c.store.ID, c.key.ID)); !ok {
			s.retryAfter(w, r, wait, false)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// PublicLimits are the rate limits of the customer pages, which need no
// API key (docs/decisions.md, "Rate limits of the public pages"). A rate
// of zero or less turns that limit off.
type PublicLimits struct {
	// PageRate is the requests per second a client address may make to
	// the checkout and pay-link pages, their status polls and their
	// simulation buttons; PageBurst is its bucket.
	PageRate  float64
	PageBurst int
	// PayRate is the pay-link payments (each may create an invoice) per
	// second a client address may make; PayBurst is its bucket.
	PayRate  float64
	PayBurst int
	// PayLinkRate is the payments per second of one pay link, whatever
	// the address; PayLinkBurst is its bucket.
	PayLinkRate  float64
	PayLinkBurst int
}

// DefaultPublicLimits returns limits that a customer never meets: a
// checkout page polls its status every 2 s, and a customer pays a link a
// few times at most. An office or a mobile carrier may put many
// customers behind one address, so the page limit is generous; the pay
// limits are tight, because every payment may take an invoice, a
// Lightning invoice and a wallet address.
func DefaultPublicLimits() PublicLimits {
	return PublicLimits{
		PageRate: 20, PageBurst: 100,
		PayRate: 10.0 / 60, PayBurst: 10,
		PayLinkRate: 20.0 / 60, PayLinkBurst: 20,
	}
}

// publicLimiters are the buckets of PublicLimits.
type publicLimiters struct {
	page, pay, payLink *rateLimiter
}

func newPublicLimiters(l PublicLimits, clock kassa.Clock) publicLimiters {
	return publicLimiters{
		page:    newRateLimiter(l.PageRate, l.PageBurst, clock),
		pay:     newRateLimiter(l.PayRate, l.PayBurst, clock),
		payLink: newRateLimiter(l.PayLinkRate, l.PayLinkBurst, clock),
	}
}

// limitPages answers 429 when the client's address has used up its page
// bucket: as a page, or as JSON on the status poll.
func (s *server) limitPages(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ok, wait := s.public.page.allow(s.clientAddress(r)); !ok {
			s.retryAfter(w, r, wait, !strings.HasSuffix(r.URL.Path, "/status"))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// clientAddress is the key of a client's public buckets: its IP address,
// IPv6 addresses cut to their /64 (what one customer's network gets).
// With Deps.ClientIPHeader set (behind a reverse proxy) the address is
// the last one in that header, the one the proxy added.
func (s *server) clientAddress(r *http.Request) string {
	addr, ok := clientIP(r, s.ClientIPHeader)
	if !ok {
		return "?" // unparsable: all such clients share one bucket
	}
	if addr.Is6() {
		prefix, _ := addr.Prefix(64)
		return prefix.String()
	}
	return addr.String()
}

// clientIP is the client's IP address: the connection's, or with
// clientIPHeader set (behind a reverse proxy) the last address in that
// header, the one the proxy added; ok is false when it does not parse.
func clientIP(r *http.Request, clientIPHeader string) (addr netip.Addr, ok bool) {
	raw := r.RemoteAddr
	if host, _, err := net.SplitHostPort(raw); err == nil {
		raw = host
	}
	if clientIPHeader != "" {
		if values := r.Header.Values(clientIPHeader); len(values) > 0 {
			last := values[len(values)-1]
			if i := strings.LastIndexByte(last, ','); i >= 0 {
				last = last[i+1:]
			}
			raw = strings.TrimSpace(last)
		}
	}
	addr, err := netip.ParseAddr(raw)
	if err != nil {
		return netip.Addr{}, false
	}
	return addr.Unmap(), true
}

// ClientIP is the client's IP address as the store's history records
// it (kassa.Actor.Addr), whole, by the rule of the rate limits
// (clientAddress); "?" when it does not parse.
func ClientIP(r *http.Request, clientIPHeader string) string {
	addr, ok := clientIP(r, clientIPHeader)
	if !ok {
		return "?"
	}
	return addr.String()
}
