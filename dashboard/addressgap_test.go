package dashboard

import (
	"net/url"
	"regexp"
	"strconv"
	"strings"
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

// TestSettingsWalletGapLimit: a store sets the gap limit its wallet
// scans; the settings page shows the gap against it and warns at three
// quarters of it; a value out of bounds is refused with nothing stored.
func TestSettingsWalletGapLimit(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signup("a@example.com")
	st := c.createStore("Shop")
	c.get("/dashboard/stores/" + st.ID + "/")
	save := func(limit string) (int, string) {
		t.Helper()
		code, body, _ := c.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Shop"}, "currency": {"EUR"},
			"confirmations": {"1"}, "xpub": {testVpub}, "walletGapLimit": {limit}})
		return code, body
	}
	for _, bad := range []string{"-1", "1001", "x", "20.5"} {
		if code, body := save(bad); code != 422 || !strings.Contains(body, "walletGapLimit") {
			t.Errorf("gap limit %q: %d, want 422 naming the field:\n%s", bad, code, body)
		}
		if got, _ := e.db.Store(t.Context(), st.ID); got.WalletGapLimit != 0 || got.Xpub != "" {
			t.Fatalf("gap limit %q refused but stored: %d %q", bad, got.WalletGapLimit, got.Xpub)
		}
	}
	if code, body := save("8"); code != 303 {
		t.Fatalf("save a gap limit of 8: %d %s", code, body)
	}
	if got, _ := e.db.Store(t.Context(), st.ID); got.WalletGapLimit != 8 {
		t.Fatalf("stored gap limit %d, want 8", got.WalletGapLimit)
	}
	_, body, _ := c.get("/dashboard/stores/" + st.ID + "/")
	if !strings.Contains(body, `name="walletGapLimit" value="8"`) {
		t.Errorf("the form does not show the saved gap limit:\n%s", body)
	}
	for range 5 {
		if _, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR}); err != nil {
			t.Fatal(err)
		}
	}
	_, body, _ = c.get("/dashboard/stores/" + st.ID + "/")
	m := addressGap.FindStringSubmatch(body)
	if m == nil || m[1] != "5" || m[2] != "8" || strings.Contains(body, `id="gap-warning"`) {
		t.Errorf("5 unused of 8: got %v, warning %v; want 5 / 8 and no warning", m, strings.Contains(body, `id="gap-warning"`))
	}
	if _, err := e.sys.Service.CreateInvoice(t.Context(), st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(10), HasAmount: true, Currency: kassa.EUR}); err != nil {
		t.Fatal(err)
	}
	if _, body, _ = c.get("/dashboard/stores/" + st.ID + "/"); !strings.Contains(body, `id="gap-warning"`) {
		t.Errorf("6 unused of 8: no warning")
	}
	// Emptied, the field takes the default again.
	if code, body := save(""); code != 303 {
		t.Fatalf("clear the gap limit: %d %s", code, body)
	}
	if got, _ := e.db.Store(t.Context(), st.ID); got.WalletGapLimit != 0 || got.GapLimit() != kassa.WalletGapLimit {
		t.Fatalf("cleared gap limit: stored %d, effective %d", got.WalletGapLimit, got.GapLimit())
	}
}
