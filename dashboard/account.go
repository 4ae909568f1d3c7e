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
	ip := h.clientIP(r)
	if wait := h.limits.blocked(ip, s.Email); wait > 0 {
		w.Header().Set("Retry-After", itoa(int64(wait/time.Second)+1))
		fail(http.StatusTooManyRequests, msg("err.ratelimit"))
		return
	}
	if next != r.PostForm.Get("confirm") {
		fail(http.StatusUnprocessableEntity, msg("err.confirm"))
		return
	}
	err := h.setPassword(r.Context(), s.Email, next, func(u *user) error {
		if len(current) > maxPassword || !checkPassword(u.PasswordHash, current) {
			return errWrongPassword
		}
		return nil
	}, s)
	switch {
	case err == errWrongPassword:
		// Wrong guesses count as failed sign-ins: a borrowed session
		// must not be a way to try passwords.
		h.limits.failed(ip, s.Email)
		fail(http.StatusUnprocessableEntity, msg("err.current"))
	case kassa.ErrorCode(err) == kassa.Invalid:
		fail(http.StatusUnprocessableEntity, kassa.ErrorMessage(err))
	case err != nil:
		h.serverError(w, r, err)
	default:
		http.Redirect(w, r, Prefix+"/account?done=password", http.StatusSeeOther)
	}
}
