package kassa

import (
	"context"
	"slices"
	"strings"
)

// Permission names one thing a principal (an API key, later a store
// member) may do on a store. The names are BTCPay Server's store
// policies (BTCPayServer.Client/Permissions.cs, Policies), so that a
// Greenfield key's permissions are BTCPay's strings unchanged, plus
// Kassa's own under "kassa.store." where BTCPay has none. Every route
// of both APIs asks Principal.Can for one of them (docs/api.md,
// "Permissions").
type Permission string

// BTCPay's store permissions.
const (
	PermModifyStoreSettings           Permission = "btcpay.store.canmodifystoresettings"
	PermViewStoreSettings             Permission = "btcpay.store.canviewstoresettings"
	PermModifyWebhooks                Permission = "btcpay.store.webhooks.canmodifywebhooks"
	PermViewReports                   Permission = "btcpay.store.canviewreports"
	PermViewInvoices                  Permission = "btcpay.store.canviewinvoices"
	PermCreateInvoice                 Permission = "btcpay.store.cancreateinvoice"
	PermModifyInvoices                Permission = "btcpay.store.canmodifyinvoices"
	PermViewPaymentRequests           Permission = "btcpay.store.canviewpaymentrequests"
	PermModifyPaymentRequests         Permission = "btcpay.store.canmodifypaymentrequests"
	PermManagePullPayments            Permission = "btcpay.store.canmanagepullpayments"
	PermArchivePullPayments           Permission = "btcpay.store.canarchivepullpayments"
	PermCreatePullPayments            Permission = "btcpay.store.cancreatepullpayments"
	PermCreateNonApprovedPullPayments Permission = "btcpay.store.cancreatenonapprovedpullpayments"
	PermViewPullPayments              Permission = "btcpay.store.canviewpullpayments"
	PermManagePayouts                 Permission = "btcpay.store.canmanagepayouts"
	PermViewPayouts                   Permission = "btcpay.store.canviewpayouts"
	PermUseLightningNode              Permission = "btcpay.store.canuselightningnode"
	PermViewLightningInvoice          Permission = "btcpay.store.canviewlightninginvoice"
	PermCreateLightningInvoice        Permission = "btcpay.store.cancreatelightninginvoice"
)

// Kassa's own store permissions: BTCPay ties them to its user accounts;
// here they are the owner's and implied by nothing else.
const (
	PermManageMembers Permission = "kassa.store.canmanagemembers"
	PermManageAPIKeys Permission = "kassa.store.canmanageapikeys"
)

// AllPermissions is the vocabulary, broadest first.
var AllPermissions = []Permission{
	PermModifyStoreSettings, PermViewStoreSettings, PermModifyWebhooks, PermViewReports,
	PermModifyInvoices, PermViewInvoices, PermCreateInvoice,
	PermModifyPaymentRequests, PermViewPaymentRequests,
	PermManagePullPayments, PermArchivePullPayments, PermCreatePullPayments,
	PermCreateNonApprovedPullPayments, PermViewPullPayments,
	PermManagePayouts, PermViewPayouts,
	PermUseLightningNode, PermViewLightningInvoice, PermCreateLightningInvoice,
	PermManageMembers, PermManageAPIKeys,
}

// implies lists what each permission grants besides itself, as BTCPay's
// Permission.Init does; Implies follows it transitively.
var implies = map[Permission][]Permission{
	PermModifyStoreSettings: {PermManagePullPayments, PermModifyInvoices, PermViewStoreSettings,
		PermModifyWebhooks, PermModifyPaymentRequests, PermManagePayouts, PermUseLightningNode},
	PermManagePullPayments:            {PermCreatePullPayments, PermArchivePullPayments},
	PermCreatePullPayments:            {PermCreateNonApprovedPullPayments},
	PermCreateNonApprovedPullPayments: {PermViewPullPayments},
	PermModifyPaymentRequests:         {PermViewPaymentRequests},
	PermUseLightningNode:              {PermViewLightningInvoice, PermCreateLightningInvoice},
	PermModifyInvoices:                {PermViewInvoices, PermCreateInvoice, PermCreateLightningInvoice},
	PermViewStoreSettings:             {PermViewInvoices, PermViewPaymentRequests, PermViewReports, PermViewPullPayments, PermViewPayouts},
	PermManagePayouts:                 {PermViewPayouts},
}

// descriptions say what each permission allows, for the pages that ask a
// merchant to grant it.
var descriptions = map[Permission]string{
	PermModifyStoreSettings:           "change the store's settings, and everything below",
	PermViewStoreSettings:             "see the store's settings, invoices, pay links, reports and payouts",
	PermModifyWebhooks:                "add, change and remove the store's webhooks",
	PermViewReports:                   "see the store's balance and transactions",
	PermViewInvoices:                  "see invoices",
	PermCreateInvoice:                 "create invoices",
	PermModifyInvoices:                "see, create, archive and mark invoices",
	PermViewPaymentRequests:           "see pay links",
	PermModifyPaymentRequests:         "create, change and archive pay links",
	PermManagePullPayments:            "create, approve and archive refunds and pull payments",
	PermArchivePullPayments:           "archive pull payments",
	PermCreatePullPayments:            "create approved refunds and pull payments",
	PermCreateNonApprovedPullPayments: "create refunds that wait for approval",
	PermViewPullPayments:              "see refunds and pull payments",
	PermManagePayouts:                 "approve, pay and cancel payouts",
	PermViewPayouts:                   "see payouts",
	PermUseLightningNode:              "use the store's Lightning node",
	PermViewLightningInvoice:          "see the store's Lightning invoices",
	PermCreateLightningInvoice:        "create Lightning invoices on the store's node",
	PermManageMembers:                 "invite and remove members and change their roles",
	PermManageAPIKeys:                 "create, show and delete API keys",
}

// Describe says in plain words what p allows.
func (p Permission) Describe() string { return descriptions[p] }

// Implies reports whether holding p grants q: p itself, or anything p
// implies, transitively.
func (p Permission) Implies(q Permission) bool {
	if p == q {
		return true
	}
	for _, c := range implies[p] {
		if c.Implies(q) {
			return true
		}
	}
	return false
}

// ParsePermission returns the permission named s (trimmed, any case), or
// an Invalid error naming it as unknown.
func ParsePermission(s string) (Permission, error) {
	p := Permission(strings.ToLower(strings.TrimSpace(s)))
	if slices.Contains(AllPermissions, p) {
		return p, nil
	}
	return "", Errorf(Invalid, "unknown permission %q: Kassa knows BTCPay's store permissions (btcpay.store.…) and kassa.store.canmanagemembers, kassa.store.canmanageapikeys", clip(s))
}

// clip bounds a string quoted in an error message.
func clip(s string) string {
	if len(s) > 100 {
		return s[:100] + "…"
	}
	return s
}

// Grant is a permission as BTCPay writes it: "name" (on any store the
// holder may act on) or "name:storeId" (on that store only).
type Grant struct {
	Permission Permission
	StoreID    string
}

// ParseGrant parses "name" or "name:storeId".
func ParseGrant(s string) (Grant, error) {
	name, store, scoped := strings.Cut(strings.TrimSpace(s), ":")
	p, err := ParsePermission(name)
	if err != nil {
		return Grant{}, err
	}
	if scoped && store == "" {
		return Grant{}, Errorf(Invalid, "permission %q names no store after the colon", clip(s))
	}
	return Grant{Permission: p, StoreID: store}, nil
}

// String is the grant in BTCPay's form.
func (g Grant) String() string {
	if g.StoreID == "" {
		return string(g.Permission)
	}
	return string(g.Permission) + ":" + g.StoreID
}

// Permissions is a set of permissions, each named once, in the order
// given.
type Permissions []Permission

// MaxPermissions bounds the permissions a request may name.
const MaxPermissions = 64

// ParsePermissions parses names into a set without repeats. Every
// unknown name is reported in one Invalid error; an empty list is
// Invalid too (a key holds at least one permission).
func ParsePermissions(names []string) (Permissions, error) {
	if len(names) == 0 {
		return nil, Errorf(Invalid, "no permission named: a key needs at least one")
	}
	if len(names) > MaxPermissions {
		return nil, Errorf(Invalid, "at most %d permissions", MaxPermissions)
	}
	var out Permissions
	var unknown []string
	for _, n := range names {
		p, err := ParsePermission(n)
		if err != nil {
			unknown = append(unknown, "\""+clip(n)+"\"")
			continue
		}
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	if len(unknown) > 0 {
		return nil, Errorf(Invalid, "unknown permission %s: Kassa knows BTCPay's store permissions (btcpay.store.…) and kassa.store.canmanagemembers, kassa.store.canmanageapikeys", strings.Join(unknown, ", "))
	}
	return out, nil
}

// Has reports whether a permission of ps implies q.
func (ps Permissions) Has(q Permission) bool {
	for _, p := range ps {
		if p.Implies(q) {
			return true
		}
	}
	return false
}

// DefaultKeyPermissions are what a key holds when it was made without a
// choice of permissions, as every key was before keys carried them:
// everything the routes of both APIs serve on the key's store (invoices,
// pay links, webhooks, reading the store), but neither changing the
// store's settings nor managing keys or members, which no API route
// does.
var DefaultKeyPermissions = Permissions{PermViewStoreSettings, PermModifyInvoices, PermModifyPaymentRequests, PermModifyWebhooks}

// Role is a store member's role: a named set of permissions
// (docs/api.md, "Roles"). The names are BTCPay's.
type Role string

// The roles, from most to least.
const (
	RoleOwner    Role = "Owner"
	RoleManager  Role = "Manager"
	RoleEmployee Role = "Employee"
	RoleGuest    Role = "Guest"
)

// Roles lists the roles from most to least.
var Roles = []Role{RoleOwner, RoleManager, RoleEmployee, RoleGuest}

var rolePermissions = map[Role]Permissions{
	RoleOwner: {PermModifyStoreSettings, PermManageMembers, PermManageAPIKeys},
	RoleManager: {PermViewStoreSettings, PermModifyInvoices, PermModifyPaymentRequests, PermModifyWebhooks,
		PermManagePullPayments, PermManagePayouts},
	RoleEmployee: {PermModifyInvoices, PermModifyPaymentRequests, PermCreateNonApprovedPullPayments},
	RoleGuest:    {PermViewInvoices, PermCreateInvoice, PermViewPaymentRequests},
}

// Permissions are what the role holds.
func (r Role) Permissions() Permissions { return rolePermissions[r] }

// ParseRole returns the role named s (any case), or an Invalid error.
func ParseRole(s string) (Role, error) {
	for _, r := range Roles {
		if strings.EqualFold(string(r), strings.TrimSpace(s)) {
			return r, nil
		}
	}
	return "", Errorf(Invalid, "unknown role %q: one of Owner, Manager, Employee, Guest", clip(s))
}

// Principal is who asks to act: an API key today, a store member later.
// Every route of both APIs asks it one question, Can.
type Principal struct {
	// Name says who it is in logs and history: a key's id, a member's
	// email. Kind is ActorAPIKey or ActorAccount; Label a key's label.
	Name   string
	Kind   string
	Label  string
	stores map[string]Permissions
}

// KeyPrincipal is the principal of an API key of store storeID: the
// key's permissions, on that store only.
func KeyPrincipal(storeID string, k APIKey) *Principal {
	return &Principal{Name: k.ID, Kind: ActorAPIKey, Label: k.Label, stores: map[string]Permissions{storeID: k.Granted()}}
}

// Can reports whether p may do perm on store storeID. A nil principal
// may do nothing.
func (p *Principal) Can(storeID string, perm Permission) bool {
	if p == nil {
		return false
	}
	return p.stores[storeID].Has(perm)
}

// MemberPrincipal is the principal of a store member named name: on
// each store of roles, that role's permissions, on no other.
func MemberPrincipal(name string, roles map[string]Role) *Principal {
	p := &Principal{Name: name, Kind: ActorAccount, stores: make(map[string]Permissions, len(roles))}
	for id, r := range roles {
		p.stores[id] = r.Permissions()
	}
	return p
}

type principalKey struct{}

// WithPrincipal returns ctx carrying p.
func WithPrincipal(ctx context.Context, p *Principal) context.Context {
	return context.WithValue(ctx, principalKey{}, p)
}

// PrincipalFrom returns the principal ctx carries, or nil.
func PrincipalFrom(ctx context.Context) *Principal {
	p, _ := ctx.Value(principalKey{}).(*Principal)
	return p
}
