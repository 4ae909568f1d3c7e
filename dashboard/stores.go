package dashboard

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// storeRow is a store in the list, with its prepaid balance.
type storeRow struct {
	Store   *kassa.Store
	Balance kassa.Sats
	// Member is whether the account belongs to the store, and so may
	// leave it (an operator sees every store).
	Member bool
}

func (h *Dashboard) listStores(w http.ResponseWriter, r *http.Request) {
	u := current(r.Context()).user
	var rows []storeRow
	add := func(st *kassa.Store) error {
		bal, err := h.Reader.Balance(r.Context(), st.ID)
		if err != nil {
			return err
		}
		_, member := u.role(st.ID)
		rows = append(rows, storeRow{st, bal, member})
		return nil
	}
	var err error
	if u.Admin {
		// The operator's own store, which top-ups are paid to, is the
		// service's and not a merchant's: it is not listed.
		internal, e := h.TopUps.OperatorStoreIDs(r.Context())
		if e != nil {
			h.serverError(w, r, e)
			return
		}
		err = h.Reader.Stores(r.Context(), func(st *kassa.Store) error {
			if slices.Contains(internal, st.ID) {
				return nil
			}
			return add(st)
		})
	} else {
		for _, id := range u.StoreIDs {
			st, e := h.Reader.Store(r.Context(), id)
			if kassa.ErrorCode(e) == kassa.NotFound {
				continue
			}
			if e != nil {
				err = e
				break
			}
			if err = add(st); err != nil {
				break
			}
		}
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "stores", map[string]any{"Rows": rows})
}

func (h *Dashboard) newStorePage(w http.ResponseWriter, r *http.Request) {
	data := map[string]any{"Currency": "EUR"}
	if n := h.Limits.StoresPerAccount; n >= 0 && len(current(r.Context()).user.StoreIDs) >= n {
		data["Error"] = errStoreCap(n).in(requestLang(r))
	}
	h.render(w, r, http.StatusOK, "store_new", data)
}

// createStore makes a store for the account, within its cap of stores
// (Limits.StoresPerAccount): one over it is refused with 403 and says so.
func (h *Dashboard) createStore(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	s := current(r.Context())
	settings := kassa.StoreSettings{Name: strings.TrimSpace(f.Get("name")), Currency: kassa.Currency(f.Get("currency")),
		PercentFee: h.PercentFee, ConfirmationsRequired: 1}
	end, err := h.reserveStore(r.Context(), s.Email)
	if capErr, ok := err.(errStoreCap); ok {
		h.render(w, r, http.StatusForbidden, "store_new", map[string]any{"Error": capErr.in(requestLang(r)), "Name": settings.Name, "Currency": f.Get("currency")})
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	defer end(nil) // the store was not made
	st, err := h.Services.CreateStore(r.Context(), settings)
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.render(w, r, http.StatusUnprocessableEntity, "store_new", map[string]any{"Error": m, "Name": settings.Name, "Currency": f.Get("currency")})
			return
		}
		h.serverError(w, r, err)
		return
	}
	if err := end(func() error { return h.addStore(r.Context(), s.Email, st.ID) }); err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/", "created")
}

func (h *Dashboard) storeSettings(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	if !kassa.PrincipalFrom(r.Context()).Can(st.ID, kassa.PermViewStoreSettings) {
		redirect(w, r, st, "/invoices", "")
		return
	}
	held, err := h.held(r.Context(), st)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data := map[string]any{"S": st, "Held": held, "Shown": st.Settings().Digest()}
	if err := h.addressGap(r.Context(), st, data); err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "settings", data)
}

// addressGap puts into data the gap of st's xpub addresses (Gap: how
// many were handed out since the last one paid, beside its wallet's gap
// limit); nothing for a store without an xpub.
func (h *Dashboard) addressGap(ctx context.Context, st *kassa.Store, data map[string]any) error {
	if st.Xpub == "" {
		return nil
	}
	g, err := kassa.StoreAddressGap(ctx, h.Reader, st)
	if err != nil {
		return err
	}
	data["Gap"] = g
	return nil
}

// held is what of the store's money is held on the service's node for
// want of a Lightning address to forward it to: the transfers queued
// for forwarding while the store has none (they are Held).
func (h *Dashboard) held(ctx context.Context, st *kassa.Store) (kassa.Sats, error) {
	fs, ok := h.Reader.(kassa.ForwardStore)
	if !ok || st.LightningAddress != "" {
		return 0, nil
	}
	var total kassa.MSat
	err := fs.QueuedTransfers(ctx, st.ID, func(q kassa.QueuedTransfer) error {
		total += q.Amount
		return nil
	})
	return total.Sats(), err
}

func (h *Dashboard) updateSettings(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	f := r.PostForm
	confs, err1 := strconv.ParseInt(strings.TrimSpace(f.Get("confirmations")), 10, 32)
	minSat, err2 := strconv.ParseInt(cmpOr(strings.TrimSpace(f.Get("onchainMin")), "0"), 10, 64)
	autoSat, err3 := strconv.ParseInt(cmpOr(strings.TrimSpace(f.Get("refundAutoApproveMax")), "0"), 10, 64)
	gapLimit, err4 := strconv.ParseInt(cmpOr(strings.TrimSpace(f.Get("walletGapLimit")), "0"), 10, 32)
	u := kassa.StoreUpdate{
		Name: strings.TrimSpace(f.Get("name")), Currency: kassa.Currency(f.Get("currency")),
		LightningAddress: strings.TrimSpace(f.Get("lightningAddress")), Xpub: strings.TrimSpace(f.Get("xpub")),
		XpubType: f.Get("xpubType"), ConfirmationsRequired: int32(confs), OnchainMinAmount: kassa.Sats(minSat),
		LogoURL: strings.TrimSpace(f.Get("logoUrl")), BrandColor: strings.TrimSpace(f.Get("brandColor")),
		DefaultRedirectURL:           strings.TrimSpace(f.Get("defaultRedirectUrl")),
		DefaultRedirectAutomatically: f.Get("defaultRedirectAutomatically") == "on",
		DefaultLanguage:              strings.TrimSpace(f.Get("defaultLanguage")),
		RefundAutoApproveMax:         kassa.Sats(autoSat),
		WalletGapLimit:               int32(gapLimit),
	}
	// The form names the settings it changes from those it showed
	// (shown, kassa.StoreUpdate.Digest), so that a change another member
	// or the API made since the page was loaded is kept. A form without
	// it sets every setting.
	var only []kassa.StoreField
	var err error
	if shown := f.Get("shown"); shown != "" {
		only, err = u.ChangedSince(shown)
	}
	var next *kassa.Store
	switch {
	case err != nil:
	case err1 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "confirmations", Message: "must be a whole number"}})
	case err2 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "onchainMinAmount", Message: "must be a whole number of satoshis"}})
	case err3 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "refundAutoApproveMax", Message: "must be a whole number of satoshis"}})
	case err4 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "walletGapLimit", Message: "must be a whole number of addresses"}})
	default:
		next, err = h.Services.UpdateStore(r.Context(), st.ID, u, only...)
	}
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			shown := *st
			shown.Name, shown.Currency, shown.LightningAddress, shown.Xpub, shown.XpubType = u.Name, u.Currency, u.LightningAddress, u.Xpub, u.XpubType
			shown.LogoURL, shown.BrandColor, shown.DefaultRedirectURL = u.LogoURL, u.BrandColor, u.DefaultRedirectURL
			shown.DefaultLanguage, shown.DefaultRedirectAutomatically = u.DefaultLanguage, u.DefaultRedirectAutomatically
			shown.RefundAutoApproveMax, shown.WalletGapLimit = u.RefundAutoApproveMax, u.WalletGapLimit
			held, _ := h.held(r.Context(), st)
			h.render(w, r, http.StatusUnprocessableEntity, "settings", map[string]any{"S": &shown, "Error": m, "Held": held, "Shown": f.Get("shown")})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, next, "/", "saved")
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// keyRow is a key as the list shows it: never the key itself, which a
// reveal (revealKey) shows after the password is entered again.
type keyRow struct {
	ID, Label, Masked string
	CreatedAt         time.Time
	// Permissions are what the key was made with; none: the defaults.
	Permissions kassa.Permissions
}

// maskKey is the first and last 4 characters of a key: enough to tell
// keys apart and match one to a configuration, not to use it.
func maskKey(key string) string {
	if len(key) <= 12 {
		return strings.Repeat("•", 8)
	}
	return key[:4] + "••••" + key[len(key)-4:]
}

func keyRows(keys []kassa.APIKey) []keyRow {
	rows := make([]keyRow, len(keys))
	for i, k := range keys {
		rows[i] = keyRow{ID: k.ID, Label: k.Label, Masked: maskKey(k.Key), CreatedAt: k.CreatedAt, Permissions: k.Permissions}
	}
	return rows
}

func (h *Dashboard) keysPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "keys", map[string]any{"Keys": keyRows(currentStore(r.Context()).APIKeys)})
}

func (h *Dashboard) createKey(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	perms, err := keyFormPermissions(r.PostForm["permission"])
	if err == nil {
		_, err = h.Services.CreateAPIKey(r.Context(), st.ID, r.PostForm.Get("label"), perms...)
	}
	if err != nil {
		if m, ok := fieldErrors(r, err); ok {
			h.render(w, r, http.StatusUnprocessableEntity, "keys", map[string]any{"Keys": keyRows(st.APIKeys), "Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/keys", "keycreated")
}

// revealKey shows one key in full, in the answer to this POST only, once
// the user has entered their password again: a session alone (a
// borrowed browser, a stolen cookie) does not read the store's keys. The
// password is checked as a sign-in is, within the same hashing gate and
// counted with the sign-in attempts; each reveal is journaled in the
// store's history with the account's email.
func (h *Dashboard) revealKey(w http.ResponseWriter, r *http.Request) {
	st, s := currentStore(r.Context()), current(r.Context())
	id := chi.URLParam(r, "keyId")
	if !slices.ContainsFunc(st.APIKeys, func(k kassa.APIKey) bool { return k.ID == id }) {
		h.notFound(w, r)
		return
	}
	password := r.PostForm.Get("password")
	fail := func(status int, message string) {
		h.render(w, r, status, "keys", map[string]any{"Keys": keyRows(st.APIKeys), "Error": message})
	}
	network, _ := h.clientNetworks(r)
	byAddress, byAccount := addressKey(network), accountKey(network, s.Email)
	if wait := h.limits.take(limit{byAddress, maxFailsAddress}, limit{byAccount, maxFailsAccount}); wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		fail(http.StatusTooManyRequests, tr(r, "err.ratelimit"))
		return
	}
	ok, err := h.check(r.Context(), ticket{trusted: true, account: s.Email}, s.user.PasswordHash, password)
	if err != nil {
		h.limits.give(byAddress, byAccount)
		h.busy(w, r, "keys", map[string]any{"Keys": keyRows(st.APIKeys)})
		return
	}
	if !ok || len(password) > maxPassword {
		fail(http.StatusForbidden, tr(r, "err.reveal"))
		return
	}
	h.limits.give(byAddress)
	h.limits.forget(byAccount)
	key, err := h.Services.RevealAPIKey(r.Context(), st.ID, id, s.Email)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "keys", map[string]any{"Keys": keyRows(st.APIKeys), "Revealed": key})
}

func (h *Dashboard) deleteKey(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	id := chi.URLParam(r, "keyId")
	if !slices.ContainsFunc(st.APIKeys, func(k kassa.APIKey) bool { return k.ID == id }) {
		h.notFound(w, r)
		return
	}
	if err := h.Services.DeleteAPIKey(r.Context(), st.ID, id); err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/keys", "keydeleted")
}

func (h *Dashboard) invitesPage(w http.ResponseWriter, r *http.Request) {
	if !current(r.Context()).user.Admin {
		h.notFound(w, r)
		return
	}
	h.renderInvites(w, r, http.StatusOK, map[string]any{})
}

// renderInvites shows the Invitations page with the open invitations.
func (h *Dashboard) renderInvites(w http.ResponseWriter, r *http.Request, status int, data map[string]any) {
	list, err := h.openInvites(r.Context())
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	data["Mode"], data["Invites"] = h.Signup, list
	h.render(w, r, status, "invites", data)
}

// revokeInvitePost revokes an open invitation (operators only).
func (h *Dashboard) revokeInvitePost(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "inviteId")
	if !current(r.Context()).user.Admin || len(id) != 64 || strings.Trim(id, "0123456789abcdef") != "" {
		h.notFound(w, r)
		return
	}
	if err := h.revokeInvite(r.Context(), id); kassa.ErrorCode(err) == kassa.NotFound {
		h.notFound(w, r)
		return
	} else if err != nil {
		h.serverError(w, r, err)
		return
	}
	http.Redirect(w, r, Prefix+"/invites?done=revoked", http.StatusSeeOther)
}

func (h *Dashboard) createInvite(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	if !s.user.Admin {
		h.notFound(w, r)
		return
	}
	code, err := h.newInvite(r.Context(), s.Email)
	if err == errTooManyInvites {
		h.renderInvites(w, r, http.StatusConflict, map[string]any{"Error": fmt.Sprintf(tr(r, "members.toomany"), maxOpenInvites)})
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	link := strings.TrimRight(h.PublicURL, "/") + Prefix + "/signup?invite=" + code
	h.renderInvites(w, r, http.StatusOK, map[string]any{"Link": link})
}
