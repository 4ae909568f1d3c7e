package dashboard

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

// testVpub is a regtest BIP84 account key (the BIP84 test vector's,
// spelled vpub), which the simulated chain derives from.
const testVpub = "vpub5ZRUUWaL8PSLoiKwmUFHmRzTxAte5bFma9EriUXiCc1hMqAyegX4X82onJQRQbSG5cisAixe1RyXBWderduTRFRss1qjPP9iDsdWPYG6ZDk"

// TestSettingsRefuseInvalidXpubAndAddress: the settings form refuses an
// xpub that is no extended public key and a Lightning address that is
// not one, with the field named, and stores nothing: the store's
// invoices go on working. Before, the xpub was saved and every later
// invoice of the store failed. A good key is saved and derives the
// invoice's address.
func TestSettingsRefuseInvalidXpubAndAddress(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	save := func(xpub, address string) (int, string) {
		c.get("/dashboard/stores/" + st.ID + "/")
		code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Shop"}, "currency": {"EUR"},
			"confirmations": {"1"}, "xpub": {xpub}, "lightningAddress": {address}})
		return code, body
	}
	invoice := func() (*kassa.Invoice, error) {
		return e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
	}
	for _, bad := range []struct{ xpub, address, field string }{
		{"vpub5Y…", "", "xpub"},
		{"xpub-not-a-key", "", "xpub"},
		{"", "al!ce@wallet.example", "lightningAddress"},
		{"", "alice@wallet example", "lightningAddress"},
	} {
		code, body := save(bad.xpub, bad.address)
		if code != http.StatusUnprocessableEntity || !strings.Contains(body, bad.field) {
			t.Errorf("xpub %q, address %q: %d, want 422 naming %s", bad.xpub, bad.address, code, bad.field)
		}
		after, _ := e.db.Store(t.Context(), st.ID)
		if after.Xpub != "" || after.LightningAddress != "" {
			t.Fatalf("xpub %q, address %q: stored %q, %q", bad.xpub, bad.address, after.Xpub, after.LightningAddress)
		}
		if _, err := invoice(); err != nil {
			t.Fatalf("an invoice after refusing xpub %q: %v", bad.xpub, err)
		}
	}
	if code, body := save(testVpub, "alice@wallet.example"); code != http.StatusSeeOther {
		t.Fatalf("a good xpub and address: %d %s", code, body)
	}
	inv, err := invoice()
	if err != nil || inv.OnchainAddress == "" {
		t.Fatalf("an invoice of the store with an xpub: %v, %+v", err, inv)
	}
}
