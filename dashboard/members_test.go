package dashboard

import (
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

var (
	memberLinkRe   = regexp.MustCompile(`<code id="member-invite-link">[^<]*invite=([A-Za-z0-9_-]+)</code>`)
	memberRevokeRe = regexp.MustCompile(`action="/dashboard/stores/[^/]+/members/invites/([0-9a-f]{64})/revoke"`)
)

// memberEnv is a dashboard with open sign-up whose first account is not
// an operator, and no write limit.
func memberEnv(t *testing.T) *env {
	return newEnv(t, func(d *Deps) {
		d.SignupOperator = false
		d.Limits = Limits{StoresPerAccount: -1, WritesPerMinute: -1, SearchesPerMinute: -1}
	})
}

// roleOf reads email's role on storeID from its record.
func roleOf(t *testing.T, e *env, email, storeID string) (kassa.Role, bool) {
	t.Helper()
	u, err := e.dash.user(t.Context(), email)
	if err != nil || u == nil {
		t.Fatalf("account %s: %v", email, err)
	}
	return u.role(storeID)
}

// inviteMember makes an invitation to st with role on the members page
// and returns its code.
func inviteMember(t *testing.T, c *client, st *kassa.Store, role kassa.Role) string {
	t.Helper()
	c.get("/dashboard/stores/" + st.ID + "/members")
	code, body, _ := c.post("/dashboard/stores/"+st.ID+"/members/invites", url.Values{"role": {string(role)}})
	m := memberLinkRe.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("invite as %s: %d, no link:\n%s", role, code, body)
	}
	return m[1]
}

// join accepts an invitation with a signed-in client.
func (c *client) join(code string) (int, string, http.Header) {
	c.e.t.Helper()
	c.get("/dashboard/join?invite=" + code)
	return c.post("/dashboard/join", url.Values{"invite": {code}})
}

// TestOldStoreIDsReadAsOwner: an account record written before roles
// (storeIds only) loads, and its stores are its as Owner: it opens the
// members page and is listed there as the owner.
func TestOldStoreIDsReadAsOwner(t *testing.T) {
	e := memberEnv(t)
	st, err := e.sys.Service.CreateStore(t.Context(), kassa.StoreSettings{Name: "Old", Currency: kassa.EUR, ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	old := `{"email":"old@example.com","passwordHash":"` + hashPassword("correct horse battery") + `","storeIds":["` + st.ID + `"],"createdAt":"2026-01-01T00:00:00Z"}`
	if err := e.db.PutValue(t.Context(), userKey("old@example.com"), []byte(old), forever); err != nil {
		t.Fatal(err)
	}
	if r, ok := roleOf(t, e, "old@example.com", st.ID); !ok || r != kassa.RoleOwner {
		t.Fatalf("old record's store: %q %v, want Owner", r, ok)
	}
	c := e.client()
	if code := c.login("old@example.com", "correct horse battery"); code != http.StatusSeeOther {
		t.Fatalf("login: %d", code)
	}
	code, body, _ := c.get("/dashboard/stores/" + st.ID + "/members")
	if code != http.StatusOK || !strings.Contains(body, "old@example.com") || !strings.Contains(body, `data-role="Owner"`) {
		t.Fatalf("members page of an old owner: %d\n%s", code, body)
	}
}

// TestStoreInvitation: an owner invites by a one-use link with a role;
// the invitation is listed (role, maker, expiry, not the code) and
// revocable; an existing account accepts it and belongs to the store
// with that role, a new one signs up with it. A used, revoked or expired
// invitation is refused and changes nothing. One person belongs to two
// stores with two roles.
func TestStoreInvitation(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	other := owner.createStore("Other")

	code := inviteMember(t, owner, st, kassa.RoleEmployee)
	_, body, _ := owner.get("/dashboard/stores/" + st.ID + "/members")
	if ids := memberRevokeRe.FindAllStringSubmatch(body, -1); len(ids) != 1 || strings.Contains(body, code) || !strings.Contains(body, "2026-03-11") {
		t.Fatalf("open invitations listed wrong:\n%s", body)
	}

	// An existing account accepts.
	bob := e.client()
	bob.signup("bob@example.com")
	if c, body, hdr := bob.join(code); c != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/stores/"+st.ID+"/" {
		t.Fatalf("accept: %d %s\n%s", c, hdr.Get("Location"), body)
	}
	if r, ok := roleOf(t, e, "bob@example.com", st.ID); !ok || r != kassa.RoleEmployee {
		t.Fatalf("bob's role: %q %v", r, ok)
	}
	// Reused: refused, nothing changed.
	carol := e.client()
	carol.signup("carol@example.com")
	if c, body, _ := carol.join(code); c != http.StatusForbidden || !strings.Contains(body, msg("err.invite")) {
		t.Errorf("a used invitation: %d\n%s", c, body)
	}
	if _, ok := roleOf(t, e, "carol@example.com", st.ID); ok {
		t.Error("a used invitation made carol a member")
	}

	// A second store, another role: bob is Guest there.
	code2 := inviteMember(t, owner, other, kassa.RoleGuest)
	if c, _, _ := bob.join(code2); c != http.StatusSeeOther {
		t.Fatalf("accept the second store: %d", c)
	}
	if r, _ := roleOf(t, e, "bob@example.com", other.ID); r != kassa.RoleGuest {
		t.Errorf("bob on the other store: %q", r)
	}
	if r, _ := roleOf(t, e, "bob@example.com", st.ID); r != kassa.RoleEmployee {
		t.Errorf("bob on the first store after joining the second: %q", r)
	}

	// A new person signs up with the link.
	code3 := inviteMember(t, owner, st, kassa.RoleManager)
	dave := e.client()
	dave.get("/dashboard/signup?invite=" + code3)
	if c, body, _ := dave.post("/dashboard/signup", url.Values{"email": {"dave@example.com"}, "password": {"correct horse battery"}, "invite": {code3}}); c != http.StatusSeeOther {
		t.Fatalf("sign up with a store invitation: %d\n%s", c, body)
	}
	if r, _ := roleOf(t, e, "dave@example.com", st.ID); r != kassa.RoleManager {
		t.Errorf("dave's role: %q", r)
	}
	_, body, _ = owner.get("/dashboard/stores/" + st.ID + "/members")
	for _, want := range []string{"owner@example.com", "bob@example.com", "dave@example.com", `data-role="Manager"`, `data-role="Employee"`} {
		if !strings.Contains(body, want) {
			t.Errorf("members page lacks %s", want)
		}
	}

	// Revoked: refused.
	code4 := inviteMember(t, owner, st, kassa.RoleGuest)
	_, body, _ = owner.get("/dashboard/stores/" + st.ID + "/members")
	ids := memberRevokeRe.FindAllStringSubmatch(body, -1)
	if len(ids) != 1 {
		t.Fatalf("open invitations: %v", ids)
	}
	if c, _, _ := owner.post("/dashboard/stores/"+st.ID+"/members/invites/"+ids[0][1]+"/revoke", nil); c != http.StatusSeeOther {
		t.Fatalf("revoke: %d", c)
	}
	if c, _, _ := carol.join(code4); c != http.StatusForbidden {
		t.Errorf("a revoked invitation: %d", c)
	}

	// Expired: refused.
	code5 := inviteMember(t, owner, st, kassa.RoleGuest)
	e.clock.Advance(inviteLifetime + time.Minute)
	if c, _, _ := carol.join(code5); c != http.StatusForbidden {
		t.Errorf("an expired invitation: %d", c)
	}
	if _, ok := roleOf(t, e, "carol@example.com", st.ID); ok {
		t.Error("a refused invitation made carol a member")
	}
}

// TestLastOwner: the only owner can be neither demoted nor removed (a
// clear refusal, nothing changed); once another member is owner, both
// can. A guest cannot change roles (403) nor a manager's setting.
func TestLastOwner(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	members := "/dashboard/stores/" + st.ID + "/members"

	owner.get(members)
	for _, try := range []struct {
		path string
		form url.Values
	}{
		{members + "/role", url.Values{"email": {"owner@example.com"}, "role": {"Manager"}}},
		{members + "/remove", url.Values{"email": {"owner@example.com"}}},
	} {
		c, body, _ := owner.post(try.path, try.form)
		if c != http.StatusConflict || !strings.Contains(body, msgIn("en", "members.lastowner")) {
			t.Errorf("%s of the last owner: %d\n%s", try.path, c, body)
		}
		if r, ok := roleOf(t, e, "owner@example.com", st.ID); !ok || r != kassa.RoleOwner {
			t.Errorf("after %s: %q %v", try.path, r, ok)
		}
	}

	guest := e.client()
	guest.signup("guest@example.com")
	guest.join(inviteMember(t, owner, st, kassa.RoleGuest))
	guest.get("/dashboard/stores/" + st.ID + "/invoices")
	if c, body, _ := guest.post(members+"/role", url.Values{"email": {"guest@example.com"}, "role": {"Owner"}}); c != http.StatusForbidden || !strings.Contains(body, msg("err.forbidden")) {
		t.Errorf("a guest making itself owner: %d\n%s", c, body)
	}
	if c, _, _ := guest.post("/dashboard/stores/"+st.ID+"/settings", url.Values{"name": {"Mine"}}); c != http.StatusForbidden {
		t.Errorf("a guest changing the settings: %d", c)
	}
	if r, _ := roleOf(t, e, "guest@example.com", st.ID); r != kassa.RoleGuest {
		t.Errorf("guest's role after refusals: %q", r)
	}
	if got, _ := e.db.Store(t.Context(), st.ID); got.Name != "Shop" {
		t.Errorf("store renamed by a guest: %q", got.Name)
	}

	// Another owner: now the first may step down and leave.
	owner.get(members)
	if c, _, _ := owner.post(members+"/role", url.Values{"email": {"guest@example.com"}, "role": {"Owner"}}); c != http.StatusSeeOther {
		t.Fatalf("promote: %d", c)
	}
	if c, _, _ := owner.post(members+"/role", url.Values{"email": {"owner@example.com"}, "role": {"Manager"}}); c != http.StatusSeeOther {
		t.Fatalf("demote with another owner: %d", c)
	}
	owner.get(members + "/../invoices")
	if c, _, _ := guest.post(members+"/remove", url.Values{"email": {"owner@example.com"}}); c != http.StatusSeeOther {
		t.Fatalf("remove: %d", c)
	}
	if _, ok := roleOf(t, e, "owner@example.com", st.ID); ok {
		t.Error("removed member still belongs to the store")
	}
	if c, _, _ := owner.get("/dashboard/stores/" + st.ID + "/invoices"); c != http.StatusNotFound {
		t.Errorf("a removed member opens the store: %d", c)
	}
}

// TestDashboardRoutePermissions: every store route of the dashboard has
// a permission in storeRoutePerms and a row in docs/roles.md, the table
// of each role on each route that both APIs are checked against too
// (greenfield's TestRoleTable); each role is let through (any answer
// but 403) or refused with 403 on each, as its permissions say and as
// that table says. A route missing from either table fails the test;
// the message of one missing from docs/roles.md is its row as observed.
func TestDashboardRoutePermissions(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	table := kassatest.ReadRoleTable(t)["dashboard"]

	const prefix = "/stores/{storeId}"
	var routes []string
	chi.Walk(e.dash.router, func(method, route string, _ http.Handler, _ ...func(http.Handler) http.Handler) error {
		if rest, ok := strings.CutPrefix(route, prefix); ok {
			key := method + " " + rest
			if _, ok := storeRoutePerms[key]; !ok {
				t.Errorf("route %s %s has no permission in storeRoutePerms", method, route)
			}
			routes = append(routes, key)
		}
		return nil
	})
	if len(routes) < len(storeRoutePerms) {
		t.Errorf("%d store routes, %d in the table", len(routes), len(storeRoutePerms))
	}

	clients := map[kassa.Role]*client{kassa.RoleOwner: owner}
	for _, role := range kassa.Roles[1:] {
		c := e.client()
		c.signup(strings.ToLower(string(role)) + "@example.com")
		if code, _, _ := c.join(inviteMember(t, owner, st, role)); code != http.StatusSeeOther {
			t.Fatalf("join as %s: %d", role, code)
		}
		clients[role] = c
	}
	// got is each route's outcome for each role: let through or not.
	got := map[string]map[kassa.Role]bool{}
	record := func(key string, role kassa.Role, code int) {
		if got[key] == nil {
			got[key] = map[kassa.Role]bool{}
		}
		got[key][role] = code != http.StatusForbidden
	}
	param := regexp.MustCompile(`\{[A-Za-z]+\}`)
	for _, role := range kassa.Roles {
		c := clients[role]
		for _, key := range routes {
			method, rest, _ := strings.Cut(key, " ")
			if rest == "/members/remove" || rest == "/members/role" || rest == "/leave" {
				continue // below, with a member named; leaving last
			}
			path := "/dashboard/stores/" + st.ID + param.ReplaceAllString(rest, "x")
			var code int
			if method == http.MethodGet {
				code, _, _ = c.get(path)
			} else {
				c.get("/dashboard/stores/" + st.ID + "/invoices")
				code, _, _ = c.post(path, nil)
			}
			record(key, role, code)
			allowed := role.Permissions().Has(storeRoutePerms[key])
			if allowed && code == http.StatusForbidden || !allowed && code != http.StatusForbidden {
				t.Errorf("%s %s %s: %d, allowed %v", role, method, rest, code, allowed)
			}
		}
		// Role changes and removals, named at the guest (whose role the
		// owner's own change restores).
		c.get("/dashboard/stores/" + st.ID + "/invoices")
		code, _, _ := c.post("/dashboard/stores/"+st.ID+"/members/role", url.Values{"email": {"guest@example.com"}, "role": {"Guest"}})
		record("POST /members/role", role, code)
		if allowed := role.Permissions().Has(kassa.PermManageMembers); allowed != (code == http.StatusSeeOther) || !allowed && code != http.StatusForbidden {
			t.Errorf("%s POST /members/role: %d", role, code)
		}
		if role != kassa.RoleOwner {
			code, _, _ := c.post("/dashboard/stores/"+st.ID+"/members/remove", url.Values{"email": {"guest@example.com"}})
			record("POST /members/remove", role, code)
			if code != http.StatusForbidden {
				t.Errorf("%s POST /members/remove: %d", role, code)
			}
		}
	}
	// Every role may leave (TestLeaveStore): the guest, who joins again
	// for the owner to remove; the others; the owner, the last one, is
	// told why not (409).
	leave := func(role kassa.Role, want int) {
		t.Helper()
		c := clients[role]
		c.get("/dashboard/stores")
		code, _, _ := c.post("/dashboard/stores/"+st.ID+"/leave", nil)
		record("POST /leave", role, code)
		if code != want || !role.Permissions().Has(storeRoutePerms["POST /leave"]) {
			t.Errorf("%s POST /leave: %d, want %d", role, code, want)
		}
	}
	leave(kassa.RoleGuest, http.StatusSeeOther)
	clients[kassa.RoleGuest].join(inviteMember(t, owner, st, kassa.RoleGuest))
	owner.get("/dashboard/stores/" + st.ID + "/members")
	code, _, _ := owner.post("/dashboard/stores/"+st.ID+"/members/remove", url.Values{"email": {"guest@example.com"}})
	record("POST /members/remove", kassa.RoleOwner, code)
	if code != http.StatusSeeOther {
		t.Errorf("Owner POST /members/remove: %d", code)
	}
	leave(kassa.RoleEmployee, http.StatusSeeOther)
	leave(kassa.RoleManager, http.StatusSeeOther)
	leave(kassa.RoleOwner, http.StatusConflict)

	var docs kassatest.RoleTable
	for _, key := range routes {
		method, rest, _ := strings.Cut(key, " ")
		route := method + " /dashboard" + prefix + rest
		want, ok := table[route]
		if !ok {
			t.Errorf("dashboard %s is served but not in docs/roles.md; as served its row is\n%s", route, docs.Row("dashboard", route, got[key]))
			continue
		}
		for _, role := range kassa.Roles {
			if got[key][role] != want[role] {
				t.Errorf("dashboard %s for %s: let through %v, docs/roles.md says %v", route, role, got[key][role], want[role])
			}
		}
	}
	for route := range table {
		method, rest, _ := strings.Cut(route, " ")
		if !slices.Contains(routes, method+" "+strings.TrimPrefix(rest, "/dashboard"+prefix)) {
			t.Errorf("dashboard %s is in docs/roles.md but not served", route)
		}
	}
}

// TestPagesHideActions: an employee's store menu has neither settings,
// keys, webhooks nor members; an owner's has them all.
func TestPagesHideActions(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	emp := e.client()
	emp.signup("emp@example.com")
	emp.join(inviteMember(t, owner, st, kassa.RoleEmployee))
	_, body, _ := emp.get("/dashboard/stores/" + st.ID + "/invoices")
	for _, p := range []string{"/keys", "/webhooks", "/members", "/balance"} {
		if strings.Contains(body, `href="/dashboard/stores/`+st.ID+p+`"`) {
			t.Errorf("an employee's menu links to %s", p)
		}
	}
	_, body, _ = owner.get("/dashboard/stores/" + st.ID + "/invoices")
	for _, p := range []string{"/keys", "/webhooks", "/members", "/balance"} {
		if !strings.Contains(body, `href="/dashboard/stores/`+st.ID+p+`"`) {
			t.Errorf("an owner's menu lacks %s", p)
		}
	}
	// A guest sees pay links but no form to make one; a manager sees
	// the settings but no button to save them.
	guest := e.client()
	guest.signup("guest@example.com")
	guest.join(inviteMember(t, owner, st, kassa.RoleGuest))
	if c, body, _ := guest.get("/dashboard/stores/" + st.ID + "/paylinks"); c != http.StatusOK || strings.Contains(body, `action="/dashboard/stores/`+st.ID+`/paylinks"`) {
		t.Errorf("a guest's pay links page: %d, offers the create form %v", c, strings.Contains(body, `action="/dashboard/stores/`+st.ID+`/paylinks"`))
	}
	manager := e.client()
	manager.signup("manager@example.com")
	manager.join(inviteMember(t, owner, st, kassa.RoleManager))
	if c, body, _ := manager.get("/dashboard/stores/" + st.ID + "/"); c != http.StatusOK || strings.Contains(body, msg("settings.save")) {
		t.Errorf("a manager's settings page: %d, offers saving %v", c, strings.Contains(body, msg("settings.save")))
	}
	if _, body, _ := owner.get("/dashboard/stores/" + st.ID + "/"); !strings.Contains(body, msg("settings.save")) {
		t.Error("the owner's settings page offers no saving")
	}
	// The store list sends an employee to the invoices, which it may see.
	if c, _, hdr := emp.get("/dashboard/stores/" + st.ID + "/"); c != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/stores/"+st.ID+"/invoices" {
		t.Errorf("an employee's store home: %d %s", c, hdr.Get("Location"))
	}
}

// TestStoreInvitationSignsUpWhenSignupNeedsInvitation: with sign-up by
// invitation only, a store's invitation admits the one account it makes,
// as a member with its role, and no second.
func TestStoreInvitationSignsUpWhenSignupNeedsInvitation(t *testing.T) {
	e := newEnv(t, func(d *Deps) { d.Signup, d.SignupOperator = SignupInvite, false })
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "owner@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	owner := e.client()
	owner.login("owner@example.com", "correct horse battery")
	st := owner.createStore("Shop")
	code := inviteMember(t, owner, st, kassa.RoleGuest)
	for i, email := range []string{"new@example.com", "second@example.com"} {
		c := e.client()
		c.get("/dashboard/signup?invite=" + code)
		got, _, _ := c.post("/dashboard/signup", url.Values{"email": {email}, "password": {"correct horse battery"}, "invite": {code}})
		if want := []int{http.StatusSeeOther, http.StatusForbidden}[i]; got != want {
			t.Errorf("sign-up %d with the store invitation: %d, want %d", i+1, got, want)
		}
	}
	if r, _ := roleOf(t, e, "new@example.com", st.ID); r != kassa.RoleGuest {
		t.Errorf("new account's role: %q", r)
	}
	if u, _ := e.dash.user(t.Context(), "second@example.com"); u != nil {
		t.Error("a used invitation made a second account")
	}
}

// TestLeaveStore: each member may leave a store from the stores page
// (a CSRF-checked form), after which the store is gone from its list
// and refuses it; the last owner cannot leave and is told why, and
// leaves once another member is owner.
func TestLeaveStore(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	leave := "/dashboard/stores/" + st.ID + "/leave"

	if _, body, _ := owner.get("/dashboard/stores"); !strings.Contains(body, `action="`+leave+`"`) {
		t.Error("the stores page offers no way to leave the store")
	}
	c, body, _ := owner.post(leave, nil)
	if c != http.StatusConflict || !strings.Contains(body, template.HTMLEscapeString(msg("err.leave.lastowner"))) {
		t.Errorf("the last owner leaving: %d\n%s", c, body)
	}
	if r, ok := roleOf(t, e, "owner@example.com", st.ID); !ok || r != kassa.RoleOwner {
		t.Errorf("the last owner after trying to leave: %q %v", r, ok)
	}

	for _, role := range []kassa.Role{kassa.RoleGuest, kassa.RoleEmployee, kassa.RoleManager} {
		email := strings.ToLower(string(role)) + "@example.com"
		m := e.client()
		m.signup(email)
		m.join(inviteMember(t, owner, st, role))
		m.get("/dashboard/stores")
		csrf := m.csrf
		m.csrf = "wrong"
		if c, _, _ := m.post(leave, nil); c != http.StatusForbidden {
			t.Errorf("%s leaving without the CSRF token: %d", role, c)
		}
		m.csrf = csrf
		if _, ok := roleOf(t, e, email, st.ID); !ok {
			t.Fatalf("%s left without the CSRF token", role)
		}
		c, _, hdr := m.post(leave, nil)
		if c != http.StatusSeeOther || hdr.Get("Location") != "/dashboard/stores?done=left" {
			t.Errorf("%s leaving: %d to %q", role, c, hdr.Get("Location"))
		}
		if _, ok := roleOf(t, e, email, st.ID); ok {
			t.Errorf("%s still belongs to the store it left", role)
		}
		if _, body, _ := m.get("/dashboard/stores?done=left"); !strings.Contains(body, msg("done.left")) || strings.Contains(body, st.ID) {
			t.Errorf("%s's stores page after leaving lists the store or does not say it left", role)
		}
		if c, _, _ := m.get("/dashboard/stores/" + st.ID + "/invoices"); c != http.StatusNotFound {
			t.Errorf("%s opens the store it left: %d", role, c)
		}
		if list, _ := e.dash.members(t.Context(), st.ID); len(list) != 1 {
			t.Errorf("members after %s left: %v", role, list)
		}
	}

	// With another owner, the first may leave.
	other := e.client()
	other.signup("other@example.com")
	other.join(inviteMember(t, owner, st, kassa.RoleOwner))
	owner.get("/dashboard/stores")
	if c, _, _ := owner.post(leave, nil); c != http.StatusSeeOther {
		t.Fatalf("an owner leaving with another owner: %d", c)
	}
	if list, _ := e.dash.members(t.Context(), st.ID); len(list) != 1 || list[0].Email != "other@example.com" {
		t.Errorf("members after the first owner left: %v", list)
	}
}

// TestOperatorLeavesNothing: an operator sees every store but belongs
// to none it did not join: no Leave button, and leaving is 409 saying
// so, with the store's members unchanged.
func TestOperatorLeavesNothing(t *testing.T) {
	e := newEnv(t)
	op := e.client()
	op.signup("op@example.com") // the first account: the operator
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	leave := "/dashboard/stores/" + st.ID + "/leave"
	_, body, _ := op.get("/dashboard/stores")
	if !strings.Contains(body, st.ID) || strings.Contains(body, `action="`+leave+`"`) {
		t.Errorf("the operator's stores page: lists the store %v, offers to leave it %v", strings.Contains(body, st.ID), strings.Contains(body, leave))
	}
	if c, body, _ := op.post(leave, nil); c != http.StatusConflict || !strings.Contains(body, msg("err.leave.notmember")) {
		t.Errorf("the operator leaving a store it is not in: %d", c)
	}
	if list, _ := e.dash.members(t.Context(), st.ID); len(list) != 1 || list[0].Email != "owner@example.com" {
		t.Errorf("members after the operator tried to leave: %v", list)
	}
}
