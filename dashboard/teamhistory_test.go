package dashboard

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
)

// teamLines are storeID's history lines of its team, oldest first, as
// "action subject detail by actor@addr".
func teamLines(t *testing.T, e *env, storeID string) []string {
	t.Helper()
	var out []string
	_, err := e.db.History(t.Context(), storeID, kassa.HistoryQuery{}, func(l *kassa.HistoryLine) error {
		if strings.HasPrefix(l.Action, "member.") || strings.HasPrefix(l.Action, "invite.") {
			out = append([]string{l.Action + " " + l.Subject + " " + l.Detail + " by " + l.Actor.ID + "@" + l.Actor.Addr}, out...)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTeamHistoryLines: each change of a store's team writes a line of
// its history naming who made it and from where: an invitation made and
// revoked (named by the start of its id, never its code), a member who
// joins by an invitation (signed in, or signing up with it), a role
// changed, a member removed and one who leaves.
func TestTeamHistoryLines(t *testing.T) {
	e := memberEnv(t)
	owner := e.client()
	owner.signup("owner@example.com")
	st := owner.createStore("Shop")
	base := "/dashboard/stores/" + st.ID

	codeBob := inviteMember(t, owner, st, kassa.RoleEmployee)
	codeRevoked := inviteMember(t, owner, st, kassa.RoleGuest)
	_, body, _ := owner.get(base + "/members")
	ids := memberRevokeRe.FindAllStringSubmatch(body, -1)
	if len(ids) != 2 {
		t.Fatalf("%d open invitations listed", len(ids))
	}
	revoked := ids[1][1]
	if code, _, _ := owner.post(base+"/members/invites/"+revoked+"/revoke", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("revoke: %d", code)
	}

	bob := e.client()
	bob.signup("bob@example.com")
	if code, _, _ := bob.join(codeBob); code != http.StatusSeeOther {
		t.Fatalf("bob joins: %d", code)
	}
	codeCarol := inviteMember(t, owner, st, kassa.RoleGuest)
	carol := e.client()
	carol.get("/dashboard/signup?invite=" + codeCarol)
	if code, body, _ := carol.post("/dashboard/signup", url.Values{"email": {"carol@example.com"}, "password": {"correct horse battery"}, "invite": {codeCarol}}); code != http.StatusSeeOther {
		t.Fatalf("carol signs up with the invitation: %d %s", code, body)
	}
	if code, _, _ := owner.post(base+"/members/role", url.Values{"email": {"bob@example.com"}, "role": {"Manager"}}); code != http.StatusSeeOther {
		t.Fatalf("role: %d", code)
	}
	if code, _, _ := owner.post(base+"/members/remove", url.Values{"email": {"carol@example.com"}}); code != http.StatusSeeOther {
		t.Fatalf("remove: %d", code)
	}
	bob.get(base + "/invoices")
	if code, _, _ := bob.post(base+"/leave", url.Values{}); code != http.StatusSeeOther {
		t.Fatalf("leave: %d", code)
	}

	by := " by owner@example.com@127.0.0.1"
	want := []string{
		"invite.created " + hashHex(codeBob)[:12] + " Employee" + by,
		"invite.created " + revoked[:12] + " Guest" + by,
		"invite.revoked " + revoked[:12] + " Guest" + by,
		"member.joined bob@example.com Employee by bob@example.com@127.0.0.1",
		"invite.created " + hashHex(codeCarol)[:12] + " Guest" + by,
		"member.joined carol@example.com Guest by carol@example.com@127.0.0.1",
		"member.rolechanged bob@example.com Employee → Manager" + by,
		"member.removed carol@example.com Guest" + by,
		"member.left bob@example.com Manager by bob@example.com@127.0.0.1",
	}
	got := teamLines(t, e, st.ID)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("team lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	all, _ := json.Marshal(got)
	for _, code := range []string{codeBob, codeRevoked, codeCarol} {
		if strings.Contains(string(all), code) {
			t.Fatal("a line holds an invitation's code")
		}
	}
	// The History page filters by the team's kinds.
	for kind, n := range map[string]int{"member": 5, "invite": 4} {
		if code, body, _ := owner.get(base + "/history?kind=" + kind); code != http.StatusOK || strings.Count(body, `class="hline"`) != n {
			t.Errorf("kind %s: %d, %d lines, want %d", kind, code, strings.Count(body, `class="hline"`), n)
		}
	}
}

// TestOldTeamRecordsLoad: a store whose team the dashboard's records of
// an older version hold (its list of members, the roles on the
// accounts' records and its open invitations) opens with that team;
// its owner and members keep their roles, an old invitation is still
// accepted, and from then on each change writes its history line.
func TestOldTeamRecordsLoad(t *testing.T) {
	e := memberEnv(t)
	st, err := e.sys.Service.CreateStore(t.Context(), kassa.StoreSettings{Name: "Old", Currency: kassa.EUR, ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	put := func(key, value string) {
		t.Helper()
		if err := e.db.PutValue(t.Context(), key, []byte(value), forever); err != nil {
			t.Fatal(err)
		}
	}
	pw := hashPassword("correct horse battery")
	put(userKey("old@example.com"), `{"email":"old@example.com","passwordHash":"`+pw+`","storeIds":["`+st.ID+`"],"createdAt":"2026-01-01T00:00:00Z"}`)
	put(userKey("emp@example.com"), `{"email":"emp@example.com","passwordHash":"`+pw+`","storeIds":["`+st.ID+`"],"roles":{"`+st.ID+`":"Employee"},"createdAt":"2026-01-01T00:00:00Z"}`)
	put(userKey("new@example.com"), `{"email":"new@example.com","passwordHash":"`+pw+`","storeIds":[],"createdAt":"2026-01-01T00:00:00Z"}`)
	put("dash/store/"+st.ID+"/members", `["old@example.com","emp@example.com"]`)
	code := newToken()
	expires := testNow.Add(inviteLifetime).Format("2006-01-02T15:04:05Z")
	put(inviteKey(code), `{"by":"old@example.com","expires":"`+expires+`","storeId":"`+st.ID+`","role":"Guest"}`)
	put("dash/store/"+st.ID+"/invites", `[{"id":"`+hashHex(code)+`","by":"old@example.com","role":"Guest","created":"2026-03-01T00:00:00Z","expires":"`+expires+`"}]`)

	old := e.client()
	if c := old.login("old@example.com", "correct horse battery"); c != http.StatusSeeOther {
		t.Fatalf("login: %d", c)
	}
	base := "/dashboard/stores/" + st.ID
	c, body, _ := old.get(base + "/members")
	if c != http.StatusOK || !strings.Contains(body, "old@example.com") || !strings.Contains(body, "emp@example.com") ||
		!strings.Contains(body, `data-role="Employee"`) || len(memberRevokeRe.FindAllStringSubmatch(body, -1)) != 1 {
		t.Fatalf("members page of an old team: %d\n%s", c, body)
	}
	emp := e.client()
	emp.login("emp@example.com", "correct horse battery")
	if c, _, _ := emp.get(base + "/members"); c != http.StatusForbidden {
		t.Errorf("an old Employee on the members page: %d, want 403", c)
	}
	// The last owner stays.
	if c, _, _ := old.post(base+"/members/role", url.Values{"email": {"old@example.com"}, "role": {"Manager"}}); c != http.StatusConflict {
		t.Errorf("the last owner steps down: %d, want 409", c)
	}
	nc := e.client()
	nc.login("new@example.com", "correct horse battery")
	if c, _, _ := nc.join(code); c != http.StatusSeeOther {
		t.Fatalf("the old invitation: %d", c)
	}
	if r, ok := roleOf(t, e, "new@example.com", st.ID); !ok || r != kassa.RoleGuest {
		t.Fatalf("joined as %q %v", r, ok)
	}
	want := []string{"member.joined new@example.com Guest by new@example.com@127.0.0.1"}
	if got := teamLines(t, e, st.ID); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("team lines: %q, want %q", got, want)
	}
}

// TestSignupWithInviteTheStoreRevoked: an invitation the store's team
// no longer holds makes no account, though its record still reads as
// open.
func TestSignupWithInviteTheStoreRevoked(t *testing.T) {
	e := newEnv(t, func(d *Deps) {
		d.SignupOperator = false
		d.Signup = SignupInvite
		d.Limits = Limits{StoresPerAccount: -1, WritesPerMinute: -1, SearchesPerMinute: -1}
	})
	owner := e.client()
	if _, err := e.dash.createUser(t.Context(), newAccount{email: "owner@example.com", password: "correct horse battery"}); err != nil {
		t.Fatal(err)
	}
	owner.login("owner@example.com", "correct horse battery")
	st := owner.createStore("Shop")
	code := inviteMember(t, owner, st, kassa.RoleGuest)
	if _, err := e.sys.Service.ChangeMembers(t.Context(), st.ID, kassa.MemberChange{Action: kassa.ActionInviteRevoked, InviteID: hashHex(code)}); err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.get("/dashboard/signup?invite=" + code)
	if status, _, _ := c.post("/dashboard/signup", url.Values{"email": {"new@example.com"}, "password": {"correct horse battery"}, "invite": {code}}); status != http.StatusForbidden {
		t.Errorf("signup with the revoked invitation: %d, want 403", status)
	}
	if u, err := e.dash.user(t.Context(), "new@example.com"); err != nil || u != nil {
		t.Errorf("an account was made: %v %v", u, err)
	}
}
