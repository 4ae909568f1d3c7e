package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestStoreCapPerAccount: an account may own Limits.StoresPerAccount
// stores; one more is refused with a page that says so, also when the
// creations race, and other accounts are not counted against it.
func TestStoreCapPerAccount(t *testing.T) {
	if DefaultLimits().StoresPerAccount != 20 {
		t.Fatalf("default stores per account %d, want 20", DefaultLimits().StoresPerAccount)
	}
	e := newEnv(t, func(d *Deps) { d.Limits.StoresPerAccount = 3 })
	c := e.client()
	c.signup("alice@example.com")
	c.createStore("One")
	// Parallel creations pass the cap together no more than one by one.
	var wg sync.WaitGroup
	codes := make([]int, 5)
	for i := range codes {
		wg.Go(func() {
			res, err := c.http.PostForm(e.srv.URL+"/dashboard/stores", url.Values{"name": {"Racer"}, "currency": {"EUR"}, "csrf": {c.csrf}})
			if err != nil {
				t.Error(err)
				return
			}
			res.Body.Close()
			codes[i] = res.StatusCode
		})
	}
	wg.Wait()
	created := 0
	for _, code := range codes {
		switch code {
		case http.StatusSeeOther:
			created++
		case http.StatusForbidden:
		default:
			t.Errorf("a parallel creation answered %d", code)
		}
	}
	if created != 2 {
		t.Errorf("%d of 5 parallel creations passed a cap with 2 places left", created)
	}
	c.get("/dashboard/stores/new")
	code, body, _ := c.post("/dashboard/stores", url.Values{"name": {"Fourth"}, "currency": {"EUR"}})
	if code != http.StatusForbidden || !strings.Contains(body, "at most 3 stores") {
		t.Errorf("the fourth store: %d %s", code, body)
	}
	if u, _ := e.dash.user(t.Context(), "alice@example.com"); len(u.StoreIDs) != 3 {
		t.Errorf("alice owns %d stores, want 3", len(u.StoreIDs))
	}
	if _, body, _ := c.get("/dashboard/stores/new"); !strings.Contains(body, "at most 3 stores") {
		t.Error("the new store page does not say the cap is reached")
	}
	bob := e.client()
	bob.signup("bob@example.com")
	bob.createStore("Bob's")
}

// TestWriteRateLimit: an account's posted forms are limited to
// WritesPerMinute with a burst of WriteBurst (by default 30 and 20):
// past it a write answers 429 with Retry-After and a page that says when
// to try again, and changes nothing; reads and other accounts go on, and
// the account writes again once the time has passed.
func TestWriteRateLimit(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop") // the first write
	settings := "/dashboard/stores/" + st.ID + "/settings"
	save := func(name string) (int, string, http.Header) {
		return c.post(settings, url.Values{"name": {name}, "currency": {"EUR"}, "confirmations": {"1"}})
	}
	for i := 2; i <= 20; i++ {
		if code, body, _ := save("Shop"); code != http.StatusSeeOther {
			t.Fatalf("write %d of the burst: %d %s", i, code, body)
		}
	}
	code, body, hdr := save("Renamed")
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "2" || !strings.Contains(body, "Too many changes in a short time. Try again in 2 seconds.") {
		t.Fatalf("write 21: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if got, _ := e.db.Store(t.Context(), st.ID); got.Name != "Shop" {
		t.Errorf("a refused write changed the store: %q", got.Name)
	}
	if code, _, _ := c.get("/dashboard/stores/" + st.ID + "/"); code != http.StatusOK {
		t.Errorf("a read after the limit: %d", code)
	}
	bob := e.client()
	bob.signup("bob@example.com")
	bob.createStore("Bob's")

	e.clock.Advance(2 * time.Second)
	if code, body, _ := save("Renamed"); code != http.StatusSeeOther {
		t.Fatalf("a write after Retry-After: %d %s", code, body)
	}
	if code, _, _ := save("Again"); code != http.StatusTooManyRequests {
		t.Errorf("a second write in the same interval: %d", code)
	}
}

// TestSearchRateLimit: an account's searches (a filtered invoice list,
// a CSV export) are limited to SearchesPerMinute with a burst of
// SearchBurst (by default 10 and 5); the unfiltered list is not a
// search. Past the limit the invoices page answers 429 with Retry-After
// and says when to search again.
func TestSearchRateLimit(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	for i := 1; i <= 4; i++ {
		if code, body, _ := c.get(base + "/invoices?q=order-" + itoa(int64(i))); code != http.StatusOK {
			t.Fatalf("search %d: %d %s", i, code, body)
		}
	}
	if code, _, _ := c.get(base + "/transactions.csv"); code != http.StatusOK {
		t.Fatalf("export as the fifth search: %d", code)
	}
	for range 3 {
		if code, _, _ := c.get(base + "/invoices"); code != http.StatusOK {
			t.Fatalf("the unfiltered list: %d", code)
		}
	}
	code, body, hdr := c.get(base + "/invoices?status=Settled")
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") != "6" || !strings.Contains(body, "Too many searches in a short time. Try again in 6 seconds.") {
		t.Fatalf("search 6: %d Retry-After %q %s", code, hdr.Get("Retry-After"), body)
	}
	if code, _, hdr := c.get(base + "/transactions.csv"); code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" {
		t.Errorf("an export over the limit: %d", code)
	}
	e.clock.Advance(6 * time.Second)
	if code, _, _ := c.get(base + "/invoices?q=x"); code != http.StatusOK {
		t.Errorf("a search after Retry-After: %d", code)
	}
}

// TestLimitsOff: a negative limit turns it off.
func TestLimitsOff(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Limits = Limits{StoresPerAccount: -1, WritesPerMinute: -1, SearchesPerMinute: -1} })
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	for i := range 25 {
		if code, _, _ := c.get("/dashboard/stores/" + st.ID + "/invoices?q=x"); code != http.StatusOK {
			t.Fatalf("search %d with the limit off: %d", i, code)
		}
		if code, _, _ := c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Shop"}, "currency": {"EUR"}, "confirmations": {"1"}}); code != http.StatusSeeOther {
			t.Fatalf("write %d with the limit off: %d", i, code)
		}
	}
}
