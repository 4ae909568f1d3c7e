package dashboard

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/kassapay/kassa"
)

// storeRow is a store in the list, with its prepaid balance.
type storeRow struct {
	Store   *kassa.Store
	Balance kassa.Sats
}

func (h *Dashboard) listStores(w http.ResponseWriter, r *http.Request) {
	u := current(r.Context()).user
	var rows []storeRow
	add := func(st *kassa.Store) error {
		bal, err := h.Reader.Balance(r.Context(), st.ID)
		if err != nil {
			return err
		}
		rows = append(rows, storeRow{st, bal})
		return nil
	}
	var err error
	if u.Admin {
		// The operator's own store, which top-ups are paid to, is the
		// service's and not a merchant's: it is not listed.
		internal, _, e := h.KV.GetValue(r.Context(), operatorStoreKey)
		if e != nil {
			h.serverError(w, r, e)
			return
		}
		err = h.Reader.Stores(r.Context(), func(st *kassa.Store) error {
			if st.ID == operatorStoreID || st.ID == string(internal) {
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
	h.render(w, r, http.StatusOK, "store_new", map[string]any{"Currency": "EUR"})
}

func (h *Dashboard) createStore(w http.ResponseWriter, r *http.Request) {
	f := r.PostForm
	s := current(r.Context())
	settings := kassa.StoreSettings{Name: strings.TrimSpace(f.Get("name")), Currency: kassa.Currency(f.Get("currency")),
		PercentFee: h.PercentFee, ConfirmationsRequired: 1}
	st, err := h.Services.CreateStore(r.Context(), settings)
	if err != nil {
		if m, ok := fieldErrors(err); ok {
			h.render(w, r, http.StatusUnprocessableEntity, "store_new", map[string]any{"Error": m, "Name": settings.Name, "Currency": f.Get("currency")})
			return
		}
		h.serverError(w, r, err)
		return
	}
	if err := h.addStore(r.Context(), s.Email, st.ID); err != nil {
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/", "created")
}

func (h *Dashboard) storeSettings(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	held, err := h.held(r.Context(), st)
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	h.render(w, r, http.StatusOK, "settings", map[string]any{"S": st, "Held": held})
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
	u := kassa.StoreUpdate{
		Name: strings.TrimSpace(f.Get("name")), Currency: kassa.Currency(f.Get("currency")),
		LightningAddress: strings.TrimSpace(f.Get("lightningAddress")), Xpub: strings.TrimSpace(f.Get("xpub")),
		XpubType: f.Get("xpubType"), ConfirmationsRequired: int32(confs), OnchainMinAmount: kassa.Sats(minSat),
		LogoURL: strings.TrimSpace(f.Get("logoUrl")), BrandColor: strings.TrimSpace(f.Get("brandColor")),
		DefaultRedirectURL: strings.TrimSpace(f.Get("defaultRedirectUrl")),
	}
	var err error
	var next *kassa.Store
	switch {
	case err1 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "confirmations", Message: "must be a whole number"}})
	case err2 != nil:
		err = kassa.InvalidFields([]kassa.FieldError{{Field: "onchainMinAmount", Message: "must be a whole number of satoshis"}})
	default:
		next, err = h.Services.UpdateStore(r.Context(), st.ID, u)
	}
	if err != nil {
		if m, ok := fieldErrors(err); ok {
			shown := *st
			shown.Name, shown.Currency, shown.LightningAddress, shown.Xpub, shown.XpubType = u.Name, u.Currency, u.LightningAddress, u.Xpub, u.XpubType
			shown.LogoURL, shown.BrandColor, shown.DefaultRedirectURL = u.LogoURL, u.BrandColor, u.DefaultRedirectURL
			held, _ := h.held(r.Context(), st)
			h.render(w, r, http.StatusUnprocessableEntity, "settings", map[string]any{"S": &shown, "Error": m, "Held": held})
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

func (h *Dashboard) keysPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "keys", map[string]any{"Keys": currentStore(r.Context()).APIKeys})
}

func (h *Dashboard) createKey(w http.ResponseWriter, r *http.Request) {
	st := currentStore(r.Context())
	if _, err := h.Services.CreateAPIKey(r.Context(), st.ID, r.PostForm.Get("label")); err != nil {
		if m, ok := fieldErrors(err); ok {
			h.render(w, r, http.StatusUnprocessableEntity, "keys", map[string]any{"Keys": st.APIKeys, "Error": m})
			return
		}
		h.serverError(w, r, err)
		return
	}
	redirect(w, r, st, "/keys", "keycreated")
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
		h.renderInvites(w, r, http.StatusConflict, map[string]any{"Error": kassa.ErrorMessage(err)})
		return
	}
	if err != nil {
		h.serverError(w, r, err)
		return
	}
	link := strings.TrimRight(h.PublicURL, "/") + Prefix + "/signup?invite=" + code
	h.renderInvites(w, r, http.StatusOK, map[string]any{"Link": link})
}
