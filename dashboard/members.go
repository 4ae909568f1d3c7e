package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
	kassahttp "github.com/kassapay/kassa/http"
)

// storeRoutePerms is the permission each store route of the dashboard
// asks (kassa.Principal.Can), keyed by method and pattern under
// /stores/{storeId}: the dashboard's table, as http/auth.go and
// greenfield/server.go have theirs (docs/api.md, "Permissions and
// roles"). A store route missing here is refused.
var storeRoutePerms = map[string]kassa.Permission{
	// The store's home shows its settings to those who may see them and
	// sends the others to the invoices.
	"GET /":           kassa.PermViewInvoices,
	"GET /overview":   kassa.PermViewInvoices, // its balance and payouts show to those who may see their pages
	"POST /settings":  kassa.PermModifyStoreSettings,
	"GET /twofactor":  kassa.PermViewStoreSettings,
	"POST /twofactor": kassa.PermModifyStoreSettings,

	"GET /keys":                 kassa.PermManageAPIKeys,
	"POST /keys":                kassa.PermManageAPIKeys,
	"POST /keys/{keyId}/delete": kassa.PermManageAPIKeys,
	"POST /keys/{keyId}/reveal": kassa.PermManageAPIKeys,

	"GET /webhooks":                     kassa.PermModifyWebhooks,
	"POST /webhooks":                    kassa.PermModifyWebhooks,
	"GET /webhooks/{webhookId}":         kassa.PermModifyWebhooks,
	"POST /webhooks/{webhookId}":        kassa.PermModifyWebhooks,
	"POST /webhooks/{webhookId}/toggle": kassa.PermModifyWebhooks,
	"POST /webhooks/{webhookId}/delete": kassa.PermModifyWebhooks,
	"POST /webhooks/{webhookId}/deliveries/{deliveryId}/redeliver": kassa.PermModifyWebhooks,

	"GET /invoices":                      kassa.PermViewInvoices,
	"GET /invoices/new":                  kassa.PermCreateInvoice,
	"POST /invoices":                     kassa.PermCreateInvoice,
	"GET /invoices/{invoiceId}":          kassa.PermViewInvoices,
	"POST /invoices/{invoiceId}/invalid": kassa.PermModifyInvoices,

	"GET /paylinks":                      kassa.PermViewPaymentRequests,
	"POST /paylinks":                     kassa.PermModifyPaymentRequests,
	"GET /paylinks/{payLinkId}":          kassa.PermViewPaymentRequests,
	"POST /paylinks/{payLinkId}":         kassa.PermModifyPaymentRequests,
	"POST /paylinks/{payLinkId}/archive": kassa.PermModifyPaymentRequests,

	"GET /transactions":     kassa.PermViewReports,
	"GET /transactions.csv": kassa.PermViewReports,

	"GET /balance":                           kassa.PermViewReports,
	"POST /balance/topup":                    kassa.PermModifyStoreSettings,
	"POST /balance/topup/{invoiceId}/simpay": kassa.PermModifyStoreSettings,

	"GET /members":                            kassa.PermManageMembers,
	"POST /members/invites":                   kassa.PermManageMembers,
	"POST /members/invites/{inviteId}/revoke": kassa.PermManageMembers,
	"POST /members/role":                      kassa.PermManageMembers,
	"POST /members/remove":                    kassa.PermManageMembers,
	// Every role may leave: each holds PermViewInvoices.
	"POST /leave": kassa.PermViewInvoices,

	// Refunds: a refund makes a pull payment whose payouts wait for
	// approval; approving one pays it.
	"GET /invoices/{invoiceId}/refund":   kassa.PermCreateNonApprovedPullPayments,
	"POST /invoices/{invoiceId}/refund":  kassa.PermCreateNonApprovedPullPayments,
	"GET /pull-payments/{pullPaymentId}": kassa.PermViewPullPayments,
	"GET /payouts":                       kassa.PermViewPayouts,
	"POST /payouts/{payoutId}/approve":   kassa.PermManagePayouts,
	"POST /payouts/{payoutId}/cancel":    kassa.PermManagePayouts,
	"POST /payouts/{payoutId}/mark-paid": kassa.PermManagePayouts,

	// The store's history names members, keys and their addresses:
	// Owners and Managers see it (docs/api.md, "Permissions and roles").
	"GET /history":     kassa.PermViewStoreSettings,
	"GET /history.csv": kassa.PermViewStoreSettings,
}

// memberRoutes adds the members page's routes to a store's router.
func (h *Dashboard) memberRoutes(r chi.Router) {
	r.Get("/members", h.membersPage)
	r.Post("/members/invites", h.createMemberInvite)
	r.Post("/members/invites/{inviteId}/revoke", h.revokeMemberInvite)
	r.Post("/members/role", h.setMemberRole)
	r.Post("/members/remove", h.removeMemberPost)
	r.Post("/leave", h.leaveStore)
}

// requirePermission asks the request's principal the permission
// storeRoutePerms names for the route routes finds: 403 if it may not;
// a route the table lacks is refused too.
func (h *Dashboard) requirePermission(routes chi.Routes) func(http.Handler) http.Handler {
	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			method := r.Method
			if method == http.MethodHead {
				method = http.MethodGet
			}
			pattern := routes.Find(chi.NewRouteContext(), method, chi.RouteContext(r.Context()).RoutePath)
			if pattern == "" {
				next.ServeHTTP(w, r) // the router answers 404 or 405
				return
			}
			perm, ok := storeRoutePerms[method+" "+pattern]
			if !ok {
				h.log.Error("dashboard: store route without a permission", "route", method+" "+pattern)
			}
			if !ok || !kassa.PrincipalFrom(r.Context()).Can(currentStore(r.Context()).ID, perm) {
				h.fail(w, r, http.StatusForbidden, "err.forbidden")
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// memberPrincipal is who u is on store storeID, and whether it may open
// the store at all: a member with its role; an operator as Owner of
// every store.
func memberPrincipal(u *user, storeID string) (*kassa.Principal, bool) {
	role, ok := u.role(storeID)
	if u.Admin {
		role, ok = kassa.RoleOwner, true
	}
	if !ok {
		return nil, false
	}
	return kassa.MemberPrincipal(u.Email, map[string]kassa.Role{storeID: role}), true
}

// role is u's role on storeID, and whether u belongs to it.
func (u *user) role(storeID string) (kassa.Role, bool) {
	if !slices.Contains(u.StoreIDs, storeID) {
		return "", false
	}
	if r, ok := u.Roles[storeID]; ok {
		return r, true
	}
	return kassa.RoleOwner, true
}

// can reports whether u's role on storeID holds perm.
func (u *user) can(storeID string, perm kassa.Permission) bool {
	r, ok := u.role(storeID)
	return ok && r.Permissions().Has(perm)
}

// join makes u a member of storeID as r, or changes its role there.
func (u *user) join(storeID string, r kassa.Role) {
	if !slices.Contains(u.StoreIDs, storeID) {
		u.StoreIDs = append(u.StoreIDs, storeID)
	}
	if u.Roles == nil {
		u.Roles = map[string]kassa.Role{}
	}
	u.Roles[storeID] = r
}

// leave takes storeID from u's stores.
func (u *user) leave(storeID string) {
	u.StoreIDs = slices.DeleteFunc(u.StoreIDs, func(id string) bool { return id == storeID })
	delete(u.Roles, storeID)
}

// A store's team, its members and open invitations, is the store's
// (kassa.Member, kassa.Invite): each change is a store-actor command
// that writes its history line in the same batch (Services.ChangeMembers).
// An account's record lists its stores and roles as an index derived
// from the teams: written after each change, and repaired from the
// store when it disagrees (storeAccess). The records of an older
// version, the list under membersKey, the open invitations under
// storeInvitesKey and the roles on the accounts' records, are carried
// into the store on its first use (team).
func membersKey(storeID string) string      { return "dash/store/" + storeID + "/members" }
func storeInvitesKey(storeID string) string { return "dash/store/" + storeID + "/invites" }

// The refusals of a team change, the store's (kassa.MemberChange).
var (
	errLastOwner     = kassa.ErrLastOwner
	errNotMember     = kassa.ErrNotTeamMember
	errAlreadyMember = kassa.ErrAlreadyMember
)

func (h *Dashboard) memberEmails(ctx context.Context, storeID string) ([]string, error) {
	var list []string
	_, err := h.getJSON(ctx, membersKey(storeID), &list)
	return list, err
}

// indexMember adds email to storeID's list of an older version, which
// a store not yet holding its team imports. The caller holds usersMu.
func (h *Dashboard) indexMember(ctx context.Context, storeID, email string) error {
	list, err := h.memberEmails(ctx, storeID)
	if err != nil || slices.Contains(list, email) {
		return err
	}
	return h.putJSON(ctx, membersKey(storeID), append(list, email), forever)
}

// ensureIndexed lists u among storeID's members if it belongs to the
// store and is not listed (a record made before the list).
func (h *Dashboard) ensureIndexed(ctx context.Context, u *user, storeID string) error {
	if _, ok := u.role(storeID); !ok {
		return nil
	}
	list, err := h.memberEmails(ctx, storeID)
	if err != nil || slices.Contains(list, u.Email) {
		return err
	}
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	return h.indexMember(ctx, storeID, u.Email)
}

// team returns st with its team, which it imports from the records of
// an older version when the store does not hold it yet.
func (h *Dashboard) team(ctx context.Context, st *kassa.Store) (*kassa.Store, error) {
	if st.MembersKept {
		return st, nil
	}
	ch := kassa.MemberChange{Action: kassa.ActionMembersImported}
	emails, err := h.memberEmails(ctx, st.ID)
	if err != nil {
		return nil, err
	}
	for _, e := range emails {
		u, err := h.user(ctx, e)
		if err != nil {
			return nil, err
		}
		if u == nil {
			continue
		}
		if r, ok := u.role(st.ID); ok {
			ch.Members = append(ch.Members, kassa.Member{Email: u.Email, Role: r})
		}
	}
	if ch.Invites, err = h.oldStoreInvites(ctx, st.ID); err != nil {
		return nil, err
	}
	next, err := h.Services.ChangeMembers(ctx, st.ID, ch)
	if errors.Is(err, kassa.ErrNothingChanged) {
		return h.Reader.Store(ctx, st.ID) // imported by another request
	}
	return next, err
}

// teamOf reads storeID with its team.
func (h *Dashboard) teamOf(ctx context.Context, storeID string) (*kassa.Store, error) {
	st, err := h.Reader.Store(ctx, storeID)
	if err != nil {
		return nil, err
	}
	return h.team(ctx, st)
}

// member is a row of the members page.
type member = kassa.Member

// members lists storeID's members in the order they joined.
func (h *Dashboard) members(ctx context.Context, storeID string) ([]member, error) {
	st, err := h.teamOf(ctx, storeID)
	if err != nil {
		return nil, err
	}
	return st.Members, nil
}

// reindex makes email's record say what st's team says of it: its role
// on the store, or none. The caller holds usersMu.
func (h *Dashboard) reindex(ctx context.Context, st *kassa.Store, email string) error {
	u, err := h.user(ctx, email)
	if err != nil || u == nil {
		return err
	}
	was, had := u.role(st.ID)
	role, ok := st.MemberRole(email)
	switch {
	case ok && (!had || was != role):
		u.join(st.ID, role)
	case !ok && had:
		u.leave(st.ID)
	default:
		return nil
	}
	return h.putJSON(ctx, userKey(u.Email), u, forever)
}

// changeMember makes change action (a role change, a removal or a
// leave) of email's membership of storeID, then updates email's
// record; the store's last owner is neither demoted nor removed
// (errLastOwner). errNotMember when email is not a member.
func (h *Dashboard) changeMember(ctx context.Context, storeID, email string, role kassa.Role, action string) error {
	if _, err := h.teamOf(ctx, storeID); err != nil {
		return err
	}
	st, err := h.Services.ChangeMembers(ctx, storeID, kassa.MemberChange{Action: action, Email: email, Role: role})
	if err != nil {
		return err
	}
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	return h.reindex(ctx, st, email)
}

func clipEmail(s string) string {
	if len(s) > maxEmail {
		return s[:maxEmail] + "…"
	}
	return s
}

// storeInvite is an open invitation to a store as the records of an
// older version list it; the code is not kept, ID is its hash.
type storeInvite = kassa.Invite

// newStoreInvite makes a one-use invitation to join storeID as role,
// valid inviteLifetime, and returns its code. The store's team holds
// the invitation; the record under inviteKey leads its code to the
// store.
func (h *Dashboard) newStoreInvite(ctx context.Context, storeID, by string, role kassa.Role) (string, error) {
	if _, err := h.teamOf(ctx, storeID); err != nil {
		return "", err
	}
	code := newToken()
	inv := invite{By: by, Expires: h.Clock.Now().Add(inviteLifetime), StoreID: storeID, Role: role}
	if _, err := h.Services.ChangeMembers(ctx, storeID, kassa.MemberChange{Action: kassa.ActionInviteCreated, Email: by, Role: role,
		InviteID: hashHex(code), Expires: inv.Expires}); err != nil {
		return "", err
	}
	return code, h.putJSON(ctx, inviteKey(code), inv, inv.Expires)
}

// openStoreInvites lists storeID's invitations that may still be
// accepted, oldest first.
func (h *Dashboard) openStoreInvites(ctx context.Context, storeID string) ([]storeInvite, error) {
	st, err := h.teamOf(ctx, storeID)
	if err != nil {
		return nil, err
	}
	return st.OpenInvites(h.Clock.Now()), nil
}

// oldStoreInvites lists storeID's open invitations as the records of
// an older version hold them.
func (h *Dashboard) oldStoreInvites(ctx context.Context, storeID string) ([]storeInvite, error) {
	var all, open []storeInvite
	if _, err := h.getJSON(ctx, storeInvitesKey(storeID), &all); err != nil {
		return nil, err
	}
	now := h.Clock.Now()
	for _, e := range all {
		var inv invite
		ok, err := h.getJSON(ctx, "dash/invite/"+e.ID, &inv)
		if err != nil {
			return nil, err
		}
		if ok && !inv.Used && now.Before(inv.Expires) && inv.StoreID == storeID && len(open) < kassa.MaxOpenInvites {
			open = append(open, e)
		}
	}
	return open, nil
}

// revokeStoreInvite makes storeID's open invitation id unusable;
// NotFound when the store has no open invitation with that id.
func (h *Dashboard) revokeStoreInvite(ctx context.Context, storeID, id string) error {
	if _, err := h.teamOf(ctx, storeID); err != nil {
		return err
	}
	if _, err := h.Services.ChangeMembers(ctx, storeID, kassa.MemberChange{Action: kassa.ActionInviteRevoked, InviteID: id}); err != nil {
		return err
	}
	return h.markInviteUsed(ctx, id)
}

// acceptInvite joins email's account to the store of the invitation
// code with its role and uses the invitation up; errBadInvite when it
// is not an open store invitation, errAlreadyMember (the invitation
// stays open) when the account belongs to the store.
func (h *Dashboard) acceptInvite(ctx context.Context, code, email string) (string, error) {
	h.usersMu.Lock()
	defer h.usersMu.Unlock()
	var inv invite
	ok, err := h.getInvite(ctx, code, &inv)
	if err != nil {
		return "", err
	}
	if !ok || inv.StoreID == "" {
		return "", errBadInvite
	}
	if _, err := h.existingUser(ctx, email, "account not found"); err != nil {
		return "", err
	}
	return inv.StoreID, h.joinByInvite(ctx, code, inv, email)
}

// joinByInvite makes email a member of the store of inv, whose code is
// code, in the store's team, then updates email's record and uses the
// invitation's record up. The caller holds usersMu.
func (h *Dashboard) joinByInvite(ctx context.Context, code string, inv invite, email string) error {
	if _, err := h.teamOf(ctx, inv.StoreID); err != nil {
		return err
	}
	ctx = kassa.WithActor(ctx, kassa.Actor{Kind: kassa.ActorAccount, ID: email, Addr: kassa.ActorFrom(ctx).Addr})
	st, err := h.Services.ChangeMembers(ctx, inv.StoreID, kassa.MemberChange{Action: kassa.ActionMemberJoined, Email: email, InviteID: hashHex(code)})
	if errors.Is(err, kassa.ErrInviteNotFound) {
		return errBadInvite
	}
	if err != nil {
		return err
	}
	if err := h.reindex(ctx, st, email); err != nil {
		return err
	}
	inv.Used = true
	return h.putJSON(ctx, inviteKey(code), inv, inv.Expires)
}

func (h *Dashboard) membersPage(w http.ResponseWriter, r *http.Request) {
	h.renderMembers(w, r, http.StatusOK, map[string]any{})
}

// renderMembers shows the store's members page with data.
func (h *Dashboard) renderMembers(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	st := currentStore(r.Context())
	list, err := h.members(r.Context(), st.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	invites, err := h.openStoreInvites(r.Context(), st.ID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Members"], data["Invites"], data["Roles"] = list, invites, kassa.Roles
	h.render(w, r, status, "members", data)
}

func (h *Dashboard) createMemberInvite(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	role, err := kassa.ParseRole(r.PostForm.Get("role"))
	if err != nil {
		h.renderMembers(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": tr(r, "members.badrole")})
		return
	}
	code, err := h.newStoreInvite(r.Context(), st.ID, current(r.Context()).Email, role)
	if errors.Is(err, errTooManyInvites) {
		h.renderMembers(w, r, http.StatusConflict, map[string]any{"Error": fmt.Sprintf(tr(r, "members.toomany"), maxOpenInvites)})
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	link := strings.TrimRight(h.PublicURL, "/") + Prefix + "/join?invite=" + code
	h.renderMembers(w, r, http.StatusOK, map[string]any{"Link": link})
}

func (h *Dashboard) revokeMemberInvite(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "inviteId")
	if len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		h.notFound(w, r)
		return
	}
	st := currentStore(r.Context())
	if err := h.revokeStoreInvite(r.Context(), st.ID, id); errors.Is(err, kassa.ErrInviteNotFound) {
		h.notFound(w, r)
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/members", "revoked")
}

func (h *Dashboard) setMemberRole(w http.ResponseWriter, r *http.Request) {
	role, err := kassa.ParseRole(r.PostForm.Get("role"))
	if err != nil {
		h.renderMembers(w, r, http.StatusUnprocessableEntity, map[string]any{"Error": tr(r, "members.badrole")})
		return
	}
	h.memberChange(w, r, role, kassa.ActionMemberRoleChanged)
}

func (h *Dashboard) removeMemberPost(w http.ResponseWriter, r *http.Request) {
	h.memberChange(w, r, "", kassa.ActionMemberRemoved)
}

// memberChange changes the role of the member the form names, or
// removes it, and answers.
func (h *Dashboard) memberChange(w http.ResponseWriter, r *http.Request, role kassa.Role, action string) {
	st, s := currentStore(r.Context()), current(r.Context())
	email := strings.ToLower(strings.TrimSpace(r.PostForm.Get("email")))
	err := h.changeMember(r.Context(), st.ID, email, role, action)
	switch {
	case errors.Is(err, errLastOwner):
		h.renderMembers(w, r, http.StatusConflict, map[string]any{"Error": tr(r, "members.lastowner")})
	case errors.Is(err, errNotMember):
		h.renderMembers(w, r, http.StatusNotFound, map[string]any{"Error": fmt.Sprintf(tr(r, "members.notmember"), clipEmail(email))})
	case err != nil:
		h.serverError(w, r, err)
	case email == s.Email && !s.user.Admin:
		// Who left or stepped down may no longer see this page.
		http.Redirect(w, r, Prefix+"/stores?done=memberchanged", http.StatusSeeOther)
	default:
		redirect(w, r, st, "/members", "memberchanged")
	}
}

// joinPage shows an invitation to a store: to a signed-in account a
// button to accept it, to a visitor links to sign in or sign up with
// it.
func (h *Dashboard) joinPage(w http.ResponseWriter, r *http.Request) {
	code := r.URL.Query().Get("invite")
	var inv invite
	ok, err := h.getInvite(r.Context(), code, &inv)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if !ok || inv.StoreID == "" {
		h.fail(w, r, http.StatusForbidden, "err.invite")
		return
	}
	st, err := h.Reader.Store(r.Context(), inv.StoreID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "join", map[string]any{"Invite": code, "StoreName": st.Name, "Role": inv.Role, "Open": h.Signup == SignupOpen})
}

// join accepts an invitation for the signed-in account.
func (h *Dashboard) join(w http.ResponseWriter, r *http.Request) {
	ctx := kassa.WithClientAddr(r.Context(), kassahttp.ClientIP(r, h.ClientIPHeader))
	storeID, err := h.acceptInvite(ctx, r.PostForm.Get("invite"), current(r.Context()).Email)
	switch {
	case err == errBadInvite:
		h.fail(w, r, http.StatusForbidden, "err.invite")
	case errors.Is(err, errAlreadyMember):
		h.fail(w, r, http.StatusConflict, "members.already")
	case err != nil:
		h.serverError(w, r, err)
	default:
		http.Redirect(w, r, Prefix+"/stores/"+storeID+"/", http.StatusSeeOther)
	}
}
