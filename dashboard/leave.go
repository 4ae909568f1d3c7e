package dashboard

import (
	"errors"
	"maps"
	"net/http"

	"github.com/kassapay/kassa"
)

// leaveStore takes the signed-in account out of the store, as a manager
// removing it would (changeMember): its role goes, and with it the
// store from its list. The store's last owner cannot leave (409, and a
// page that says to make another member owner first); an operator who
// is not a member has nothing to leave.
func (h *Dashboard) leaveStore(w http.ResponseWriter, r *http.Request) {
	st, s := currentStore(r.Context()), current(r.Context())
	err := h.changeMember(r.Context(), st.ID, s.Email, "", kassa.ActionMemberLeft)
	switch {
	case errors.Is(err, errLastOwner):
		h.fail(w, r, http.StatusConflict, "err.leave.lastowner")
	case kassa.ErrorCode(err) == kassa.NotFound:
		h.fail(w, r, http.StatusConflict, "err.leave.notmember")
	case err != nil:
		h.serverError(w, r, err)
	default:
		http.Redirect(w, r, Prefix+"/stores?done=left", http.StatusSeeOther)
	}
}

func init() { maps.Copy(strs, leaveStrs) }

// leaveStrs are the strings of leaving a store.
var leaveStrs = map[string]string{
	"stores.leave":        "Leave",
	"stores.leavestore":   "Leave this store",
	"stores.leaveconfirm": "Leave this store? You will no longer see it until a member invites you again.",
	"err.leave.lastowner": "You are this store's last owner, so you cannot leave it: make another member owner first (Members page), then leave.",
	"err.leave.notmember": "You are not a member of this store, so there is nothing to leave.",
	"done.left":           "You left the store.",
}
