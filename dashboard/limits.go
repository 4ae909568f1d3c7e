package dashboard

import (
	"context"
	"net/http"
	"net/netip"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/kassapay/kassa"
)

// Limits of sign-in and sign-up, counted in fixed windows in memory.
// An attempt is counted before its password is hashed, so that parallel
// requests cannot all pass the check before the first one fails; a
// success gives its attempt back, an attempt turned away by a full gate
// only its account's count. Clients are counted by network: an IPv4
// address, or the /64 of an IPv6 one (one subscriber's); and by wider
// prefix, an IPv4 /24 or an IPv6 /48, so that one site's many networks
// cannot pose as many clients. A sign-in with a device cookie of the
// account (device.go) is counted by its cookie instead.
const (
	loginWindow = 15 * time.Minute
	// maxFailsAddress is the sign-ins a client network may fail, on any
	// accounts.
	maxFailsAddress = 20
	// maxFailsAccount is the sign-ins a client network may fail on one
	// account. The lock is the client's, not the account's: a stranger's
	// wrong passwords do not lock the merchant out.
	maxFailsAccount = 5
	// maxFailsWide is the sign-ins a wider prefix may fail.
	maxFailsWide = 100
	// maxFailsDevice is the sign-ins a device cookie may fail before it
	// is no longer honoured in the window.
	maxFailsDevice = 5
	// maxSignupsAddress is the sign-ups a client network may try.
	maxSignupsAddress = 10
	// maxSignupsWide is the sign-ups a wider prefix may try.
	maxSignupsWide = 50
	// maxTracked bounds the counters kept.
	maxTracked = 100_000
	// maxKeyPart bounds what a key takes from the request.
	maxKeyPart = 300
)

func addressKey(network string) string { return "ip:" + network }
func wideKey(wide string) string       { return "wide:" + wide }
func accountKey(network, account string) string {
	if len(account) > maxKeyPart {
		account = account[:maxKeyPart]
	}
	return "acct:" + account + "\x00" + network
}
func signupKey(network string) string  { return "signup:" + network }
func signupWideKey(wide string) string { return "signup-wide:" + wide }

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

// clientNetworks are what the limits count a request's client by: its
// address (see clientIP), IPv6 by its /64; and its wider prefix, an IPv4
// /24 or an IPv6 /48. An address that does not parse is both.
func (h *Dashboard) clientNetworks(r *http.Request) (network, wide string) {
	ip := h.clientIP(r)
	a, err := netip.ParseAddr(ip)
	if err != nil {
		if len(ip) > maxKeyPart {
			ip = ip[:maxKeyPart]
		}
		return ip, ip
	}
	a = a.Unmap().WithZone("")
	if a.Is6() {
		p64, _ := a.Prefix(64)
		p48, _ := a.Prefix(48)
		return p64.String(), p48.String()
	}
	p24, _ := a.Prefix(24)
	return a.String(), p24.String()
}

// hashGate bounds the password hashes run at once: each argon2id takes
// 19 MiB and a core's worth of work, and sign-in is open to anyone. A
// request that finds every slot taken waits a little in a queue, or is
// answered 503 at once when its queue has no room for it.
//
// A freed slot goes first to the trusted (a sign-in with the account's
// device cookie, a signed-in user, the admin token), then to strangers'
// sign-ins and sign-ups in turn, so that neither starves the other.
// Strangers are held to a share of their queue per client network, per
// wider prefix (IPv4 /24, IPv6 /48) and per account; the trusted to a
// share per account. Invariant: a queue holds a waiter only while every
// slot is taken.
type hashGate struct {
	clock kassa.Clock
	slots int
	wait  time.Duration
	// maxWaiting bounds each strangers' queue (sign-ins, sign-ups);
	// maxTrusted the trusted one.
	maxWaiting, maxTrusted int
	// perNetwork, perWide and perAccount bound the waiters of one
	// client network, one wider prefix and one account in a queue.
	perNetwork, perWide, perAccount int

	mu                       sync.Mutex
	inUse                    int
	trusted, logins, signups []*waiter
	signupNext               bool           // the next stranger's slot goes to a sign-up, when both wait
	waitingBy                map[string]int // waiters by gateKeys
}

// ticket says who asks the gate for a slot. The zero ticket is a
// stranger's sign-in.
type ticket struct {
	trusted bool
	signup  bool
	// network and wide are the client's network and wider prefix
	// (clientNetworks); account is the email signed in to.
	network, wide, account string
}

// keys are the counters of waiters t is held to.
func (t ticket) keys() []string {
	if t.trusted {
		return []string{"t:" + t.account}
	}
	var keys []string
	if t.network != "" {
		keys = append(keys, "n:"+t.network)
	}
	if t.wide != "" && t.wide != t.network {
		keys = append(keys, "w:"+t.wide)
	}
	if t.account != "" {
		keys = append(keys, "a:"+t.account)
	}
	return keys
}

type waiter struct {
	t       ticket
	keys    []string
	ready   chan struct{} // closed when granted
	granted bool
}

func newHashGate(slots int, c kassa.Clock) *hashGate {
	slots = max(slots, 1)
	return &hashGate{clock: c, slots: slots, wait: 2 * time.Second,
		maxWaiting: 8 * slots, maxTrusted: 8 * slots,
		perNetwork: slots, perWide: 2 * slots, perAccount: 2 * slots,
		waitingBy: map[string]int{}}
}

// maxHashSlots bounds the hashes run at once whatever the cores: each
// holds argon's memory (19 MiB), kept for the next (argonMemory), so the
// slots are what a flood of sign-ins costs in memory: 4 hold 76 MiB, 64
// cores' worth would have held 1.2 GiB.
const maxHashSlots = 4

// defaultHashSlots is the number of cores, at most maxHashSlots.
func defaultHashSlots() int { return min(runtime.GOMAXPROCS(0), maxHashSlots) }

// acquire takes a slot for t, or reports false when its queue had no
// room for it or none came free in time.
func (g *hashGate) acquire(ctx context.Context, t ticket) bool {
	g.mu.Lock()
	if g.inUse < g.slots {
		g.inUse++
		g.mu.Unlock()
		return true
	}
	w := &waiter{t: t, keys: t.keys(), ready: make(chan struct{})}
	if !g.enqueue(w) {
		g.mu.Unlock()
		return false
	}
	g.mu.Unlock()
	timeout := make(chan struct{})
	cancel := g.clock.AfterFunc(g.wait, func() { close(timeout) })
	defer cancel()
	select {
	case <-w.ready:
		return true
	case <-timeout:
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted {
		return true
	}
	g.remove(w)
	return false
}

// enqueue puts w in its queue if there is room for it. g.mu is held.
func (g *hashGate) enqueue(w *waiter) bool {
	q, room := &g.logins, g.maxWaiting
	switch {
	case w.t.trusted:
		q, room = &g.trusted, g.maxTrusted
	case w.t.signup:
		q = &g.signups
	}
	if len(*q) >= room {
		return false
	}
	for _, k := range w.keys {
		most := g.perAccount
		switch k[0] {
		case 'n':
			most = g.perNetwork
		case 'w':
			most = g.perWide
		}
		if g.waitingBy[k] >= most {
			return false
		}
	}
	for _, k := range w.keys {
		g.waitingBy[k]++
	}
	*q = append(*q, w)
	return true
}

// remove takes w out of its queue and its counts. g.mu is held.
func (g *hashGate) remove(w *waiter) {
	for _, q := range []*[]*waiter{&g.trusted, &g.logins, &g.signups} {
		if i := slices.Index(*q, w); i >= 0 {
			*q = slices.Delete(*q, i, i+1)
		}
	}
	for _, k := range w.keys {
		if g.waitingBy[k]--; g.waitingBy[k] <= 0 {
			delete(g.waitingBy, k)
		}
	}
}

// release hands the slot to the next waiter, or frees it.
func (g *hashGate) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	var w *waiter
	switch {
	case len(g.trusted) > 0:
		w = g.trusted[0]
	case len(g.signups) > 0 && (g.signupNext || len(g.logins) == 0):
		w, g.signupNext = g.signups[0], false
	case len(g.logins) > 0:
		w, g.signupNext = g.logins[0], true
	}
	if w == nil {
		g.inUse--
		return
	}
	g.remove(w)
	w.granted = true
	close(w.ready)
}

// queued is the number of waiters.
func (g *hashGate) queued() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.trusted) + len(g.logins) + len(g.signups)
}

// errBusy says every hashing slot is taken.
var errBusy = kassa.Errorf(kassa.Unavailable, "too many sign-ins at once")

// busyRetry is the Retry-After of a 503 for a full gate, in seconds.
const busyRetry = "2"

// hash returns the PHC string of password (hashPassword) within the
// gate, as t.
func (h *Dashboard) hash(ctx context.Context, t ticket, password string) (string, error) {
	if !h.gate.acquire(ctx, t) {
		return "", errBusy
	}
	defer h.gate.release()
	return hashPassword(password), nil
}

// check compares password with encoded (checkPassword) within the gate,
// as t.
func (h *Dashboard) check(ctx context.Context, t ticket, encoded, password string) (bool, error) {
	if !h.gate.acquire(ctx, t) {
		return false, errBusy
	}
	defer h.gate.release()
	return checkPassword(encoded, password), nil
}
