package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestSignupStoreSettingsKeys walks the first steps of a merchant: sign
// up (the first account is the operator), create a store, change its
// settings, create an API key, use it, delete it: it stops working at
// once.
func TestSignupStoreSettingsKeys(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Alice's Shop")
	if st.PercentFee.String() != "1" || len(st.APIKeys) != 1 {
		t.Fatalf("store = %+v", st)
	}
	code, body, _ := c.get("/dashboard/stores/" + st.ID + "/")
	if code != 200 || !strings.Contains(body, st.ID) || !strings.Contains(body, "Alice&#39;s Shop") {
		t.Fatalf("settings page: %d %s", code, body)
	}

	code, body, _ = c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Alice Coffee"}, "currency": {"USD"},
		"confirmations": {"2"}, "onchainMin": {"5000"}, "brandColor": {"#aa00bb"}, "logoUrl": {"data:image/png;base64,iVBORw0KGgo="},
		"defaultRedirectUrl": {"https://alice.example/thanks"}, "lightningAddress": {"alice@wallet.example"}})
	if code != http.StatusSeeOther {
		t.Fatalf("save settings: %d %s", code, body)
	}
	after, _ := e.db.Store(t.Context(), st.ID)
	if after.Name != "Alice Coffee" || after.Currency != "USD" || after.ConfirmationsRequired != 2 || after.BrandColor != "#aa00bb" ||
		after.OnchainMinAmount != 5000 || after.LightningAddress != "alice@wallet.example" {
		t.Errorf("settings not stored: %+v", after)
	}
	c.get("/dashboard/stores/" + st.ID + "/")
	code, body, _ = c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {""}, "currency": {"USD"}, "confirmations": {"1"}, "brandColor": {"red"}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(body, "brandColor") {
		t.Errorf("bad settings: %d %s", code, body)
	}

	c.get("/dashboard/stores/" + st.ID + "/keys")
	if code, body, _ = c.post("/dashboard/stores/"+st.ID+"/keys", url.Values{"label": {"plugin"}}); code != http.StatusSeeOther {
		t.Fatalf("create key: %d %s", code, body)
	}
	after, _ = e.db.Store(t.Context(), st.ID)
	if len(after.APIKeys) != 2 || after.APIKeys[1].Label != "plugin" {
		t.Fatalf("keys = %+v", after.APIKeys)
	}
	key := after.APIKeys[1]
	c.get("/dashboard/stores/" + st.ID + "/keys")
	_, body, _ = c.post("/dashboard/stores/"+st.ID+"/keys/"+key.ID+"/reveal", url.Values{"password": {"correct horse battery"}})
	if !strings.Contains(body, key.Key) {
		t.Error("the keys page does not show the key again")
	}
	if code, out := e.api("GET", "/api/v1/stores/"+st.ID, key.Key, nil); code != 200 {
		t.Fatalf("API with the new key: %d %s", code, out)
	}
	if code, body, _ = c.post("/dashboard/stores/"+st.ID+"/keys/"+key.ID+"/delete", nil); code != http.StatusSeeOther {
		t.Fatalf("delete key: %d %s", code, body)
	}
	if code, out := e.api("GET", "/api/v1/stores/"+st.ID, key.Key, nil); code != http.StatusUnauthorized {
		t.Fatalf("API with the deleted key: %d %s", code, out)
	}
	if code, _ := e.api("GET", "/api/v1/stores/"+st.ID, after.APIKeys[0].Key, nil); code != 200 {
		t.Fatalf("the other key stopped working: %d", code)
	}
}
