package greenfield_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kassapay/kassa"
)

// TestHistoryNamesTheKey: a change made with the Greenfield API is in
// the store's history under the key's id and label, never the key, with
// the client's address.
func TestHistoryNamesTheKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hooks := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(hooks.Close)
	expectStatus(t, e.do("POST", base+"/api/v1/stores/store_a/webhooks", `{"url":"`+hooks.URL+`/hook"}`), http.StatusOK)
	var lines []*kassa.HistoryLine
	if _, err := e.db.History(t.Context(), "store_a", kassa.HistoryQuery{}, func(l *kassa.HistoryLine) error {
		lines = append(lines, l)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := kassa.Actor{Kind: kassa.ActorAPIKey, ID: "key_a1", Label: "WooCommerce", Addr: "192.0.2.1"}
	if len(lines) != 1 || lines[0].Action != kassa.ActionWebhookCreated || lines[0].Actor != want || lines[0].Detail != hooks.URL+"/hook" {
		t.Fatalf("history %+v, want one webhook line by %+v", lines, want)
	}
}
