package kassa

import (
	"slices"
	"strings"
	"testing"
)

func TestParsePermissionKnownNames(t *testing.T) {
	for _, p := range AllPermissions {
		got, err := ParsePermission(string(p))
		if err != nil || got != p {
			t.Errorf("ParsePermission(%q) = %q, %v", p, got, err)
		}
	}
	// BTCPay compares policies case-insensitively and trims them.
	if got, err := ParsePermission(" BTCPay.Store.CanViewInvoices "); err != nil || got != PermViewInvoices {
		t.Errorf("mixed case = %q, %v", got, err)
	}
}

func TestParsePermissionUnknown(t *testing.T) {
	for _, s := range []string{"", "btcpay.store.canfly", "btcpay.server.canmodifyserversettings", "unrestricted", "btcpay.user.canviewprofile", "canviewinvoices"} {
		_, err := ParsePermission(s)
		if ErrorCode(err) != Invalid || !strings.Contains(ErrorMessage(err), "unknown permission") {
			t.Errorf("ParsePermission(%q) = %v, want an unknown permission error", s, err)
		}
	}
}

func TestParseGrantForms(t *testing.T) {
	g, err := ParseGrant("btcpay.store.cancreateinvoice")
	if err != nil || g.Permission != PermCreateInvoice || g.StoreID != "" || g.String() != "btcpay.store.cancreateinvoice" {
		t.Errorf("bare = %+v, %v", g, err)
	}
	g, err = ParseGrant("btcpay.store.cancreateinvoice:store_abc")
	if err != nil || g.Permission != PermCreateInvoice || g.StoreID != "store_abc" || g.String() != "btcpay.store.cancreateinvoice:store_abc" {
		t.Errorf("scoped = %+v, %v", g, err)
	}
	for _, bad := range []string{"btcpay.store.cancreateinvoice:", "btcpay.store.nope:store_abc", ":store_abc"} {
		if _, err := ParseGrant(bad); ErrorCode(err) != Invalid {
			t.Errorf("ParseGrant(%q) = %v, want Invalid", bad, err)
		}
	}
}

func TestParsePermissionsNamesEveryUnknownAndDeduplicates(t *testing.T) {
	ps, err := ParsePermissions([]string{"btcpay.store.canviewinvoices", "BTCPAY.STORE.CANVIEWINVOICES", "btcpay.store.cancreateinvoice"})
	if err != nil || !slices.Equal(ps, Permissions{PermViewInvoices, PermCreateInvoice}) {
		t.Errorf("ParsePermissions = %v, %v", ps, err)
	}
	_, err = ParsePermissions([]string{"btcpay.store.canfly", "btcpay.store.canviewinvoices", "x.y"})
	msg := ErrorMessage(err)
	if ErrorCode(err) != Invalid || !strings.Contains(msg, "btcpay.store.canfly") || !strings.Contains(msg, "x.y") {
		t.Errorf("unknown ones: %v", err)
	}
	if _, err := ParsePermissions(nil); ErrorCode(err) != Invalid {
		t.Errorf("none: %v, want Invalid (a key holds at least one permission)", err)
	}
}

// BTCPay's implications (BTCPayServer.Client/Permissions.cs, Permission.Init).
func TestPermissionImplications(t *testing.T) {
	implied := []struct{ p, q Permission }{
		{PermModifyStoreSettings, PermViewStoreSettings},
		{PermModifyStoreSettings, PermModifyInvoices},
		{PermModifyStoreSettings, PermViewInvoices},
		{PermModifyStoreSettings, PermCreateInvoice},
		{PermModifyStoreSettings, PermModifyWebhooks},
		{PermModifyStoreSettings, PermModifyPaymentRequests},
		{PermModifyStoreSettings, PermManagePullPayments},
		{PermModifyStoreSettings, PermCreateNonApprovedPullPayments},
		{PermModifyStoreSettings, PermManagePayouts},
		{PermModifyStoreSettings, PermViewPayouts},
		{PermModifyInvoices, PermViewInvoices},
		{PermModifyInvoices, PermCreateInvoice},
		{PermViewStoreSettings, PermViewInvoices},
		{PermViewStoreSettings, PermViewReports},
		{PermViewStoreSettings, PermViewPaymentRequests},
		{PermViewStoreSettings, PermViewPullPayments},
		{PermViewStoreSettings, PermViewPayouts},
		{PermModifyPaymentRequests, PermViewPaymentRequests},
		{PermManagePullPayments, PermCreatePullPayments},
		{PermManagePullPayments, PermArchivePullPayments},
		{PermCreatePullPayments, PermCreateNonApprovedPullPayments},
		{PermCreateNonApprovedPullPayments, PermViewPullPayments},
		{PermManagePayouts, PermViewPayouts},
		{PermViewInvoices, PermViewInvoices},
	}
	for _, c := range implied {
		if !c.p.Implies(c.q) {
			t.Errorf("%s does not imply %s", c.p, c.q)
		}
	}
	notImplied := []struct{ p, q Permission }{
		{PermViewInvoices, PermModifyInvoices},
		{PermCreateInvoice, PermViewInvoices},
		{PermViewStoreSettings, PermModifyInvoices},
		{PermViewStoreSettings, PermCreateInvoice},
		{PermModifyInvoices, PermModifyWebhooks},
		// Kassa's own: members and keys are the owner's, not the settings'.
		{PermModifyStoreSettings, PermManageMembers},
		{PermModifyStoreSettings, PermManageAPIKeys},
	}
	for _, c := range notImplied {
		if c.p.Implies(c.q) {
			t.Errorf("%s implies %s", c.p, c.q)
		}
	}
}

func TestPermissionsHas(t *testing.T) {
	ps := Permissions{PermModifyInvoices, PermModifyWebhooks}
	for _, q := range []Permission{PermViewInvoices, PermCreateInvoice, PermModifyInvoices, PermModifyWebhooks} {
		if !ps.Has(q) {
			t.Errorf("%v lacks %s", ps, q)
		}
	}
	if ps.Has(PermViewStoreSettings) || Permissions(nil).Has(PermViewInvoices) {
		t.Error("Has admits what is not held")
	}
}

func TestEveryPermissionIsDescribed(t *testing.T) {
	for _, p := range AllPermissions {
		if d := p.Describe(); d == "" || d == string(p) {
			t.Errorf("%s has no plain description", p)
		}
	}
}

func TestRoles(t *testing.T) {
	if len(Roles) != 4 || Roles[0] != RoleOwner || Roles[1] != RoleManager || Roles[2] != RoleEmployee || Roles[3] != RoleGuest {
		t.Fatalf("Roles = %v", Roles)
	}
	owner := RoleOwner.Permissions()
	for _, p := range AllPermissions {
		if !owner.Has(p) {
			t.Errorf("Owner lacks %s", p)
		}
	}
	// Each role holds no more than the one above it.
	for i := 1; i < len(Roles); i++ {
		for _, p := range AllPermissions {
			if Roles[i].Permissions().Has(p) && !Roles[i-1].Permissions().Has(p) {
				t.Errorf("%s holds %s that %s does not", Roles[i], p, Roles[i-1])
			}
		}
	}
	for _, c := range []struct {
		role Role
		p    Permission
		want bool
	}{
		{RoleManager, PermManageMembers, false},
		{RoleManager, PermModifyStoreSettings, false},
		{RoleManager, PermModifyWebhooks, true},
		{RoleManager, PermManagePayouts, true},
		{RoleEmployee, PermCreateInvoice, true},
		{RoleEmployee, PermModifyInvoices, true},
		{RoleEmployee, PermManagePayouts, false},
		{RoleEmployee, PermCreateNonApprovedPullPayments, true},
		{RoleGuest, PermViewInvoices, true},
		{RoleGuest, PermCreateInvoice, true},
		{RoleGuest, PermModifyInvoices, false},
		{RoleGuest, PermModifyWebhooks, false},
	} {
		if got := c.role.Permissions().Has(c.p); got != c.want {
			t.Errorf("%s has %s = %v, want %v", c.role, c.p, got, c.want)
		}
	}
	if r, err := ParseRole("manager"); err != nil || r != RoleManager {
		t.Errorf("ParseRole = %v, %v", r, err)
	}
	if _, err := ParseRole("Admin"); ErrorCode(err) != Invalid {
		t.Errorf("ParseRole(Admin) = %v", err)
	}
}

func TestPrincipalCan(t *testing.T) {
	p := KeyPrincipal("store_a", APIKey{ID: "key_1", Permissions: Permissions{PermCreateInvoice}})
	if !p.Can("store_a", PermCreateInvoice) {
		t.Error("cannot create on its own store")
	}
	if p.Can("store_a", PermViewInvoices) || p.Can("store_b", PermCreateInvoice) {
		t.Error("can do what it was not granted, or on another store")
	}
	var none *Principal
	if none.Can("store_a", PermViewInvoices) {
		t.Error("a nil principal can")
	}
	// A key stored without permissions has what every key had before keys
	// carried permissions.
	old := KeyPrincipal("store_a", APIKey{ID: "key_0"})
	for _, q := range DefaultKeyPermissions {
		if !old.Can("store_a", q) {
			t.Errorf("an old key cannot %s", q)
		}
	}
	if old.Can("store_a", PermModifyStoreSettings) || old.Can("store_a", PermManageAPIKeys) {
		t.Error("an old key holds more than the API served it")
	}
}
