package kassa

import (
	"slices"
	"time"
)

// A store's team, its members and its open invitations, is part of the
// store's state: each change of it is a store-actor command whose event,
// snapshot and history line are one batch (docs/decisions.md, "A store's
// history"). An account's own list of stores is an index derived from
// the stores' teams.

// Member is an account of a store's team, by email, and its role.
type Member struct {
	Email string `json:"email"`
	Role  Role   `json:"role"`
}

// Invite is an open invitation to join a store as Role. ID is the hash
// of its code: the code itself is never kept. By is the email of who
// made it.
type Invite struct {
	ID      string    `json:"id"`
	By      string    `json:"by"`
	Role    Role      `json:"role"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func (in Invite) equal(o Invite) bool {
	return in.ID == o.ID && in.By == o.By && in.Role == o.Role && in.Created.Equal(o.Created) && in.Expires.Equal(o.Expires)
}

// MaxOpenInvites bounds a store's open invitations.
const MaxOpenInvites = 200

// MaxMembers bounds a store's team.
const MaxMembers = 1000

// maxMemberEmail bounds an email of a team change.
const maxMemberEmail = 254

// Actions of a MemberChange, each also the action of its history line
// (imported writes none).
const (
	ActionInviteCreated     = "invite.created"
	ActionInviteRevoked     = "invite.revoked"
	ActionMemberJoined      = "member.joined"
	ActionMemberRoleChanged = "member.rolechanged"
	ActionMemberRemoved     = "member.removed"
	ActionMemberLeft        = "member.left"
	// ActionMembersImported carries a team kept outside the store (the
	// dashboard's records of an older version) into it, once.
	ActionMembersImported = "members.imported"
)

// MemberChange is one change of a store's team. Email is the member it
// is about, or who makes an invitation; InviteID the invitation created
// (with its Role and Expires), revoked or accepted; Role the new role of
// a role change; Members and Invites the team an import carries.
type MemberChange struct {
	Action   string    `json:"action"`
	Email    string    `json:"email,omitempty"`
	Role     Role      `json:"role,omitempty"`
	InviteID string    `json:"inviteId,omitempty"`
	Expires  time.Time `json:"expires,omitempty"`
	Members  []Member  `json:"members,omitempty"`
	Invites  []Invite  `json:"invites,omitempty"`
}

// The refusals of a team change.
var (
	ErrLastOwner      = Errorf(Conflict, "a store needs an owner: make another member owner before the last one steps down or leaves")
	ErrNotTeamMember  = Errorf(NotFound, "not a member of this store")
	ErrAlreadyMember  = Errorf(Conflict, "this account already belongs to the store")
	ErrInviteNotFound = Errorf(NotFound, "invitation not found")
	ErrTooManyInvites = Errorf(Conflict, "there are %d open invitations, the most there can be: revoke some first", MaxOpenInvites)
	ErrTeamNotKept    = Errorf(Conflict, "the store's team is not imported yet")
)

// MemberRole is email's role on the store, and whether it is a member.
func (s *Store) MemberRole(email string) (Role, bool) {
	if i := slices.IndexFunc(s.Members, func(m Member) bool { return m.Email == email }); i >= 0 {
		return s.Members[i].Role, true
	}
	return "", false
}

// OpenInvites are the store's invitations that may still be accepted at
// now, oldest first.
func (s *Store) OpenInvites(now time.Time) []Invite {
	var out []Invite
	for _, in := range s.Invites {
		if now.Before(in.Expires) {
			out = append(out, in)
		}
	}
	return out
}

// WithMemberChange returns a copy of the store with ch made at now, or
// why it is refused: the store's last owner is neither demoted nor
// removed, an invitation is accepted once and before it expires, and
// at most MaxOpenInvites are open. Expired invitations are dropped.
func (s *Store) WithMemberChange(ch MemberChange, now time.Time) (*Store, error) {
	if len(ch.Email) > maxMemberEmail || len(ch.InviteID) > 128 || len(ch.Members) > MaxMembers || len(ch.Invites) > MaxOpenInvites {
		return nil, Errorf(Invalid, "a team change out of bounds")
	}
	next := *s
	next.Members, next.Invites = slices.Clone(s.Members), s.OpenInvites(now)
	if ch.Action == ActionMembersImported {
		if s.MembersKept {
			return nil, ErrNothingChanged
		}
		next.Members, next.Invites, next.MembersKept = slices.Clone(ch.Members), slices.Clone(ch.Invites), true
		return &next, nil
	}
	if !s.MembersKept {
		return nil, ErrTeamNotKept
	}
	invite := slices.IndexFunc(next.Invites, func(in Invite) bool { return in.ID == ch.InviteID })
	member := slices.IndexFunc(next.Members, func(m Member) bool { return m.Email == ch.Email })
	switch ch.Action {
	case ActionInviteCreated:
		if _, err := ParseRole(string(ch.Role)); err != nil || ch.InviteID == "" || !now.Before(ch.Expires) {
			return nil, Errorf(Invalid, "an invitation needs a role, an id and a time to expire")
		}
		if len(next.Invites) >= MaxOpenInvites {
			return nil, ErrTooManyInvites
		}
		next.Invites = append(next.Invites, Invite{ID: ch.InviteID, By: ch.Email, Role: ch.Role, Created: now.UTC(), Expires: ch.Expires.UTC()})
	case ActionInviteRevoked:
		if invite < 0 {
			return nil, ErrInviteNotFound
		}
		next.Invites = slices.Delete(next.Invites, invite, invite+1)
	case ActionMemberJoined:
		switch {
		case invite < 0:
			return nil, ErrInviteNotFound
		case member >= 0:
			return nil, ErrAlreadyMember
		case len(next.Members) >= MaxMembers || ch.Email == "":
			return nil, Errorf(Conflict, "a store has at most %d members", MaxMembers)
		}
		next.Members = append(next.Members, Member{Email: ch.Email, Role: next.Invites[invite].Role})
		next.Invites = slices.Delete(next.Invites, invite, invite+1)
	case ActionMemberRoleChanged, ActionMemberRemoved, ActionMemberLeft:
		if member < 0 {
			return nil, ErrNotTeamMember
		}
		if ch.Action == ActionMemberRoleChanged {
			if _, err := ParseRole(string(ch.Role)); err != nil {
				return nil, err
			}
		}
		stepsDown := ch.Action != ActionMemberRoleChanged || ch.Role != RoleOwner
		if next.Members[member].Role == RoleOwner && stepsDown && next.owners() <= 1 {
			return nil, ErrLastOwner
		}
		if ch.Action == ActionMemberRoleChanged {
			next.Members[member].Role = ch.Role
		} else {
			next.Members = slices.Delete(next.Members, member, member+1)
		}
	default:
		return nil, Errorf(Invalid, "unknown team change %q", ch.Action)
	}
	return &next, nil
}

func (s *Store) owners() int {
	n := 0
	for _, m := range s.Members {
		if m.Role == RoleOwner {
			n++
		}
	}
	return n
}
