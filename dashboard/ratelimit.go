package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// Limits bound what one signed-in account does: how many stores it may
// create, and how fast it may write (every form it posts once signed in)
// and search (an invoice list filtered by text or status, which may read
// thousands of invoices, and a CSV export). Rates are per account, with a
// burst. In Deps, a zero field takes its default (DefaultLimits) and a
// negative one turns that limit off.
type Limits struct {
	// StoresPerAccount is the most stores an account may own.
	StoresPerAccount int
	// WritesPerMinute and WriteBurst limit an account's posted forms.
	WritesPerMinute int
	WriteBurst      int
	// SearchesPerMinute and SearchBurst limit an account's searches.
	SearchesPerMinute int
	SearchBurst       int
}

// DefaultLimits are the limits of a dashboard that sets none.
func DefaultLimits() Limits {
	return Limits{StoresPerAccount: 20, WritesPerMinute: 30, WriteBurst: 20, SearchesPerMinute: 10, SearchBurst: 5}
}

// withDefaults is l with each zero field set to its default.
func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	for _, f := range []struct{ v, def *int }{
		{&l.StoresPerAccount, &d.StoresPerAccount}, {&l.WritesPerMinute, &d.WritesPerMinute}, {&l.WriteBurst, &d.WriteBurst},
		{&l.SearchesPerMinute, &d.SearchesPerMinute}, {&l.SearchBurst, &d.SearchBurst},
	} {
		if *f.v == 0 {
			*f.v = *f.def
		}
	}
	return l
}

// rateLimiter allows each key perMinute events a minute, burst of them
// at once (GCRA: one theoretical arrival time per key). A nil limiter
// allows everything.
type rateLimiter struct {
	clock    kassa.Clock
	interval time.Duration // between two events at the steady rate
	slack    time.Duration // how far ahead of now a key may run: burst-1 intervals
	mu       sync.Mutex
	next     map[string]time.Time
}

func newRateLimiter(c kassa.Clock, perMinute, burst int) *rateLimiter {
	if perMinute < 0 {
		return nil
	}
	burst = max(burst, 1)
	interval := time.Minute / time.Duration(perMinute)
	return &rateLimiter{clock: c, interval: interval, slack: interval * time.Duration(burst-1), next: map[string]time.Time{}}
}

// take counts an event of key, or, when key is over its limit, counts
// nothing and returns how long until it may try again.
func (l *rateLimiter) take(key string) time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	tat, ok := l.next[key]
	if !ok || tat.Before(now) {
		tat = now
	}
	if ahead := tat.Sub(now); ahead > l.slack {
		return ahead - l.slack
	}
	if len(l.next) >= maxTracked {
		// A key whose time has passed has its whole burst: dropping it
		// changes nothing.
		for k, t := range l.next {
			if !t.After(now) {
				delete(l.next, k)
			}
		}
	}
	if len(l.next) < maxTracked {
		l.next[key] = tat.Add(l.interval)
	}
	return 0
}

// retryAfter is the Retry-After value of wait: whole seconds, at least 1.
func retryAfter(wait time.Duration) int64 {
	return max(int64((wait+time.Second-1)/time.Second), 1)
}

// limitWrites refuses a signed-in account's posted form over the write
// limit: 429 with Retry-After and a page that says when to try again.
// Reads pass.
func (h *Dashboard) limitWrites(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		if wait := h.writes.take(current(r.Context()).Email); wait > 0 {
			secs := retryAfter(wait)
			w.Header().Set("Retry-After", itoa(secs))
			h.failMessage(w, r, http.StatusTooManyRequests, func(lang string) string {
				return fmt.Sprintf(msgIn(lang, "err.writelimit"), secs)
			})
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowSearch counts a search of the signed-in account; over the limit
// it sets Retry-After and returns the message to show with a 429.
func (h *Dashboard) allowSearch(w http.ResponseWriter, r *http.Request) (string, bool) {
	wait := h.searches.take(current(r.Context()).Email)
	if wait == 0 {
		return "", true
	}
	secs := retryAfter(wait)
	w.Header().Set("Retry-After", itoa(secs))
	return fmt.Sprintf(tr(r, "err.searchlimit"), secs), false
}

// storeReservations counts the stores being created per account, so
// that parallel creations cannot together pass the cap.
type storeReservations struct {
	mu      sync.Mutex
	pending map[string]int
}

// errStoreCap refuses a store over the account's cap.
type errStoreCap int

func (e errStoreCap) Error() string { return e.in("en") }

// in is the refusal in lang.
func (e errStoreCap) in(lang string) string { return fmt.Sprintf(msgIn(lang, "err.storecap"), int(e)) }

// reserveStore holds a place for one more store of email under the cap,
// or returns errStoreCap. end gives the place back; given record (the
// store written into the account), it runs record first under the same
// lock, so that no reservation counts the new store twice, in the
// account and as pending. Only end's first call counts.
func (h *Dashboard) reserveStore(ctx context.Context, email string) (end func(record func() error) error, err error) {
	limit := h.Limits.StoresPerAccount
	if limit < 0 {
		return func(record func() error) error {
			if record == nil {
				return nil
			}
			return record()
		}, nil
	}
	rs := &h.storeRes
	rs.mu.Lock()
	defer rs.mu.Unlock()
	// The account as stored now: a creation that ended has written its
	// store there as it gave its reservation back.
	u, err := h.user(ctx, email)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, kassa.Errorf(kassa.NotFound, "account not found")
	}
	if len(u.StoreIDs)+rs.pending[email] >= limit {
		return nil, errStoreCap(limit)
	}
	if rs.pending == nil {
		rs.pending = map[string]int{}
	}
	rs.pending[email]++
	ended := false
	return func(record func() error) error {
		rs.mu.Lock()
		defer rs.mu.Unlock()
		if ended {
			return nil
		}
		ended = true
		if rs.pending[email]--; rs.pending[email] <= 0 {
			delete(rs.pending, email)
		}
		if record == nil {
			return nil
		}
		return record()
	}, nil
}
