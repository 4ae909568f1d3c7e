package greenfield

import (
	"context"
	"net/http"
	"strings"

	"github.com/kassapay/kassa"
)

// KeyService makes a store's API keys (in cmd/kassa, the actor system).
type KeyService interface {
	CreateAPIKey(ctx context.Context, storeID, label string, perms ...kassa.Permission) (*kassa.APIKey, error)
}

// createKeyBody is ApiKeys_CreateApiKey's request (swagger.template.
// api-keys.json).
type createKeyBody struct {
	Label       *string  `json:"label"`
	Permissions []string `json:"permissions"`
}

// defaultKeyLabel labels a key made without a label.
const defaultKeyLabel = "Greenfield API key"

// createKey answers POST /api/v1/api-keys: a key of the caller's store
// holding exactly the permissions asked. BTCPay asks "unrestricted" of
// this route; Kassa asks kassa.store.canmanageapikeys (routePermissions)
// and that the caller holds each permission it grants, so that no key
// makes a key that can do more than itself. Permissions name the
// caller's store or none.
func (s *server) createKey(w http.ResponseWriter, r *http.Request) {
	var body createKeyBody
	if !s.readBody(w, r, &body) {
		return
	}
	storeID := callerFrom(r.Context()).store.ID
	if len(body.Permissions) == 0 {
		writeValidation(w, []validationError{{Path: "permissions", Message: "at least one permission is needed"}})
		return
	}
	names := make([]string, 0, len(body.Permissions))
	for _, p := range body.Permissions {
		g, err := kassa.ParseGrant(p)
		if err != nil {
			writeValidation(w, []validationError{{Path: "permissions", Message: kassa.ErrorMessage(err)}})
			return
		}
		if g.StoreID != "" && g.StoreID != storeID {
			permissionError(w, g.Permission)
			return
		}
		if !kassa.PrincipalFrom(r.Context()).Can(storeID, g.Permission) {
			permissionError(w, g.Permission)
			return
		}
		names = append(names, string(g.Permission))
	}
	perms, err := kassa.ParsePermissions(names)
	if err != nil {
		writeValidation(w, []validationError{{Path: "permissions", Message: kassa.ErrorMessage(err)}})
		return
	}
	label := defaultKeyLabel
	if body.Label != nil && strings.TrimSpace(*body.Label) != "" {
		label = *body.Label
	}
	key, err := s.Keys.CreateAPIKey(r.Context(), storeID, label, perms...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"apiKey":      key.Key,
		"label":       key.Label,
		"permissions": permissions(storeID, *key),
	})
}
