package dashboard

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/mail"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/argon2"
)

// user is a dashboard account. Its record is kept under its lower-cased
// email.
type user struct {
	Email        string `json:"email"`
	PasswordHash string `json:"passwordHash"`
	Admin        bool   `json:"admin,omitempty"`
	// StoreIDs are the stores the account belongs to, Roles its role on
	// each (members.go); a store missing from Roles is the account's as
	// Owner, as every store of a record made before roles.
	StoreIDs  []string              `json:"storeIds"`
	Roles     map[string]kassa.Role `json:"roles,omitempty"`
	CreatedAt time.Time             `json:"createdAt"`
	// SessionGen counts the changes that end the account's sessions
	// (endOtherSessions): a session made before the last one is no
	// longer valid.
	SessionGen int `json:"sessionGen,omitempty"`
	// TwoFactor is the account's second factor, nil without one
	// (twofactor.go).
	TwoFactor *twoFactor `json:"twoFactor,omitempty"`
}

// session is a signed-in browser: the user and the CSRF token of its
// forms. Only the hash of the session token is stored.
type session struct {
	Email   string    `json:"email"`
	CSRF    string    `json:"csrf"`
	Expires time.Time `json:"expires"`
	// Gen is the account's SessionGen when the session began.
	Gen int `json:"gen,omitempty"`

	token string
	user  *user
}

// sessionLifetime is how long a sign-in lasts.
const sessionLifetime = 12 * time.Hour

// forever is the expiry of records that do not expire.
var forever = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

// Keys of the dashboard's records in the key-value store.
func userKey(email string) string       { return "dash/user/" + strings.ToLower(email) }
func sessionRecKey(token string) string { return "dash/session/" + hashHex(token) }
func inviteKey(code string) string      { return "dash/invite/" + hashHex(code) }

const firstUserKey = "dash/first-user"

func hashHex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// newToken returns 32 random bytes, base64url.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Parameters of argon2id (RFC 9106's second recommendation, with the
// memory OWASP suggests for a server that hashes on every sign-in).
type argonParams struct {
	time, memory uint32 // memory in KiB
	threads      uint8
}

// argon is what new hashes use; tests lower it to stay quick. Existing
// hashes carry their own parameters.
var argon = argonParams{time: 2, memory: 19 * 1024, threads: 1}

const argonKeyLen = 32

// hashPassword returns the PHC string of password hashed with argon2id
// and a fresh salt.
func hashPassword(password string) string {
	salt := make([]byte, 16)
	rand.Read(salt)
	p := argon
	m := takeArgonMemory()
	defer giveArgonMemory(m)
	key := argon2.IDKeyIn(m, []byte(password), salt, p.time, p.memory, p.threads, argonKeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.memory, p.time, p.threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// checkPassword compares password with a PHC string from hashPassword in
// constant time. A malformed hash matches nothing.
func checkPassword(encoded, password string) bool {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false
	}
	var version int
	var m uint32
	var t uint32
	var p uint8
	if _, err := fmt.Sscanf(parts[2], "v=%d", &version); err != nil || version != argon2.Version {
		return false
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &p); err != nil || m > 1<<20 || t > 10 || p == 0 {
		return false
	}
	salt, err1 := base64.RawStdEncoding.DecodeString(parts[4])
	want, err2 := base64.RawStdEncoding.DecodeString(parts[5])
	if err1 != nil || err2 != nil || len(want) == 0 {
		return false
	}
	mem := takeArgonMemory()
	defer giveArgonMemory(mem)
	got := argon2.IDKeyIn(mem, []byte(password), salt, t, m, p, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1
}

// argonMemory keeps the working memory of finished hashes (19 MiB each,
// outside the Go heap) for the next ones: as many as maxHashSlots, the
// most the hashing gate runs at once. Allocated afresh, every sign-in
// was 19 MiB of garbage, and a flood of wrong passwords grew the heap
// with its rate until the collector caught up (docs/decisions.md,
// "Dashboard accounts in front of strangers").
var argonMemory = make(chan *argon2.Memory, maxHashSlots)

// takeArgonMemory is a kept memory, or a new one.
func takeArgonMemory() *argon2.Memory {
	select {
	case m := <-argonMemory:
		return m
	default:
		return new(argon2.Memory)
	}
}

// giveArgonMemory keeps m for the next hash, unless maxHashSlots are
// kept already or m grew past what new hashes use (an old hash's
// parameters): then it is freed.
func giveArgonMemory(m *argon2.Memory) {
	if m.Size() > int(argon.memory)*1024 {
		m.Free()
		return
	}
	select {
	case argonMemory <- m:
	default:
		m.Free()
	}
}

// dummyHash is checked against when no account has the email, so that a
// sign-in takes as long whether or not the account exists. It is made on
// first use: every kassa command links this package.
var dummyHash = sync.OnceValue(func() string { return hashPassword("no such account") })

// Limits of account fields.
const (
	minPassword = 10
	maxPassword = 256
	maxEmail    = 254
)

// checkAccount says what is wrong with a new account's email and
// password, or "".
func checkAccount(lang, email, password string) string {
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > maxEmail {
		return msgIn(lang, "err.email")
	}
	if len(password) < minPassword || len(password) > maxPassword {
		return msgIn(lang, "err.password")
	}
	return ""
}

func (h *Dashboard) getJSON(ctx context.Context, key string, v any) (bool, error) {
	data, ok, err := h.KV.GetValue(ctx, key)
	if err != nil || !ok {
		return false, err
	}
	return true, json.Unmarshal(data, v)
}

func (h *Dashboard) putJSON(ctx context.Context, key string, v any, expires time.Time) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return h.KV.PutValue(ctx, key, data, expires)
}

func (h *Dashboard) user(ctx context.Context, email string) (*user, error) {
	var u user
	ok, err := h.getJSON(ctx, userKey(email), &u)
	if err != nil || !ok {
		return nil, err
	}
	return &u, nil
}

// anyUser reports whether an account exists.
func (h *Dashboard) anyUser(ctx context.Context) (bool, error) {
	_, ok, err := h.KV.GetValue(ctx, firstUserKey)
	return ok, err
}

var (
	errUserExists = kassa.Errorf(kassa.Conflict, "an account with this email exists")
	errBadInvite  = kassa.Errorf(kassa.Forbidden, "the invitation is not valid")
)

// newAccount is what createUser makes.
type newAccount struct {
	email, password string
	// admin makes an operator; firstIsAdmin makes one of the first
	// account ever made.
	admin, firstIsAdmin bool
	// invite, when set, is the invitation the account needs; it is used
	// up only when the account is stored.
	invite string
	// gate is who asks for the hashing slot.
	gate ticket
}

// createUser stores a new account. The password is hashed first, also
// when the email has an account (errUserExists), so that both take as
// long.
func (h *Dashboard) createUser(ctx context.Context, a newAccount) (*user, error) {
	// The forms check first, in the reader's language: a refusal here
	// answers the admin command, in English.
	if problem := checkAccount("en", a.email, a.password); problem != "" {
		return nil, kassa.Errorf(kassa.Invalid, "%s", problem)
	}
	hash, err := h.hash(ctx, a.gate, a.password)
	if err != nil {
		return nil, err
	}
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	if u, err := h.user(ctx, a.email); err != nil {
		return nil, err
	} else if u != nil {
		return nil, errUserExists
	}
	var inv invite
	if a.invite != "" {
		ok, err := h.getInvite(ctx, a.invite, &inv)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errBadInvite
		}
		if inv.StoreID != "" {
			// The store's team decides whether the invitation is
			// open; its record may lag.
			st, err := h.teamOf(ctx, inv.StoreID)
			if err != nil {
				return nil, err
			}
			if !slices.ContainsFunc(st.OpenInvites(h.Clock.Now()), func(in kassa.Invite) bool { return in.ID == hashHex(a.invite) }) {
				return nil, errBadInvite
			}
		}
	}
	first, err := h.anyUser(ctx)
	if err != nil {
		return nil, err
	}
	u := &user{Email: strings.ToLower(a.email), PasswordHash: hash, Admin: a.admin || !first && a.firstIsAdmin,
		StoreIDs: []string{}, CreatedAt: h.Clock.Now().UTC()}
	if err := h.putJSON(ctx, userKey(a.email), u, forever); err != nil {
		return nil, err
	}
	if !first {
		if err := h.KV.PutValue(ctx, firstUserKey, []byte(u.Email), forever); err != nil {
			return nil, err
		}
	}
	if inv.StoreID != "" {
		// The store's team takes the account in, and uses the
		// invitation up; its record is then read again.
		if err := h.joinByInvite(ctx, a.invite, inv, u.Email); err != nil {
			return nil, err
		}
		return h.existingUser(ctx, u.Email, "account not found")
	}
	if a.invite != "" {
		// Written after the account: were this write lost, the
		// invitation would make one account more, rather than none.
		inv.Used = true
		if err := h.putJSON(ctx, inviteKey(a.invite), inv, inv.Expires); err != nil {
			return nil, err
		}
	}
	return u, nil
}

// existingUser returns email's account, or a NotFound error that says
// notFound when there is none. The caller holds usersMu.
func (h *Dashboard) existingUser(ctx context.Context, email, notFound string) (*user, error) {
	u, err := h.user(ctx, email)
	if err != nil {
		return nil, err
	}
	if u == nil {
		return nil, kassa.Errorf(kassa.NotFound, "%s", notFound)
	}
	return u, nil
}

// addStore records that the user owns storeID.
func (h *Dashboard) addStore(ctx context.Context, email, storeID string) error {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.existingUser(ctx, email, "account not found")
	if err != nil {
		return err
	}
	u.join(storeID, kassa.RoleOwner)
	if err := h.putJSON(ctx, userKey(email), u, forever); err != nil {
		return err
	}
	return h.indexMember(ctx, storeID, u.Email)
}

// newSession signs email in and returns the session.
func (h *Dashboard) newSession(ctx context.Context, u *user) (*session, error) {
	s := &session{Email: u.Email, CSRF: newToken(), Expires: h.Clock.Now().Add(sessionLifetime), Gen: u.SessionGen, token: newToken(), user: u}
	return s, h.putJSON(ctx, sessionRecKey(s.token), s, s.Expires)
}

// session returns the live session of token, or nil.
func (h *Dashboard) session(ctx context.Context, token string) (*session, error) {
	if token == "" || len(token) > 100 {
		return nil, nil
	}
	var s session
	ok, err := h.getJSON(ctx, sessionRecKey(token), &s)
	if err != nil || !ok || !h.Clock.Now().Before(s.Expires) {
		return nil, err
	}
	if s.user, err = h.user(ctx, s.Email); err != nil || s.user == nil || s.Gen != s.user.SessionGen {
		return nil, err
	}
	s.token = token
	return &s, nil
}

// errWrongPassword answers a password change whose current password is
// wrong.
var errWrongPassword = kassa.Errorf(kassa.Forbidden, "the current password is wrong")

// setPassword sets email's password to next and ends every session of
// the account but keep (nil: all of them). check, when set, is called
// with the account first and may refuse the change. The caller is
// trusted (a signed-in user, the admin token): the hash goes first.
func (h *Dashboard) setPassword(ctx context.Context, email, next string, check func(*user) error, keep *session) error {
	if len(next) < minPassword || len(next) > maxPassword {
		return kassa.Errorf(kassa.Invalid, "%s", msg("err.password"))
	}
	hash, err := h.hash(ctx, ticket{trusted: true, account: strings.ToLower(email)}, next)
	if err != nil {
		return err
	}
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	u, err := h.existingUser(ctx, email, "no account has this email")
	if err != nil {
		return err
	}
	if check != nil {
		if err := check(u); err != nil {
			return err
		}
	}
	u.PasswordHash = hash
	return h.endOtherSessions(ctx, u, keep)
}

// endOtherSessions stores u with its SessionGen counted up, which ends
// the account's sessions and pending sign-ins and untrusts its device
// cookies; keep, when not nil, is the session that made the change and
// goes on. Every change that takes a sign-in credential away (the
// password, a passkey, the app, two factors, the recovery codes) or
// turns two factors on stores the account through it, under usersMu.
func (h *Dashboard) endOtherSessions(ctx context.Context, u *user, keep *session) error {
	u.SessionGen++
	if err := h.putJSON(ctx, userKey(u.Email), u, forever); err != nil {
		return err
	}
	if keep == nil {
		return nil
	}
	// The session that made the change goes on under the new count; were
	// this write lost, it would be signed out too, which is safe.
	keep.Gen, keep.user = u.SessionGen, u
	return h.putJSON(ctx, sessionRecKey(keep.token), keep, keep.Expires)
}

// endSession removes a session on the server: its record expires now.
func (h *Dashboard) endSession(ctx context.Context, token string) error {
	return h.KV.PutValue(ctx, sessionRecKey(token), []byte("{}"), h.Clock.Now().Add(-time.Second))
}

// invite is an invitation to sign up, or with StoreID to join that
// store as Role (members.go). Used is set when it made an account,
// joined one to the store, or was revoked.
type invite struct {
	By      string     `json:"by"`
	Expires time.Time  `json:"expires"`
	Used    bool       `json:"used,omitempty"`
	StoreID string     `json:"storeId,omitempty"`
	Role    kassa.Role `json:"role,omitempty"`
}

const inviteLifetime = 7 * 24 * time.Hour

// invitesKey holds the list of invitations made (openInvite entries), so
// that the Invitations page can show them. The codes are not kept: an
// entry names its invitation by the code's hash, the key of its record.
const invitesKey = "dash/invites"

// maxOpenInvites bounds the open invitations, and so the list's record:
// a store's, as the store's team bounds them.
const maxOpenInvites = kassa.MaxOpenInvites

// errTooManyInvites refuses an invitation past maxOpenInvites.
var errTooManyInvites = kassa.ErrTooManyInvites

// openInvite is an invitation as the Invitations page lists it.
type openInvite struct {
	ID      string    `json:"id"` // hashHex of the code
	By      string    `json:"by"`
	Created time.Time `json:"created"`
	Expires time.Time `json:"expires"`
}

func (h *Dashboard) newInvite(ctx context.Context, by string) (string, error) {
	h.invitesMu.Lock()
	defer h.invitesMu.Unlock()
	list, err := h.openInvites(ctx)
	if err != nil {
		return "", err
	}
	if len(list) >= maxOpenInvites {
		return "", errTooManyInvites
	}
	code := newToken()
	now := h.Clock.Now()
	inv := invite{By: by, Expires: now.Add(inviteLifetime)}
	if err := h.putJSON(ctx, inviteKey(code), inv, inv.Expires); err != nil {
		return "", err
	}
	list = append(list, openInvite{ID: hashHex(code), By: by, Created: now.UTC(), Expires: inv.Expires.UTC()})
	return code, h.putJSON(ctx, invitesKey, list, forever)
}

// openInvites lists the invitations that may still make an account,
// oldest first.
func (h *Dashboard) openInvites(ctx context.Context) ([]openInvite, error) {
	var all, open []openInvite
	if _, err := h.getJSON(ctx, invitesKey, &all); err != nil {
		return nil, err
	}
	now := h.Clock.Now()
	for _, e := range all {
		var inv invite
		ok, err := h.getJSON(ctx, "dash/invite/"+e.ID, &inv)
		if err != nil {
			return nil, err
		}
		if ok && !inv.Used && now.Before(inv.Expires) {
			open = append(open, e)
		}
	}
	return open, nil
}

// revokeInvite makes the open invitation id (a code's hash) unusable and
// takes it off the list; NotFound when no open invitation has that id.
func (h *Dashboard) revokeInvite(ctx context.Context, id string) error {
	h.invitesMu.Lock()
	defer h.invitesMu.Unlock()
	list, err := h.openInvites(ctx)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(list, func(e openInvite) bool { return e.ID == id })
	if i < 0 {
		return kassa.Errorf(kassa.NotFound, "invitation not found")
	}
	if err := h.markInviteUsed(ctx, id); err != nil {
		return err
	}
	return h.putJSON(ctx, invitesKey, slices.Delete(list, i, i+1), forever)
}

// getInvite reads the invitation of code into inv and reports whether
// it may still make an account.
func (h *Dashboard) getInvite(ctx context.Context, code string, inv *invite) (bool, error) {
	if code == "" || len(code) > 100 {
		return false, nil
	}
	ok, err := h.getJSON(ctx, inviteKey(code), inv)
	if err != nil || !ok || inv.Used || !h.Clock.Now().Before(inv.Expires) {
		return false, err
	}
	return true, nil
}

// inviteValid reports whether code is an invitation that may still make
// an account; it does not use it (createUser does).
func (h *Dashboard) inviteValid(ctx context.Context, code string) (bool, error) {
	var inv invite
	return h.getInvite(ctx, code, &inv)
}

// markInviteUsed makes invitation id's record unusable. The record is
// changed under usersMu, as a sign-up uses it, so that a revoke and a
// sign-up do not both count.
func (h *Dashboard) markInviteUsed(ctx context.Context, id string) error {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	var inv invite
	ok, err := h.getJSON(ctx, "dash/invite/"+id, &inv)
	if err == nil && ok {
		inv.Used = true
		err = h.putJSON(ctx, "dash/invite/"+id, inv, inv.Expires)
	}
	return err
}
