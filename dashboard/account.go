package dashboard

import (
	"net/http"
	"time"

	"github.com/kassapay/kassa"
)

// The account page: a signed-in user changes their password. The
// current password is required; the browser that changes it stays
// signed in and every other session of the account ends.

func (h *Dashboard) accountPage(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, http.StatusOK, "account", map[string]any{})
}

func (h *Dashboard) changePassword(w http.ResponseWriter, r *http.Request) {
	s := current(r.Context())
	current, next := r.PostForm.Get("current"), r.PostForm.Get("password")
	fail := func(status int, message string) {
		h.render(w, r, status, "account", map[string]any{"Error": message})
	}
	if next != r.PostForm.Get("confirm") {
		fail(http.StatusUnprocessableEntity, tr(r, "err.confirm"))
		return
	}
	if len(next) < minPassword || len(next) > maxPassword {
		fail(http.StatusUnprocessableEntity, tr(r, "err.password"))
		return
	}
	// The current password is checked as a sign-in is, and counted
	// with them: a borrowed session must not be a way to try passwords.
	network, _ := h.clientNetworks(r)
	byAddress, byAccount := addressKey(network), accountKey(network, s.Email)
	if wait := h.limits.take(limit{byAddress, maxFailsAddress}, limit{byAccount, maxFailsAccount}); wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		fail(http.StatusTooManyRequests, tr(r, "err.ratelimit"))
		return
	}
	verified := s.user.PasswordHash
	ok, err := h.check(r.Context(), ticket{trusted: true, account: s.Email}, verified, current)
	if err != nil {
		h.limits.give(byAddress, byAccount)
		h.busy(w, r, "account", map[string]any{})
		return
	}
	if !ok || len(current) > maxPassword {
		fail(http.StatusUnprocessableEntity, tr(r, "err.current"))
		return
	}
	h.limits.give(byAddress)
	h.limits.forget(byAccount)
	err = h.setPassword(r.Context(), s.Email, next, func(u *user) error {
		if u.PasswordHash != verified { // changed since it was checked
			return errWrongPassword
		}
		return nil
	}, s)
	switch {
	case err == errWrongPassword:
		fail(http.StatusUnprocessableEntity, tr(r, "err.current"))
	case err == errBusy:
		h.busy(w, r, "account", map[string]any{})
	case kassa.ErrorCode(err) == kassa.Invalid:
		fail(http.StatusUnprocessableEntity, errorText(requestLang(r), err))
	case err != nil:
		h.serverError(w, r, err)
	default:
		http.Redirect(w, r, Prefix+"/account?done=password", http.StatusSeeOther)
	}
}
