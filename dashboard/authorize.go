package dashboard

import (
	"maps"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/kassapay/kassa"
)

// BTCPay's interactive key flow (Greenfield's GET /api-keys/authorize,
// as BTCPay's shop plugins use it): a plugin's "connect" button sends the
// merchant to /api-keys/authorize (package http forwards it here with
// its query); the signed-in merchant sees the application, the redirect's
// host and the permissions asked in plain words, picks one of their
// stores and approves or refuses. Approval makes a key of that store
// holding exactly the permissions asked and POSTs it back to the
// redirect with a form, as BTCPay does: apiKey, and permissions[] as
// <permission>:<storeId>. Refusal goes back to the redirect without a
// key. strict and selectiveStores are accepted: a Kassa key always
// holds exactly what was asked, on one store. Nothing is reused by
// applicationIdentifier; it is kept in the key's label.

// Bounds of the flow's fields.
const (
	maxAppName     = 100
	maxAppID       = 100
	maxRedirectURL = 2000
)

// authorizeStrs are the strings of the flow's pages.
var authorizeStrs = map[string]string{
	"authorize.title":    "Authorize an application",
	"authorize.asks":     "asks for an API key with these permissions:",
	"authorize.sendto":   "The key will be sent to",
	"authorize.store":    "Store",
	"authorize.approve":  "Approve",
	"authorize.refuse":   "Refuse",
	"authorize.sending":  "Sending the key to",
	"authorize.continue": "Continue",
	"authorize.unnamed":  "An application",
	"authorize.nostore":  "You have no store to grant a key of: create a store first.",
	"keys.perms":         "Permissions (none ticked: the default set, everything the APIs serve)",
	"keys.allperms":      "default permissions",
}

// init adds the flow's strings, and the vocabulary the key form offers
// ({{permissions}}), before the pages are parsed (New).
func init() {
	maps.Copy(strs, authorizeStrs)
	funcs["permissions"] = func() []permRow {
		rows := make([]permRow, len(kassa.AllPermissions))
		for i, p := range kassa.AllPermissions {
			rows[i] = permRow{string(p), p.Describe()}
		}
		return rows
	}
}

// keyFormPermissions are the permissions ticked in the key form: none
// is nil (the defaults), an unknown one Invalid.
func keyFormPermissions(names []string) (kassa.Permissions, error) {
	if len(names) == 0 {
		return nil, nil
	}
	return kassa.ParsePermissions(names)
}

// authorizeRequest is a checked request of the flow.
type authorizeRequest struct {
	AppName, AppID string
	Redirect       *url.URL
	Perms          kassa.Permissions
	// StoreID is the store the permissions name ("name:storeId"), if any.
	StoreID string
}

// authorizeError is a refusal of a request, with its status.
type authorizeError struct {
	status  int
	message string
}

// permissionValues returns the values of the permissions parameter in
// order, under any of the names clients send: permissions,
// permissions[] and permissions[N] (PHP's http_build_query).
func permissionValues(raw string) []string {
	var out []string
	for part := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(part, "=")
		key, err1 := url.QueryUnescape(k)
		val, err2 := url.QueryUnescape(v)
		if err1 != nil || err2 != nil {
			continue
		}
		if key == "permissions" || strings.HasPrefix(key, "permissions[") && strings.HasSuffix(key, "]") {
			out = append(out, val)
		}
	}
	return out
}

// checkAuthorize checks a request of the flow: known permissions on at
// most one store, an application name and identifier of bounded
// length, and a redirect that is an absolute https URL (http to a
// loopback address only with --dev) without user info.
func (h *Dashboard) checkAuthorize(appName, appID, redirect string, perms []string) (*authorizeRequest, *authorizeError) {
	bad := func(format string, args ...any) *authorizeError {
		return &authorizeError{http.StatusBadRequest, kassa.Errorf(kassa.Invalid, format, args...).Message}
	}
	if len(appName) > maxAppName || !utf8.ValidString(appName) {
		return nil, bad("applicationName: at most %d characters", maxAppName)
	}
	if len(appID) > maxAppID || !utf8.ValidString(appID) {
		return nil, bad("applicationIdentifier: at most %d characters", maxAppID)
	}
	req := &authorizeRequest{AppName: strings.TrimSpace(appName), AppID: strings.TrimSpace(appID)}
	if len(perms) == 0 {
		return nil, bad("no permission asked: a key needs at least one")
	}
	if len(perms) > kassa.MaxPermissions {
		return nil, bad("at most %d permissions", kassa.MaxPermissions)
	}
	names := make([]string, 0, len(perms))
	for _, p := range perms {
		g, err := kassa.ParseGrant(p)
		if err != nil {
			return nil, &authorizeError{http.StatusBadRequest, kassa.ErrorMessage(err)}
		}
		if g.StoreID != "" {
			if req.StoreID != "" && req.StoreID != g.StoreID {
				return nil, bad("the permissions name more than one store: a key belongs to one store")
			}
			req.StoreID = g.StoreID
		}
		names = append(names, string(g.Permission))
	}
	var err error
	if req.Perms, err = kassa.ParsePermissions(names); err != nil {
		return nil, &authorizeError{http.StatusBadRequest, kassa.ErrorMessage(err)}
	}
	u, err := url.Parse(redirect)
	if redirect == "" || len(redirect) > maxRedirectURL || err != nil || !u.IsAbs() || u.Host == "" || u.User != nil || u.Opaque != "" {
		return nil, bad("redirect: an absolute https URL of at most %d characters is needed", maxRedirectURL)
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && h.Dev && isLoopback(u.Hostname()):
	default:
		return nil, bad("redirect: the key is sent to https URLs only (http to a loopback address with --dev)")
	}
	req.Redirect = u
	return req, nil
}

// isLoopback reports whether host is localhost or a loopback address.
func isLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authorizeStores are the stores the user may grant a key of: those
// whose keys it may manage, or only the one the permissions name. A
// named store whose keys it may not manage is nil, false.
func (h *Dashboard) authorizeStores(r *http.Request, u *user, named string) ([]*kassa.Store, bool, error) {
	ids := slices.DeleteFunc(slices.Clone(u.StoreIDs), func(id string) bool { return !u.can(id, kassa.PermManageAPIKeys) })
	if named != "" {
		if !kassa.ValidID(named) || !u.can(named, kassa.PermManageAPIKeys) {
			return nil, false, nil
		}
		ids = []string{named}
	}
	stores := make([]*kassa.Store, 0, len(ids))
	for _, id := range ids {
		st, err := h.Reader.Store(r.Context(), id)
		if err != nil {
			return nil, false, err
		}
		stores = append(stores, st)
	}
	return stores, true, nil
}

// authorizePage shows the request for approval.
func (h *Dashboard) authorizePage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req, aerr := h.checkAuthorize(q.Get("applicationName"), q.Get("applicationIdentifier"), q.Get("redirect"), permissionValues(r.URL.RawQuery))
	if aerr != nil {
		h.failMessage(w, r, aerr.status, func(lang string) string { return domainText(lang, aerr.message) })
		return
	}
	stores, ok, err := h.authorizeStores(r, current(r.Context()).user, req.StoreID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if !ok {
		h.notFound(w, r)
		return
	}
	if len(stores) == 0 {
		h.failMessage(w, r, http.StatusConflict, func(lang string) string { return msgIn(lang, "authorize.nostore") })
		return
	}
	h.renderAuthorize(w, r, http.StatusOK, req, stores, "")
}

// permRow is a permission as the page shows it.
type permRow struct{ Name, Description string }

func (h *Dashboard) renderAuthorize(w http.ResponseWriter, r *http.Request, status int, req *authorizeRequest, stores []*kassa.Store, message string) {
	rows := make([]permRow, len(req.Perms))
	names := make([]string, len(req.Perms))
	for i, p := range req.Perms {
		rows[i], names[i] = permRow{string(p), p.Describe()}, string(p)
		if req.StoreID != "" {
			names[i] += ":" + req.StoreID
		}
	}
	h.render(w, r, status, "authorize", map[string]any{
		"App": req.AppName, "AppID": req.AppID, "Redirect": req.Redirect.String(), "Host": req.Redirect.Host,
		"Perms": rows, "Names": names, "Stores": stores, "Error": message,
	})
}

// authorize takes the merchant's decision (the form of authorizePage,
// CSRF-checked by checkCSRF): every field is checked again.
func (h *Dashboard) authorize(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	req, aerr := h.checkAuthorize(f.Get("applicationName"), f.Get("applicationIdentifier"), f.Get("redirect"), f["permissions"])
	if aerr != nil {
		h.failMessage(w, r, aerr.status, func(lang string) string { return domainText(lang, aerr.message) })
		return
	}
	storeID := f.Get("storeId")
	if req.StoreID != "" && storeID != req.StoreID {
		h.notFound(w, r)
		return
	}
	stores, ok, err := h.authorizeStores(r, current(r.Context()).user, storeID)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	if !ok || storeID == "" {
		h.notFound(w, r)
		return
	}
	if f.Get("decision") != "approve" {
		http.Redirect(w, r, req.Redirect.String(), http.StatusSeeOther)
		return
	}
	label := req.AppName
	if label == "" {
		label = tr(r, "authorize.unnamed")
	}
	if req.AppID != "" {
		label += " (" + req.AppID + ")"
	}
	if len(label) > kassa.MaxAPIKeyLabel {
		label = strings.ToValidUTF8(label[:kassa.MaxAPIKeyLabel], "")
	}
	key, err := h.Services.CreateAPIKey(r.Context(), storeID, label, req.Perms...)
	if err != nil {
		if kassa.ErrorCode(err) == kassa.Conflict || kassa.ErrorCode(err) == kassa.Invalid {
			h.renderAuthorize(w, r, http.StatusConflict, req, stores, errorText(requestLang(r), err))
			return
		}
		h.serverError(w, r, err)
		return
	}
	granted := make([]string, len(key.Permissions))
	for i, p := range key.Permissions {
		granted[i] = kassa.Grant{Permission: p, StoreID: storeID}.String()
	}
	// The answer posts the key to the redirect: the policy lets this one
	// form go there, and nothing else changes.
	origin := req.Redirect.Scheme + "://" + req.Redirect.Host
	w.Header().Set("Content-Security-Policy", strings.Replace(csp, "form-action 'self'", "form-action "+origin, 1))
	w.Header().Set("Referrer-Policy", "no-referrer")
	h.render(w, r, http.StatusOK, "authorize_post", map[string]any{
		"Redirect": req.Redirect.String(), "Host": req.Redirect.Host, "Key": key.Key, "Permissions": granted,
	})
}
