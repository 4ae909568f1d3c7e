package dashboard

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// TestKeyFormPermissions: the key form offers every permission; a key
// made with some ticked holds exactly those, one made with none the
// defaults; an unknown one is refused naming it, nothing stored.
func TestKeyFormPermissions(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Shop")
	base := "/dashboard/stores/" + st.ID
	_, body, _ := c.get(base + "/keys")
	for _, p := range kassa.AllPermissions {
		if !strings.Contains(body, `name="permission" value="`+string(p)+`"`) {
			t.Errorf("the form does not offer %s", p)
		}
	}
	if code, body, _ := c.post(base+"/keys", url.Values{"label": {"till"}, "permission": {"btcpay.store.cancreateinvoice", "btcpay.store.canviewinvoices"}}); code != http.StatusSeeOther {
		t.Fatalf("create: %d %s", code, body)
	}
	code, body, _ := c.post(base+"/keys", url.Values{"label": {"bad"}, "permission": {"btcpay.store.canfly"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "btcpay.store.canfly") {
		t.Errorf("unknown permission: %d", code)
	}
	got := mustStore(t, e, st.ID)
	if len(got.APIKeys) != 2 {
		t.Fatalf("keys: %+v", got.APIKeys)
	}
	if want := (kassa.Permissions{kassa.PermCreateInvoice, kassa.PermViewInvoices}); !slices.Equal(got.APIKeys[1].Permissions, want) {
		t.Errorf("the key holds %v, want %v", got.APIKeys[1].Permissions, want)
	}
	if !slices.Equal(got.APIKeys[0].Granted(), kassa.DefaultKeyPermissions) {
		t.Errorf("the first key holds %v", got.APIKeys[0].Granted())
	}
	_, body, _ = c.get(base + "/keys")
	if !strings.Contains(body, "btcpay.store.cancreateinvoice") || !strings.Contains(body, htmlText(msg("keys.allperms"))) {
		t.Error("the list does not show what each key holds")
	}
}
