package dashboard

import (
	"context"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"testing"
	"time"
)

// loginWith posts a sign-in from client address ip with the given
// cookies (the CSRF one is added) and returns the status and the
// answer's cookies.
func loginWith(t *testing.T, e *env, email, password, ip string, cookies ...*http.Cookie) (int, []*http.Cookie) {
	t.Helper()
	c := e.client()
	c.get("/dashboard/login")
	req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/login", strings.NewReader(url.Values{"email": {email}, "password": {password}, "csrf": {c.csrf}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Forwarded-For", ip)
	for _, ck := range cookies {
		req.AddCookie(ck)
	}
	res, err := c.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode, res.Cookies()
}

// signedInDevice makes shop@example.com, signs it in from ip and returns
// the device cookie the sign-in gave.
func signedInDevice(t *testing.T, e *env, ip string) *http.Cookie {
	t.Helper()
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "shop@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	code, cookies := loginWith(t, e, "shop@example.com", "correct horse battery", ip)
	if code != http.StatusSeeOther {
		t.Fatalf("first sign-in: %d", code)
	}
	for _, ck := range cookies {
		if ck.Name == deviceCookie {
			return &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	t.Fatalf("the sign-in gave no %s cookie: %v", deviceCookie, cookies)
	return nil
}

// heldGate is a gate of one slot whose slot the test holds, with no room
// for strangers to wait.
func heldGate(t *testing.T, e *env) *hashGate {
	t.Helper()
	g := newHashGate(1, e.clock)
	g.maxWaiting = 0
	if !g.acquire(t.Context(), ticket{trusted: true}) {
		t.Fatal("no slot")
	}
	e.dash.gate = g
	return g
}

// waitQueued yields until g has n waiters.
func waitQueued(g *hashGate, n int) {
	for g.queued() < n {
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

// TestDeviceCookieSignsInThroughFullGate: while strangers find every
// hashing slot taken and no room to wait (503), the merchant whose
// browser signed in before (its device cookie), from a new address,
// waits ahead of them and signs in once a slot frees. Before, the
// merchant was a stranger too: 503.
func TestDeviceCookieSignsInThroughFullGate(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	dev := signedInDevice(t, e, "192.0.2.1")
	g := heldGate(t, e)
	if code, _ := loginWith(t, e, "shop@example.com", "correct horse battery", "198.51.100.7"); code != http.StatusServiceUnavailable {
		t.Errorf("a stranger with the gate full: %d, want 503", code)
	}
	done := make(chan int, 1)
	go func() {
		code, _ := loginWith(t, e, "shop@example.com", "correct horse battery", "203.0.113.9", dev)
		done <- code
	}()
	waitQueued(g, 1)
	g.release()
	if code := <-done; code != http.StatusSeeOther {
		t.Errorf("the merchant's browser with the gate full: %d, want signed in", code)
	}
}

// TestDeviceCookieCookieFlags: the device cookie is HttpOnly,
// SameSite=Strict, scoped to the login, lives deviceLifetime and is
// Secure unless --dev.
func TestDeviceCookieCookieFlags(t *testing.T) {
	for _, dev := range []bool{false, true} {
		e := newEnv(t, func(d *Deps) { d.Dev = dev })
		c := e.client()
		if _, err := e.dash.createUser(t.Context(), newAccount{email: "shop@example.com", password: "correct horse battery"}); err != nil {
			t.Fatal(err)
		}
		c.get("/dashboard/login")
		_, _, hdr := c.post("/dashboard/login", url.Values{"email": {"shop@example.com"}, "password": {"correct horse battery"}})
		var got *http.Cookie
		for _, ck := range (&http.Response{Header: hdr}).Cookies() {
			if ck.Name == deviceCookie {
				got = ck
			}
		}
		if got == nil || !got.HttpOnly || got.SameSite != http.SameSiteStrictMode || got.Path != "/dashboard/login" ||
			got.Secure == dev || got.MaxAge != int(deviceLifetime/time.Second) {
			t.Errorf("dev %v: device cookie %+v", dev, got)
		}
	}
}

// TestDeviceCookieNotHeldToNetworkLimits: a network that failed
// maxFailsAddress sign-ins is refused (429), but the merchant's browser
// with its device cookie still signs in from it. Before, it was refused
// too.
func TestDeviceCookieNotHeldToNetworkLimits(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	dev := signedInDevice(t, e, "192.0.2.1")
	for i := range maxFailsAddress {
		loginFrom(t, e, "nobody"+itoa(int64(i))+"@example.com", "guess guess guess", "198.51.100.7")
	}
	if code := loginFrom(t, e, "shop@example.com", "correct horse battery", "198.51.100.7"); code != http.StatusTooManyRequests {
		t.Errorf("a stranger from the network over its limit: %d", code)
	}
	if code, _ := loginWith(t, e, "shop@example.com", "correct horse battery", "198.51.100.7", dev); code != http.StatusSeeOther {
		t.Errorf("the merchant's browser from that network: %d, want signed in", code)
	}
}

// TestDeviceCookieHonouredOnlyWhileValid: from a network over its limit
// the cookie is what signs the merchant in, so a 429 shows the cookie
// was not honoured: a tampered one, one of another account, one past
// deviceLifetime, one from before a password change, and one that
// failed maxFailsDevice times.
func TestDeviceCookieHonouredOnlyWhileValid(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	dev := signedInDevice(t, e, "192.0.2.1")
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "other@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	blocked := "198.51.100.7"
	block := func() {
		for i := range maxFailsAddress {
			loginFrom(t, e, "nobody"+itoa(int64(i))+"@example.com", "guess guess guess", blocked)
		}
	}
	try := func(what, email string, ck *http.Cookie, want int) {
		t.Helper()
		block()
		if code, _ := loginWith(t, e, email, "correct horse battery", blocked, ck); code != want {
			t.Errorf("%s: %d, want %d", what, code, want)
		}
	}
	tampered := *dev
	parts := strings.Split(dev.Value, ".")
	parts[1] += "0"
	tampered.Value = strings.Join(parts, ".")
	try("a tampered cookie", "shop@example.com", &tampered, http.StatusTooManyRequests)
	try("the cookie for another account", "other@example.com", dev, http.StatusTooManyRequests)
	try("the cookie", "shop@example.com", dev, http.StatusSeeOther)

	for range maxFailsDevice {
		loginWith(t, e, "shop@example.com", "wrong wrong wrong", blocked, dev)
	}
	try("the cookie after its failures", "shop@example.com", dev, http.StatusTooManyRequests)
	e.clock.Advance(loginWindow)
	try("the cookie in the next window", "shop@example.com", dev, http.StatusSeeOther)

	e.clock.Advance(deviceLifetime - loginWindow)
	try("the cookie after its lifetime", "shop@example.com", dev, http.StatusTooManyRequests)

	fresh := signedInDeviceAgain(t, e)
	if err := e.dash.setPassword(t.Context(), "shop@example.com", "another horse battery", nil, nil); err != nil {
		t.Fatal(err)
	}
	block()
	if code, _ := loginWith(t, e, "shop@example.com", "another horse battery", blocked, fresh); code != http.StatusTooManyRequests {
		t.Errorf("a cookie from before a password change: %d, want 429", code)
	}
}

// signedInDeviceAgain signs shop@example.com in from a fresh address and
// returns its new device cookie.
func signedInDeviceAgain(t *testing.T, e *env) *http.Cookie {
	t.Helper()
	_, cookies := loginWith(t, e, "shop@example.com", "correct horse battery", "192.0.2.200")
	for _, ck := range cookies {
		if ck.Name == deviceCookie {
			return &http.Cookie{Name: ck.Name, Value: ck.Value}
		}
	}
	t.Fatal("no device cookie")
	return nil
}

// TestBusyCountsAgainstNetwork: sign-ins turned away by a full gate
// (503) count against the client's network: after maxFailsAddress of
// them it is refused (429) with a slot free; the account from another
// network still signs in. Before, a 503 cost the sender nothing.
func TestBusyCountsAgainstNetwork(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "shop@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	g := heldGate(t, e)
	for i := range maxFailsAddress {
		if code := loginFrom(t, e, "nobody"+itoa(int64(i))+"@example.com", "guess guess guess", "2001:db8:5:6::"+itoa(int64(i+1))); code != http.StatusServiceUnavailable {
			t.Fatalf("sign-in %d with the gate full: %d", i, code)
		}
	}
	g.release()
	if code := loginFrom(t, e, "shop@example.com", "correct horse battery", "2001:db8:5:6::abc"); code != http.StatusTooManyRequests {
		t.Errorf("the network after %d turned away: %d, want 429", maxFailsAddress, code)
	}
	if code := loginFrom(t, e, "shop@example.com", "correct horse battery", "2001:db8:5:7::1"); code != http.StatusSeeOther {
		t.Errorf("another network: %d", code)
	}
}

// TestLoginLimitCountsWidePrefix: failures from many /64s of one IPv6
// /48, or many addresses of one IPv4 /24, add up to maxFailsWide, past
// which every network of the prefix is refused; another prefix is not.
// Before, a /48 counted as 65,536 clients.
func TestLoginLimitCountsWidePrefix(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "shop@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	for i := range maxFailsWide {
		loginFrom(t, e, "nobody@example.com", "guess guess guess", "2001:db8:7:"+itoa(int64(i+1))+"::1")
		loginFrom(t, e, "nobody@example.com", "guess guess guess", "203.0.113."+itoa(int64(i+1)))
	}
	for _, ip := range []string{"2001:db8:7:ffff::1", "203.0.113.250"} {
		if code := loginFrom(t, e, "shop@example.com", "correct horse battery", ip); code != http.StatusTooManyRequests {
			t.Errorf("%s, a fresh network of a prefix over its limit: %d, want 429", ip, code)
		}
	}
	for _, ip := range []string{"2001:db8:8::1", "203.0.114.1"} {
		if code := loginFrom(t, e, "shop@example.com", "correct horse battery", ip); code != http.StatusSeeOther {
			t.Errorf("%s, another prefix: %d", ip, code)
		}
	}
}

// acquireAsync asks g for a slot as tk in a goroutine; the channel
// says whether it got one.
func acquireAsync(g *hashGate, tk ticket) <-chan bool {
	got := make(chan bool, 1)
	go func() { got <- g.acquire(context.Background(), tk) }()
	return got
}

// TestGateTrustedFirst: with the slot taken and strangers (a sign-in, a
// sign-up) waiting, a trusted request that comes last is served first.
func TestGateTrustedFirst(t *testing.T) {
	e := newEnv(t)
	g := newHashGate(1, e.clock)
	g.acquire(t.Context(), ticket{})
	login := acquireAsync(g, ticket{network: "192.0.2.1", wide: "192.0.2.0/24", account: "a@example.com"})
	waitQueued(g, 1)
	signup := acquireAsync(g, ticket{signup: true, network: "192.0.2.2", wide: "192.0.3.0/24"})
	waitQueued(g, 2)
	trusted := acquireAsync(g, ticket{trusted: true, account: "shop@example.com"})
	waitQueued(g, 3)
	g.release()
	if !<-trusted {
		t.Fatal("the trusted request got no slot")
	}
	g.mu.Lock()
	logins, signups := len(g.logins), len(g.signups)
	g.mu.Unlock()
	if logins != 1 || signups != 1 {
		t.Fatalf("after the trusted request was served, %d sign-ins and %d sign-ups wait, want 1 and 1", logins, signups)
	}
	g.release()
	g.release()
	<-login
	<-signup
}

// TestGateSignupsCannotStarveSignIns: with sign-ups queued first, the
// freed slots go to sign-ins and sign-ups in turn.
func TestGateSignupsCannotStarveSignIns(t *testing.T) {
	e := newEnv(t)
	g := newHashGate(1, e.clock)
	g.acquire(t.Context(), ticket{})
	var all []<-chan bool
	for i := range 3 {
		all = append(all, acquireAsync(g, ticket{signup: true, network: "192.0." + itoa(int64(i)) + ".1"}))
		waitQueued(g, i+1)
	}
	for i := range 3 {
		all = append(all, acquireAsync(g, ticket{network: "198.51." + itoa(int64(i)) + ".1"}))
		waitQueued(g, 3+i+1)
	}
	var order []string
	for range 6 {
		g.mu.Lock()
		s, l := len(g.signups), len(g.logins)
		g.mu.Unlock()
		g.release()
		g.mu.Lock()
		if len(g.signups) < s {
			order = append(order, "signup")
		}
		if len(g.logins) < l {
			order = append(order, "login")
		}
		g.mu.Unlock()
	}
	if got := strings.Join(order, " "); got != "login signup login signup login signup" {
		t.Errorf("freed slots went to: %s", got)
	}
	for _, ch := range all {
		<-ch
	}
}

// TestGateSharesQueuePerNetwork: a network, a wider prefix and an
// account each get only their share of the strangers' queue; past it a
// request is refused at once, and another client still queues.
func TestGateSharesQueuePerNetwork(t *testing.T) {
	e := newEnv(t)
	g := newHashGate(1, e.clock)
	g.perNetwork, g.perWide, g.perAccount = 1, 2, 2
	g.acquire(t.Context(), ticket{})
	acquireAsync(g, ticket{network: "2001:db8:1:1::/64", wide: "2001:db8:1::/48", account: "a@example.com"})
	waitQueued(g, 1)
	if g.acquire(t.Context(), ticket{network: "2001:db8:1:1::/64", wide: "2001:db8:1::/48", account: "b@example.com"}) {
		t.Error("a second waiter of one network was let in")
	}
	acquireAsync(g, ticket{network: "2001:db8:1:2::/64", wide: "2001:db8:1::/48", account: "b@example.com"})
	waitQueued(g, 2)
	if g.acquire(t.Context(), ticket{network: "2001:db8:1:3::/64", wide: "2001:db8:1::/48", account: "c@example.com"}) {
		t.Error("a third waiter of one /48 was let in")
	}
	acquireAsync(g, ticket{network: "192.0.2.1", wide: "192.0.2.0/24", account: "a@example.com"})
	waitQueued(g, 3)
	if g.acquire(t.Context(), ticket{network: "192.0.3.1", wide: "192.0.3.0/24", account: "a@example.com"}) {
		t.Error("a third waiter for one account was let in")
	}
	if g.queued() != 3 {
		t.Errorf("%d waiting, want 3", g.queued())
	}
	for range 4 {
		g.release()
	}
}

// TestGateWaitEndsOnClock: a waiter that gets no slot within the gate's
// wait (on the dashboard's clock) is refused and leaves the queue and
// its network's count.
func TestGateWaitEndsOnClock(t *testing.T) {
	e := newEnv(t)
	g := newHashGate(1, e.clock)
	g.perNetwork = 1
	g.acquire(t.Context(), ticket{})
	tk := ticket{network: "192.0.2.1", wide: "192.0.2.0/24"}
	got := acquireAsync(g, tk)
	waitQueued(g, 1)
	for e.clock.Pending() == 0 {
		runtime.Gosched()
	}
	e.clock.Advance(g.wait)
	if <-got {
		t.Fatal("the waiter got a slot")
	}
	if g.queued() != 0 || len(g.waitingBy) != 0 {
		t.Errorf("after the wait: %d queued, counts %v", g.queued(), g.waitingBy)
	}
	again := acquireAsync(g, tk)
	waitQueued(g, 1)
	g.release()
	if !<-again {
		t.Error("the network could not wait again")
	}
}

// TestSignInHashesInKeptMemory: a wrong password's hash runs in
// working memory kept for the next (argonMemory, outside the Go heap),
// so a flood of them allocates little on the heap whatever its rate.
// With argon at 4 MiB, each sign-in allocated 4 MiB more before (a fresh
// argon2.IDKey each), and the heap grew with the flood's rate.
func TestSignInHashesInKeptMemory(t *testing.T) {
	defer func(p argonParams) { argon = p }(argon)
	argon = argonParams{time: 1, memory: 4 << 10, threads: 1}
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "shop@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	loginFrom(t, e, "shop@example.com", "wrong wrong wrong", "198.51.100.1")
	const n = 10
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for i := range n {
		if code := loginFrom(t, e, "shop@example.com", "wrong wrong wrong", "203.0.113."+itoa(int64(i+1))); code != http.StatusUnauthorized {
			t.Fatalf("sign-in %d: %d, want 401", i, code)
		}
	}
	runtime.ReadMemStats(&after)
	if per, most := (after.TotalAlloc-before.TotalAlloc)/n, uint64(argon.memory)<<10/2; per > most {
		t.Errorf("a wrong sign-in allocated %d KiB on the heap, want under %d KiB (half of argon's memory)", per>>10, most>>10)
	}
	if len(argonMemory) == 0 {
		t.Error("no hashing memory kept after the sign-ins")
	}
}

// TestHashSlotsBoundedWhateverTheCores: the hashes run at once, each
// holding argon's memory, are at most maxHashSlots however many cores
// there are. Before, a 64-core machine ran 64 (1.2 GiB at 19 MiB each).
func TestHashSlotsBoundedWhateverTheCores(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(64))
	e := newEnv(t)
	if e.dash.gate.slots > maxHashSlots || cap(argonMemory) > maxHashSlots {
		t.Errorf("with 64 cores: %d hashing slots, %d memories kept; want at most %d", e.dash.gate.slots, cap(argonMemory), maxHashSlots)
	}
	runtime.GOMAXPROCS(1)
	if e := newEnv(t); e.dash.gate.slots != 1 {
		t.Errorf("with 1 core: %d hashing slots, want 1", e.dash.gate.slots)
	}
}
