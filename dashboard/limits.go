package dashboard

import (
	"context"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kassapay/kassa"
)

// Limits of sign-in and sign-up, counted in fixed windows in memory.
// An attempt is counted before its password is hashed, so that parallel
// requests cannot all pass the check before the first one fails; a
// success gives its attempt back. Clients are counted by network: an
// IPv4 address, or the /64 of an IPv6 one (one subscriber's).
const (
	loginWindow = 15 * time.Minute
	// maxFailsAddress is the sign-ins a client network may fail, on any
	// accounts.
	maxFailsAddress = 20
	// maxFailsAccount is the sign-ins a client network may fail on one
	// account. The lock is the client's, not the account's: a stranger's
	// wrong passwords do not lock the merchant out.
	maxFailsAccount = 5
	// maxSignupsAddress is the sign-ups a client network may try.
	maxSignupsAddress = 10
	// maxTracked bounds the counters kept.
	maxTracked = 100_000
	// maxKeyPart bounds what a key takes from the request.
	maxKeyPart = 300
)

func addressKey(network string) string { return "ip:" + network }
func accountKey(network, account string) string {
	if len(account) > maxKeyPart {
		account = account[:maxKeyPart]
	}
	return "acct:" + account + "\x00" + network
}
func signupKey(network string) string { return "signup:" + network }

// limit is a counter and how many attempts it allows in a window.
type limit struct {
	key string
	max int
}

// attemptLimiter counts attempts in fixed windows.
type attemptLimiter struct {
	clock kassa.Clock
	mu    sync.Mutex
	byKey map[string]*window
}

type window struct {
	start time.Time
	n     int
}

func newAttemptLimiter(c kassa.Clock) *attemptLimiter {
	return &attemptLimiter{clock: c, byKey: map[string]*window{}}
}

// take counts an attempt under every limit, unless one of them is
// reached: then it counts nothing and returns how long until that
// window ends.
func (l *attemptLimiter) take(limits ...limit) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.clock.Now()
	var wait time.Duration
	for _, lim := range limits {
		if w, ok := l.byKey[lim.key]; ok && now.Sub(w.start) < loginWindow && w.n >= lim.max {
			wait = max(wait, loginWindow-now.Sub(w.start))
		}
	}
	if wait > 0 {
		return wait
	}
	l.makeRoom(now)
	for _, lim := range limits {
		w, ok := l.byKey[lim.key]
		if !ok || now.Sub(w.start) >= loginWindow {
			w = &window{start: now}
			l.byKey[lim.key] = w
		}
		w.n++
	}
	return 0
}

// makeRoom drops the ended windows when the map is full, and then, if it
// is still full, some live ones (map order is random). l.mu is held.
func (l *attemptLimiter) makeRoom(now time.Time) {
	if len(l.byKey) < maxTracked {
		return
	}
	for k, w := range l.byKey {
		if now.Sub(w.start) >= loginWindow {
			delete(l.byKey, k)
		}
	}
	for k := range l.byKey {
		if len(l.byKey) < maxTracked*9/10 {
			break
		}
		delete(l.byKey, k)
	}
}

// give returns an attempt taken under each key: it did not fail (it
// succeeded, or it was refused before its password was checked).
func (l *attemptLimiter) give(keys ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, k := range keys {
		if w, ok := l.byKey[k]; ok && w.n > 0 {
			w.n--
		}
	}
}

// forget drops key's count.
func (l *attemptLimiter) forget(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.byKey, key)
}

// clientNetwork is what the limits count a request's client by: its
// address (see clientIP), IPv6 by its /64.
func (h *Dashboard) clientNetwork(r *http.Request) string {
	ip := h.clientIP(r)
	a, err := netip.ParseAddr(ip)
	if err != nil {
		if len(ip) > maxKeyPart {
			ip = ip[:maxKeyPart]
		}
		return ip
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}

// hashGate bounds the password hashes run at once: each argon2id takes
// 19 MiB and a core's worth of work, and sign-in is open to anyone. A
// request waits a little for a slot, a bounded number of them; past
// that it is answered 503 at once.
type hashGate struct {
	slots      chan struct{}
	waiting    atomic.Int64
	maxWaiting int64
	wait       time.Duration
}

func newHashGate(slots int) *hashGate {
	slots = max(slots, 1)
	return &hashGate{slots: make(chan struct{}, slots), maxWaiting: int64(8 * slots), wait: 2 * time.Second}
}

// defaultHashSlots is the number of cores.
func defaultHashSlots() int { return runtime.GOMAXPROCS(0) }

// acquire takes a slot, or reports false when none came free in time.
func (g *hashGate) acquire(ctx context.Context) bool {
	select {
	case g.slots <- struct{}{}:
		return true
	default:
	}
	if g.waiting.Add(1) > g.maxWaiting {
		g.waiting.Add(-1)
		return false
	}
	defer g.waiting.Add(-1)
	t := time.NewTimer(g.wait)
	defer t.Stop()
	select {
	case g.slots <- struct{}{}:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
}

func (g *hashGate) release() { <-g.slots }

// errBusy says every hashing slot is taken.
var errBusy = kassa.Errorf(kassa.Unavailable, "too many sign-ins at once")

// busyRetry is the Retry-After of a 503 for a full gate, in seconds.
const busyRetry = "2"

// hash returns the PHC string of password (hashPassword) within the
// gate.
func (h *Dashboard) hash(ctx context.Context, password string) (string, error) {
	if !h.gate.acquire(ctx) {
		return "", errBusy
	}
	defer h.gate.release()
	return hashPassword(password), nil
}

// check compares password with encoded (checkPassword) within the gate.
func (h *Dashboard) check(ctx context.Context, encoded, password string) (bool, error) {
	if !h.gate.acquire(ctx) {
		return false, errBusy
	}
	defer h.gate.release()
	return checkPassword(encoded, password), nil
}
