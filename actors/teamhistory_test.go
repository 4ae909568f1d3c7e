package actors

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestTeamChangeAndLineTogether: a change of a store's team (an
// invitation made or revoked, a member joining, a role changed, a
// member removed or leaving) whose write fails leaves neither the change
// nor its history line, and a line whose write fails leaves no change.
// Once the fault is gone, each change is made with its line; the import
// of a team kept outside the store writes none.
func TestTeamChangeAndLineTogether(t *testing.T) {
	for _, fault := range []string{"change", "line"} {
		t.Run(fault, func(t *testing.T) {
			clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			h := newLineFaultHarness(t, fault, clock)
			db, id := h.db, h.store.ID
			acct := accountCtx(id)
			svc := h.sys.Service
			if _, err := svc.ChangeMembers(acct, id, kassa.MemberChange{Action: kassa.ActionMembersImported,
				Members: []kassa.Member{{Email: "owner@example.com", Role: kassa.RoleOwner}, {Email: "emp@example.com", Role: kassa.RoleEmployee}}}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.ChangeMembers(acct, id, kassa.MemberChange{Action: kassa.ActionMembersImported}); !errors.Is(err, kassa.ErrNothingChanged) {
				t.Fatalf("a second import: %v", err)
			}
			expires := clock.Now().Add(time.Hour)
			changes := []kassa.MemberChange{
				{Action: kassa.ActionInviteCreated, Email: "owner@example.com", Role: kassa.RoleGuest, InviteID: "aa", Expires: expires},
				{Action: kassa.ActionInviteCreated, Email: "owner@example.com", Role: kassa.RoleManager, InviteID: "bb", Expires: expires},
				{Action: kassa.ActionInviteRevoked, InviteID: "aa"},
				{Action: kassa.ActionMemberJoined, Email: "bob@example.com", InviteID: "bb"},
				{Action: kassa.ActionMemberRoleChanged, Email: "emp@example.com", Role: kassa.RoleOwner},
				{Action: kassa.ActionMemberRemoved, Email: "owner@example.com"},
				{Action: kassa.ActionMemberLeft, Email: "bob@example.com"},
			}
			team := func() string {
				st, err := db.Store(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return fmt.Sprint(st.Members, st.Invites)
			}
			for i, ch := range changes {
				before := team()
				h.fail(true)
				if _, err := svc.ChangeMembers(acct, id, ch); !errors.Is(err, errDiskFull) && !errors.Is(err, errLineWrite) {
					t.Fatalf("%s: a change whose %s is not written: %v", ch.Action, fault, err)
				}
				if after := team(); after != before {
					t.Fatalf("%s: the team changed though its %s was not written: %s", ch.Action, fault, after)
				}
				if lines := history(t, db, id, kassa.HistoryQuery{}); len(lines) != i {
					t.Fatalf("%s: %d history lines after a failed %s write, want %d", ch.Action, len(lines), fault, i)
				}
				h.fail(false)
				if _, err := svc.ChangeMembers(acct, id, ch); err != nil {
					t.Fatalf("%s after the fault: %v", ch.Action, err)
				}
				lines := history(t, db, id, kassa.HistoryQuery{})
				if len(lines) != i+1 || lines[i].Action != ch.Action {
					t.Fatalf("%s: history after the fault: %d lines", ch.Action, len(lines))
				}
			}
			var got []string
			for _, l := range history(t, db, id, kassa.HistoryQuery{}) {
				got = append(got, describe(l))
			}
			by := "by account:owner@example.com[]@198.51.100.7"
			want := []string{
				`invite.created aa "Guest" ` + by,
				`invite.created bb "Manager" ` + by,
				`invite.revoked aa "Guest" ` + by,
				`member.joined bob@example.com "Manager" ` + by,
				`member.rolechanged emp@example.com "Employee → Owner" ` + by,
				`member.removed owner@example.com "Owner" ` + by,
				`member.left bob@example.com "Manager" ` + by,
			}
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			if got := team(); got != "[{emp@example.com Owner}] []" {
				t.Fatalf("team: %s", got)
			}
		})
	}
}

// TestTeamRules: the last owner is neither demoted nor removed nor
// leaves; an invitation is accepted once, not by a member, not after it
// expires; a store holds at most kassa.MaxOpenInvites open ones; a team
// not imported yet changes only by its import.
func TestTeamRules(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	h.createStore("1", "0")
	id, svc, acct := h.store.ID, h.sys.Service, accountCtx(h.store.ID)
	change := func(ch kassa.MemberChange) error { _, err := svc.ChangeMembers(acct, id, ch); return err }
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberRemoved, Email: "a@example.com"}); !errors.Is(err, kassa.ErrTeamNotKept) {
		t.Fatalf("a change before the import: %v", err)
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionMembersImported, Members: []kassa.Member{{Email: "a@example.com", Role: kassa.RoleOwner}}}); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []kassa.MemberChange{
		{Action: kassa.ActionMemberRoleChanged, Email: "a@example.com", Role: kassa.RoleManager},
		{Action: kassa.ActionMemberRemoved, Email: "a@example.com"},
		{Action: kassa.ActionMemberLeft, Email: "a@example.com"},
	} {
		if err := change(ch); !errors.Is(err, kassa.ErrLastOwner) {
			t.Errorf("%s of the last owner: %v", ch.Action, err)
		}
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberRemoved, Email: "x@example.com"}); !errors.Is(err, kassa.ErrNotTeamMember) {
		t.Errorf("remove a stranger: %v", err)
	}
	exp := h.clock.Now().Add(time.Minute)
	for i := range kassa.MaxOpenInvites {
		if err := change(kassa.MemberChange{Action: kassa.ActionInviteCreated, Email: "a@example.com", Role: kassa.RoleGuest, InviteID: fmt.Sprint(i), Expires: exp}); err != nil {
			t.Fatal(err)
		}
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionInviteCreated, Email: "a@example.com", Role: kassa.RoleGuest, InviteID: "x", Expires: exp}); !errors.Is(err, kassa.ErrTooManyInvites) {
		t.Errorf("one invitation too many: %v", err)
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberJoined, Email: "a@example.com", InviteID: "0"}); !errors.Is(err, kassa.ErrAlreadyMember) {
		t.Errorf("a member accepts: %v", err)
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberJoined, Email: "b@example.com", InviteID: "0"}); err != nil {
		t.Fatal(err)
	}
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberJoined, Email: "c@example.com", InviteID: "0"}); !errors.Is(err, kassa.ErrInviteNotFound) {
		t.Errorf("an invitation used twice: %v", err)
	}
	h.clock.Advance(time.Minute)
	if err := change(kassa.MemberChange{Action: kassa.ActionMemberJoined, Email: "c@example.com", InviteID: "1"}); !errors.Is(err, kassa.ErrInviteNotFound) {
		t.Errorf("an expired invitation: %v", err)
	}
}

// TestClusterTeamChange: a change of a store's team sent through a node
// that does not run the store is made there, with its line and the
// actor of the request; the team and its refusals cross the wire.
func TestClusterTeamChange(t *testing.T) {
	t.Parallel()
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Now())
	nodes := clusterNodes(t, 3, db, clock, 15*time.Minute)
	st, via := storeViaOtherNode(t, nodes)
	svc, acct := via.sys.Service, accountCtx(st.ID)
	if _, err := svc.ChangeMembers(acct, st.ID, kassa.MemberChange{Action: kassa.ActionMembersImported, Members: []kassa.Member{{Email: "owner@example.com", Role: kassa.RoleOwner}}}); err != nil {
		t.Fatal(err)
	}
	got, err := svc.ChangeMembers(acct, st.ID, kassa.MemberChange{Action: kassa.ActionInviteCreated, Email: "owner@example.com", Role: kassa.RoleEmployee, InviteID: "cc", Expires: clock.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !got.MembersKept || len(got.Invites) != 1 || got.Invites[0].Role != kassa.RoleEmployee || got.Invites[0].By != "owner@example.com" {
		t.Fatalf("the store a routed change answers: %+v %+v", got.Members, got.Invites)
	}
	if _, err := svc.ChangeMembers(acct, st.ID, kassa.MemberChange{Action: kassa.ActionMemberLeft, Email: "owner@example.com"}); !errors.Is(err, kassa.ErrLastOwner) {
		t.Fatalf("the last owner leaves through another node: %v", err)
	}
	if runsStore(via, st.ID) {
		t.Fatal("the change ran on the node it was sent to")
	}
	lines := history(t, db, st.ID, kassa.HistoryQuery{})
	if len(lines) != 1 || describe(lines[0]) != `invite.created cc "Employee" by account:owner@example.com[]@198.51.100.7` {
		for _, l := range lines {
			t.Log(describe(l))
		}
		t.Fatalf("%d lines", len(lines))
	}
}

// TestTeamOnPostgres: on PostgreSQL too, a change of the team is in the
// store's snapshot and writes its line.
func TestTeamOnPostgres(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pgdb, _ := openPG(t, clock)
	h := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Journal, c.Reader = pgdb, pgdb })
	st := h.createStore("1", "0")
	svc, acct := h.sys.Service, accountCtx(st.ID)
	for _, ch := range []kassa.MemberChange{
		{Action: kassa.ActionMembersImported, Members: []kassa.Member{{Email: "owner@example.com", Role: kassa.RoleOwner}}},
		{Action: kassa.ActionInviteCreated, Email: "owner@example.com", Role: kassa.RoleManager, InviteID: "dd", Expires: clock.Now().Add(time.Hour)},
		{Action: kassa.ActionMemberJoined, Email: "bob@example.com", InviteID: "dd"},
	} {
		if _, err := svc.ChangeMembers(acct, st.ID, ch); err != nil {
			t.Fatalf("%s: %v", ch.Action, err)
		}
	}
	got, _, err := pgdb.StoreSnapshot(context.Background(), st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if r, ok := got.MemberRole("bob@example.com"); !ok || r != kassa.RoleManager || len(got.Invites) != 0 || !got.MembersKept {
		t.Fatalf("the snapshot's team: %+v %+v", got.Members, got.Invites)
	}
	var lines []string
	for _, l := range history(t, pgdb, st.ID, kassa.HistoryQuery{Kind: kassa.HistoryMember}) {
		lines = append(lines, describe(l))
	}
	if want := `member.joined bob@example.com "Manager" by account:owner@example.com[]@198.51.100.7`; len(lines) != 1 || lines[0] != want {
		t.Fatalf("member lines: %q, want %q", lines, want)
	}
}
