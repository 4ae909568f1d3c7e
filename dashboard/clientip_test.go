package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSignupLimitCountsTheProxysAddress: behind a proxy the limits
// count the address the proxy added, the last line of the header: a
// client that sends a header line of its own, or one that does not
// parse, gains no bucket of its own with each new value.
func TestSignupLimitCountsTheProxysAddress(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.ClientIPHeader = "X-Forwarded-For" })
	signup := func(email string, lines ...string) int {
		c := e.client()
		c.get("/dashboard/signup")
		req, _ := http.NewRequest("POST", e.srv.URL+"/dashboard/signup", strings.NewReader(url.Values{"email": {email}, "password": {"correct horse battery"}, "csrf": {c.csrf}}.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for _, l := range lines {
			req.Header.Add("X-Forwarded-For", l)
		}
		code, _, _ := c.read(c.http.Do(req))
		return code
	}
	// The client's own line first, the proxy's (the same address each
	// time) last.
	for i := range maxSignupsAddress {
		if code := signup("u"+itoa(int64(i))+"@example.com", "203.0.113."+itoa(int64(i+1)), "198.51.100.7"); code != http.StatusSeeOther {
			t.Fatalf("sign-up %d: %d", i, code)
		}
	}
	if code := signup("late@example.com", "203.0.113.200", "198.51.100.7"); code != http.StatusTooManyRequests {
		t.Errorf("sign-up over the limit from the proxy's one address, with a new line of the client's own: %d, want 429", code)
	}
	// Values that do not parse share one bucket.
	for i := range maxSignupsAddress {
		if code := signup("g"+itoa(int64(i))+"@example.com", "garbage-"+itoa(int64(i))); code != http.StatusSeeOther {
			t.Fatalf("sign-up %d with an unparsable address: %d", i, code)
		}
	}
	if code := signup("g-late@example.com", "garbage-late"); code != http.StatusTooManyRequests {
		t.Errorf("sign-up over the limit with yet another unparsable address: %d, want 429", code)
	}
}
