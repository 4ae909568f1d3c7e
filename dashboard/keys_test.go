package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// TestKeysListShowsNoFullKey: the keys page lists every key masked (its
// first and last 4 characters), and no page of the store carries a full
// key, neither in the text nor in a copy button.
func TestKeysListShowsNoFullKey(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	c.get(base + "/keys")
	if code, body, _ := c.post(base+"/keys", url.Values{"label": {"plugin"}}); code != http.StatusSeeOther {
		t.Fatalf("create key: %d %s", code, body)
	}
	st, _ = e.db.Store(t.Context(), st.ID)
	if len(st.APIKeys) != 2 {
		t.Fatalf("keys: %+v", st.APIKeys)
	}
	_, body, _ := c.get(base + "/keys")
	for _, k := range st.APIKeys {
		if strings.Contains(body, k.Key) || strings.Contains(body, k.Key[4:len(k.Key)-4]) {
			t.Errorf("the keys list holds the key %s", k.Label)
		}
		if !strings.Contains(body, k.Key[:4]+"••••"+k.Key[len(k.Key)-4:]) {
			t.Errorf("the keys list lacks the masked key %s", k.Label)
		}
	}
	for _, p := range []string{"/", "/keys?done=keycreated", "/webhooks", "/invoices", "/balance"} {
		_, body, _ := c.get(base + p)
		for _, k := range st.APIKeys {
			if strings.Contains(body, k.Key) {
				t.Errorf("%s holds the key %s", p, k.Label)
			}
		}
	}
}

// TestRevealKeyNeedsPasswordAndIsJournaled: a key is shown in full only
// in the answer to a CSRF-checked POST with the account's password, and
// each reveal is an event of the store's journal naming the account.
// Wrong passwords count with the sign-in attempts and are limited as
// they are.
func TestRevealKeyNeedsPasswordAndIsJournaled(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	key := st.APIKeys[0]
	base := "/dashboard/stores/" + st.ID
	reveal := base + "/keys/" + key.ID + "/reveal"
	c.get(base + "/keys")

	for name, form := range map[string]url.Values{
		"no password":    {},
		"wrong password": {"password": {"not my password"}},
	} {
		code, body, _ := c.post(reveal, form)
		if code != http.StatusForbidden || strings.Contains(body, key.Key) || !strings.Contains(body, htmlText(msg("err.reveal"))) {
			t.Errorf("%s: %d, key shown %v", name, code, strings.Contains(body, key.Key))
		}
	}
	if code, body, _ := c.postRaw(reveal, url.Values{"password": {"correct horse battery"}}); code != http.StatusForbidden || strings.Contains(body, key.Key) {
		t.Errorf("without the CSRF token: %d", code)
	}
	if code, _, _ := c.post(base+"/keys/key_nosuch/reveal", url.Values{"password": {"correct horse battery"}}); code != http.StatusNotFound {
		t.Errorf("an unknown key: %d", code)
	}
	if n := reveals(t, e, st.ID); len(n) != 0 {
		t.Fatalf("refused reveals were journaled: %v", n)
	}

	code, body, _ := c.post(reveal, url.Values{"password": {"correct horse battery"}})
	if code != http.StatusOK || !strings.Contains(body, `id="revealed-key">`+key.Key+`<`) || !strings.Contains(body, `data-copy="`+key.Key+`"`) {
		t.Fatalf("reveal with the password: %d %s", code, body)
	}
	if got := reveals(t, e, st.ID); len(got) != 1 || got[0] != key.ID+" by alice@example.com" {
		t.Fatalf("the store's journal has the reveals %v; want one of %s by alice@example.com", got, key.ID)
	}
	if _, body, _ := c.get(base + "/keys"); strings.Contains(body, key.Key) {
		t.Error("the list shows the key after a reveal")
	}

	// Wrong passwords are sign-in attempts: the fifth on the account
	// from this network is the last before a wait.
	for i := 0; i < maxFailsAccount; i++ {
		c.post(reveal, url.Values{"password": {"guess"}})
	}
	code, body, hdr := c.post(reveal, url.Values{"password": {"correct horse battery"}})
	if code != http.StatusTooManyRequests || hdr.Get("Retry-After") == "" || strings.Contains(body, key.Key) {
		t.Errorf("after %d wrong passwords: %d, Retry-After %q", maxFailsAccount, code, hdr.Get("Retry-After"))
	}
}

// reveals are the store journal's key reveals, as "keyID by email".
func reveals(t *testing.T, e *env, storeID string) []string {
	t.Helper()
	var out []string
	err := e.db.Events(t.Context(), kassa.Stream{Kind: kassa.KindStore, ID: storeID}, 0, func(_ uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		if r := ev.GetApiKeyRevealed(); r != nil {
			out = append(out, r.KeyId+" by "+r.By)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
