package http

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestPayLinkPayIsRateLimited is defect 6: without a key, 300 payments
// of one pay link in one second created 300 invoices (each taking the
// next address of the store's wallet). With the default limits one
// address gets PayBurst, and many addresses together make PayLinkBurst
// invoices; once the link's bucket is empty the others are handed those
// invoices (issue 18: refusing them locked the link for its customers).
func TestPayLinkPayIsRateLimited(t *testing.T) {
	t.Parallel()
	limits := DefaultPublicLimits()
	for _, tt := range []struct {
		name     string
		remote   func(i int) string
		wantMost int
	}{
		{"one address", func(int) string { return "203.0.113.7:4000" }, limits.PayBurst},
		{"many addresses", func(i int) string { return fmt.Sprintf("10.%d.%d.1:4000", i/256, i%256) }, 300},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			id := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 1, "title": "T"}`)).ID
			created, limited := 0, 0
			for i := range 300 {
				w := e.doFrom(tt.remote(i), "POST", "/payment-requests/"+id+"/pay", "", noKey)
				switch w.Code {
				case http.StatusSeeOther:
					created++
				case http.StatusTooManyRequests:
					limited++
					if w.Header().Get("Retry-After") == "" {
						t.Fatal("429 without Retry-After")
					}
				default:
					t.Fatalf("pay %d: status %d: %s", i, w.Code, w.Body.String())
				}
			}
			if created != tt.wantMost || limited != 300-tt.wantMost {
				t.Errorf("%d payments went through and %d were refused, want %d and %d", created, limited, tt.wantMost, 300-tt.wantMost)
			}
			if n := len(e.invoiceIDs("store_a")); n > min(created, limits.PayLinkBurst) {
				t.Errorf("%d invoices created by %d payments", n, created)
			}
		})
	}
}

func TestPublicRateLimits(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withDeps(func(d *Deps) {
		d.PublicLimits = PublicLimits{PageRate: 0.5, PageBurst: 2, PayRate: 1, PayBurst: 1, PayLinkRate: 1, PayLinkBurst: 2}
	}))
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	page := func(remote, path string) *httptest.ResponseRecorder {
		return e.doFrom(remote, "GET", path, "", noKey)
	}
	a, b := "198.51.100.1:1000", "198.51.100.2:1000"
	expectStatus(t, page(a, "/checkout/"+inv.ID), 200)
	expectStatus(t, page(a, "/checkout/"+inv.ID+"/status"), 200)
	w := page(a, "/checkout/"+inv.ID)
	expectPage(t, w, 429, []string{"too many requests"}, nil)
	if got := w.Header().Get("Retry-After"); got != "2" {
		t.Errorf("Retry-After %q, want 2 (one token at 0.5/s)", got)
	}
	// The status poll answers JSON, as the page's script expects.
	expectError(t, page(a, "/checkout/"+inv.ID+"/status"), 429, kassa.RateLimited)
	// Another address has its own bucket; so does the API, by key.
	expectStatus(t, page(b, "/checkout/"+inv.ID), 200)
	expectStatus(t, e.doFrom(a, "GET", "/api/v1/stores/store_a/invoices/"+inv.ID, ""), 200)
	e.advanceTo(e.clock.Now().Add(2 * time.Second))
	expectStatus(t, page(a, "/checkout/"+inv.ID), 200)

	// Payments: per address, then per pay link across addresses.
	id := decode[createdPaymentRequest](t, e.do("POST", "/api/v1/stores/store_a/payment-requests", `{"amount": 1, "title": "T"}`)).ID
	pay := func(remote string) int {
		return e.doFrom(remote, "POST", "/payment-requests/"+id+"/pay", "", noKey).Code
	}
	c, d, f := "192.0.2.10:1", "192.0.2.11:1", "192.0.2.12:1"
	if got := []int{pay(c), pay(c), pay(d), pay(f)}; fmt.Sprint(got) != "[303 429 303 303]" {
		t.Errorf("payments answered %v, want [303 429 303 303]: one per address, two new invoices per link, then one of those handed out", got)
	}
	if n := len(e.invoiceIDs("store_a")); n != 3 { // the seeded one and two of the link
		t.Errorf("%d invoices, want 3", n)
	}
}

func TestClientAddress(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		remote, header, value, want string
	}{
		{"192.0.2.1:1234", "", "", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", "", "2001:db8:1:2::/64"},
		{"[::ffff:192.0.2.9]:443", "", "", "192.0.2.9"},
		{"garbage", "", "", "?"},
		// A client's X-Forwarded-For counts only when the operator says so,
		// and then only the address the proxy appended.
		{"10.0.0.1:1", "", "203.0.113.5", "10.0.0.1"},
		{"10.0.0.1:1", "X-Forwarded-For", "1.1.1.1, 203.0.113.5", "203.0.113.5"},
		{"10.0.0.1:1", "X-Forwarded-For", "", "10.0.0.1"},
	} {
		s := &server{Deps: Deps{ClientIPHeader: tt.header}}
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.value != "" {
			r.Header.Set("X-Forwarded-For", tt.value)
		}
		if got := s.clientAddress(r); got != tt.want {
			t.Errorf("%s with %s %q: %q, want %q", tt.remote, tt.header, tt.value, got, tt.want)
		}
	}
}

// TestClientIP: the store's history records the whole address, by the
// rule of the rate limits (an IPv6 address is not cut to its /64).
func TestClientIP(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		remote, header, value, want string
	}{
		{"192.0.2.1:1234", "", "", "192.0.2.1"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", "", "2001:db8:1:2:3:4:5:6"},
		{"[::ffff:192.0.2.9]:443", "", "", "192.0.2.9"},
		{"garbage", "", "", "?"},
		{"10.0.0.1:1", "", "203.0.113.5", "10.0.0.1"},
		{"10.0.0.1:1", "X-Forwarded-For", "1.1.1.1, 203.0.113.5", "203.0.113.5"},
		{"10.0.0.1:1", "X-Forwarded-For", "1.1.1.1, <script>", "?"},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tt.remote
		if tt.value != "" {
			r.Header.Set("X-Forwarded-For", tt.value)
		}
		if got := ClientIP(r, tt.header); got != tt.want {
			t.Errorf("%s with %s %q: %q, want %q", tt.remote, tt.header, tt.value, got, tt.want)
		}
	}
}

func TestRateLimiterForgetsFullBuckets(t *testing.T) {
	t.Parallel()
	clock := kassatest.NewTestClock(testNow)
	l := newRateLimiter(1, 2, clock)
	for i := range maxBuckets {
		l.allow(fmt.Sprint(i))
	}
	l.allow("busy")
	l.allow("busy")
	clock.Advance(time.Second) // every bucket but "busy" is full again
	l.allow("new")
	if len(l.buckets) != 2 {
		t.Errorf("%d buckets, want 2 (busy and new)", len(l.buckets))
	}
	if ok, _ := l.allow("busy"); !ok {
		t.Error("busy got no token after a second")
	}
	if ok, _ := l.allow("busy"); ok {
		t.Error("busy's bucket was forgotten while it was in use")
	}
}
