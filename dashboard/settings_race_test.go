package dashboard

import (
	"html"
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/kassapay/kassa"
)

// TestSettingsFormKeepsConcurrentChange: a member loads the settings
// page, the owner then sets refundAutoApproveMax through the API, and the
// member saves the page with a new brand colour. The form still holds
// refundAutoApproveMax as it was shown (0), yet the owner's value
// survives: the form sets only what its user changed.
func TestSettingsFormKeepsConcurrentChange(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("alice@example.com")
	st := c.createStore("Alice's Shop")
	_, page, _ := c.get("/dashboard/stores/" + st.ID + "/")
	m := regexp.MustCompile(`name="shown" value="([^"]*)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the settings page carries no record of the settings it shows")
	}
	shown := html.UnescapeString(m[1])

	owner := st.Settings()
	owner.RefundAutoApproveMax = 5000
	if _, err := e.sys.Service.UpdateStore(t.Context(), st.ID, owner, kassa.StoreRefundAutoApproveMax); err != nil {
		t.Fatal(err)
	}

	form := url.Values{"name": {st.Name}, "currency": {string(st.Currency)}, "confirmations": {"1"},
		"refundAutoApproveMax": {"0"}, "brandColor": {"#112233"}, "shown": {shown}}
	if code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", form); code != http.StatusSeeOther {
		t.Fatalf("save settings: %d %s", code, body)
	}
	after, err := e.db.Store(t.Context(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if after.RefundAutoApproveMax != 5000 || after.BrandColor != "#112233" {
		t.Errorf("stored refundAutoApproveMax %d, brandColor %q; want 5000 and #112233", after.RefundAutoApproveMax, after.BrandColor)
	}

	// A damaged record is refused on the form, and nothing changes.
	form.Set("shown", "name:xyz")
	form.Set("brandColor", "#445566")
	if code, _, _ := c.post("/dashboard/stores/"+st.ID+"/settings", form); code != http.StatusUnprocessableEntity {
		t.Errorf("damaged record: %d, want 422", code)
	}
	if after, _ := e.db.Store(t.Context(), st.ID); after.BrandColor != "#112233" {
		t.Errorf("damaged record stored brandColor %q", after.BrandColor)
	}
}
