package http

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// rateLimiter keeps one token bucket per API key. Buckets exist only for
// keys that authenticated, so their number is bounded by the keys issued.
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

func newRateLimiter(rate float64, burst int, clock kassa.Clock) *rateLimiter {
	if burst < 1 {
		burst = max(1, int(math.Ceil(rate)))
	}
	return &rateLimiter{rate: rate, burst: float64(burst), clock: clock, buckets: map[string]*bucket{}}
}

// allow takes a token from key's bucket. When there is none it returns
// false and how long until there is one.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b, ok := l.buckets[key]
	if !ok {
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

// rateLimit answers 429 with Retry-After (whole seconds, at least 1) when
// the caller's key has used up its bucket.
func (s *server) rateLimit(next http.Handler) http.Handler {
	if s.limiter == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := callerFrom(r.Context())
		ok, wait := s.limiter.allow(c.store.ID + "/" + c.key.ID)
		if !ok {
			secs := max(1, int(math.Ceil(wait.Seconds())))
			w.Header().Set("Retry-After", strconv.Itoa(secs))
			s.writeError(w, r, kassa.Errorf(kassa.RateLimited, "too many requests: retry in %d s", secs))
			return
		}
		next.ServeHTTP(w, r)
	})
}
