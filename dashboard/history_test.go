package dashboard

import (
	"context"
	"encoding/csv"
	"fmt"
	"html"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// TestHistoryPage: the History page lists a store's changes newest
// first with who made them (the signed-in account, or the API key by
// id and label) and from which address, never a key; it filters by
// kind, actor and dates, pages by historyPage lines, and its CSV holds
// the same filtered lines. Owners and Managers see it, Employees get
// 403 and no link.
func TestHistoryPage(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	key := st.APIKeys[0]
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/")
	if code, body, _ := c.post(base+"/settings", url.Values{"name": {"Alice Coffee"}, "currency": {"EUR"}, "confirmations": {"1"}}); code != http.StatusSeeOther {
		t.Fatalf("save settings: %d %s", code, body)
	}
	c.get(base + "/keys")
	if code, _, _ := c.post(base+"/keys/"+key.ID+"/reveal", url.Values{"password": {"correct horse battery"}}); code != http.StatusOK {
		t.Fatalf("reveal: %d", code)
	}
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hooks.Close)
	if code, body := e.api("POST", "/api/v1/stores/"+st.ID+"/webhooks", key.Key, map[string]any{"url": hooks.URL + "/in?token=s3cret"}); code != http.StatusOK {
		t.Fatalf("create a webhook with the API: %d %s", code, body)
	}

	code, body, _ := c.get(base + "/history")
	if code != http.StatusOK {
		t.Fatalf("history: %d %s", code, body)
	}
	if n := strings.Count(body, `class="hline"`); n != 3 {
		t.Fatalf("%d lines, want 3:\n%s", n, body)
	}
	webhook, reveal, settings := strings.Index(body, msg("hist.a.webhook.created")), strings.Index(body, msg("hist.a.apikey.revealed")), strings.Index(body, msg("hist.a.settings.changed"))
	if webhook < 0 || reveal < webhook || settings < reveal {
		t.Fatalf("not newest first (%d %d %d):\n%s", webhook, reveal, settings, body)
	}
	for _, s := range []string{"alice@example.com", "127.0.0.1", key.ID, "(" + html.EscapeString(key.Label) + ")", hooks.URL + "/in<", "name", `href="` + base + `/history"`} {
		if !strings.Contains(body, s) {
			t.Errorf("the page lacks %q", s)
		}
	}
	for _, s := range []string{key.Key, "s3cret"} {
		if strings.Contains(body, s) {
			t.Errorf("the page holds a secret %q", s)
		}
	}

	for q, want := range map[string]int{
		"?kind=webhook":                                         1,
		"?kind=apikey&actor=alice%40example.com":                1,
		"?actor=alice%40example.com":                            2,
		"?actor=" + key.ID:                                      1,
		"?from=" + testNow.Format("2006-01-02"):                 3,
		"?to=" + testNow.Format("2006-01-02"):                   3,
		"?to=" + testNow.AddDate(0, 0, -1).Format("2006-01-02"): 0,
	} {
		code, body, _ := c.get(base + "/history" + q)
		if n := strings.Count(body, `class="hline"`); code != http.StatusOK || n != want {
			t.Errorf("%s: %d, %d lines, want %d", q, code, n, want)
		}
	}
	for _, q := range []string{"?kind=invoices", "?from=yesterday", "?cursor=!!"} {
		if code, _, _ := c.get(base + "/history" + q); code != http.StatusBadRequest {
			t.Errorf("%s: %d, want 400", q, code)
		}
	}

	// Pages of historyPage lines.
	ctx := kassa.WithClientAddr(kassa.WithPrincipal(context.Background(), kassa.MemberPrincipal("alice@example.com", map[string]kassa.Role{st.ID: kassa.RoleOwner})), "192.0.2.9")
	for range historyPage {
		if _, err := e.sys.Service.RevealAPIKey(ctx, st.ID, key.ID, "alice@example.com"); err != nil {
			t.Fatal(err)
		}
	}
	_, body, _ = c.get(base + "/history")
	older := regexpFind(t, body, `id="older" href="([^"]+)"`)
	if n := strings.Count(body, `class="hline"`); n != historyPage {
		t.Fatalf("first page: %d lines", n)
	}
	_, body, _ = c.get(html.UnescapeString(older))
	if n := strings.Count(body, `class="hline"`); n != 3 || strings.Contains(body, `id="older"`) {
		t.Fatalf("second page: %d lines", n)
	}

	// The CSV of the same selection.
	code, csvBody, hdr := c.get(base + "/history.csv?kind=apikey")
	rows, err := csv.NewReader(strings.NewReader(csvBody)).ReadAll()
	if code != http.StatusOK || err != nil || hdr.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("CSV: %d %v %s", code, err, csvBody)
	}
	if len(rows) != 1+historyPage+1 || strings.Join(rows[0], ",") != strings.Join(historyCSVHeader, ",") {
		t.Fatalf("CSV: %d rows, header %v", len(rows), rows[0])
	}
	last := rows[len(rows)-1]
	if got := fmt.Sprint(last[3:]); got != fmt.Sprintf("[apikey apikey.revealed %s %s account alice@example.com  127.0.0.1]", key.ID, key.Label) {
		t.Errorf("the oldest key line: %s", got)
	}
	if strings.Contains(csvBody, key.Key) {
		t.Error("the CSV holds the key")
	}

	// Employees neither see nor export it; Managers do.
	for role, want := range map[kassa.Role]int{kassa.RoleEmployee: http.StatusForbidden, kassa.RoleManager: http.StatusOK} {
		m := e.client()
		m.signup(strings.ToLower(string(role)) + "@example.com")
		m.join(inviteMember(t, c, st, role))
		_, page, _ := m.get(base + "/invoices")
		if linked := strings.Contains(page, `href="`+base+`/history"`); linked != (want == http.StatusOK) {
			t.Errorf("%s: menu links the history: %v", role, linked)
		}
		for _, p := range []string{"/history", "/history.csv"} {
			if code, _, _ := m.get(base + p); code != want {
				t.Errorf("%s %s: %d, want %d", role, p, code, want)
			}
		}
	}
}

// regexpFind returns the first group of pattern in s, failing t when
// there is none.
func regexpFind(t *testing.T, s, pattern string) string {
	t.Helper()
	m := regexp.MustCompile(pattern).FindStringSubmatch(s)
	if m == nil {
		t.Fatalf("no %s in:\n%s", pattern, s)
	}
	return m[1]
}
