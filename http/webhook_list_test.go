package http

import (
	"fmt"
	"testing"
)

// TestListWebhooksPages pages the webhook list with limit and cursor, as
// every list of docs/api.md does.
func TestListWebhooksPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	base := "/api/v1/stores/store_a/webhooks"
	for i := range 3 {
		expectStatus(t, e.do("POST", base, fmt.Sprintf(`{"url": "https://shop.example.com/hook/%d"}`, i)), 200)
	}
	all := decode[[]webhookRecord](t, e.do("GET", base, ""))
	if len(all) != 3 {
		t.Fatalf("%d webhooks, want 3", len(all))
	}

	first := e.do("GET", base+"?limit=2", "")
	expectStatus(t, first, 200)
	page1 := decode[[]webhookRecord](t, first)
	cursor := first.Header().Get("Next-Cursor")
	if len(page1) != 2 || page1[0].ID != all[0].ID || page1[1].ID != all[1].ID || cursor == "" {
		t.Fatalf("first page %d items, cursor %q", len(page1), cursor)
	}
	second := e.do("GET", base+"?limit=2&cursor="+cursor, "")
	expectStatus(t, second, 200)
	page2 := decode[[]webhookRecord](t, second)
	if len(page2) != 1 || page2[0].ID != all[2].ID || second.Header().Get("Next-Cursor") != "" {
		t.Fatalf("second page %+v, cursor %q", page2, second.Header().Get("Next-Cursor"))
	}
	exact := e.do("GET", base+"?limit=3", "")
	if got := decode[[]webhookRecord](t, exact); len(got) != 3 || exact.Header().Get("Next-Cursor") != "" {
		t.Errorf("a page that holds everything: %d items, cursor %q", len(got), exact.Header().Get("Next-Cursor"))
	}

	expectError(t, e.do("GET", base+"?limit=0", ""), 400, "invalid", "limit")
	expectError(t, e.do("GET", base+"?limit=2&cursor=nosuchcursor", ""), 400, "invalid", "cursor")
}
