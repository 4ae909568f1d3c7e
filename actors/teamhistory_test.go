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
			db := openMem(t)
			hj := &historyFailJournal{DB: db}
			var failing bool
			journal := &faultyJournal{Journal: hj, commitErr: func() error {
				if failing && fault == "change" {
					return errDiskFull
				}
				return nil
			}}
			clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			h := newHarnessWith(t, db, clock, func(c *Config) { c.Journal = journal })
			h.createStore("1", "0")
			id := h.store.ID
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
				failing, hj.failLines = true, fault == "line"
				if _, err := svc.ChangeMembers(acct, id, ch); !errors.Is(err, errDiskFull) && !errors.Is(err, errLineWrite) {
					t.Fatalf("%s: a change whose %s is not written: %v", ch.Action, fault, err)
				}
				if after := team(); after != before {
					t.Fatalf("%s: the team changed though its %s was not written: %s", ch.Action, fault, after)
				}
				if lines := history(t, db, id, kassa.HistoryQuery{}); len(lines) != i {
					t.Fatalf("%s: %d history lines after a failed %s write, want %d", ch.Action, len(lines), fault, i)
				}
				failing, hj.failLines = false, false
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
