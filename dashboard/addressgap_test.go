package dashboard

import (
	"net/url"
	"regexp"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
)

var addressGap = regexp.MustCompile(`id="address-gap"[^>]*>[^<]*<strong>([0-9]+)</strong> / ([0-9]+)`)

// TestSettingsShowAddressGap: the settings of a store with an xpub show
// how many of its addresses were handed out since the last one paid
// on-chain, beside the gap limit its wallet scans (20), and warn once
// the gap comes within a quarter of the limit, before it passes it; a
// store without an xpub shows neither.
func TestSettingsShowAddressGap(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	gap := func() (unused, limit int, warned bool) {
		t.Helper()
		_, body, _ := c.get("/dashboard/stores/" + st.ID + "/")
		m := addressGap.FindStringSubmatch(body)
		if m == nil {
			t.Fatalf("no address gap on the settings page:\n%s", body)
		}
		unused, _ = strconv.Atoi(m[1])
		limit, _ = strconv.Atoi(m[2])
		return unused, limit, regexp.MustCompile(`id="gap-warning"`).MatchString(body)
	}
	if _, body, _ := c.get("/dashboard/stores/" + st.ID + "/"); addressGap.MatchString(body) {
		t.Errorf("a store without an xpub shows an address gap")
	}
	c.get("/dashboard/stores/" + st.ID + "/")
	if code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Shop"}, "currency": {"EUR"},
		"confirmations": {"1"}, "xpub": {testVpub}}); code != 303 {
		t.Fatalf("save the xpub: %d %s", code, body)
	}
	create := func() *kassa.Invoice {
		t.Helper()
		inv, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR})
		if err != nil || inv.DerivationIndex == nil {
			t.Fatalf("create: %v, %+v", err, inv)
		}
		return inv
	}
	var invs []*kassa.Invoice
	for range 3 {
		invs = append(invs, create())
	}
	if unused, limit, warned := gap(); unused != 3 || limit != 20 || warned {
		t.Errorf("three unpaid addresses: gap %d / %d, warned %v; want 3 / 20, no warning", unused, limit, warned)
	}
	// The second address paid on-chain: one handed out since.
	if _, err := e.sim.Pay(t.Context(), invs[1], kassa.MethodOnchain, 0); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "payment seen", func() bool {
		got, err := e.db.Invoice(t.Context(), invs[1].ID)
		return err == nil && len(got.Payments) > 0
	})
	if unused, _, warned := gap(); unused != 1 || warned {
		t.Errorf("after the second address was paid: gap %d, warned %v; want 1, no warning", unused, warned)
	}
	// A Lightning payment leaves the address unused.
	ln := create()
	e.settle(ln)
	for range 12 {
		create()
	}
	if unused, _, warned := gap(); unused != 14 || warned {
		t.Errorf("14 unused: gap %d, warned %v; want no warning yet", unused, warned)
	}
	create()
	if unused, _, warned := gap(); unused != 15 || !warned {
		t.Errorf("15 unused of 20: gap %d, warned %v; want the warning", unused, warned)
	}
}
