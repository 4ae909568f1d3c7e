package http

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/kassapay/kassa"
)

// KeyService makes a store's API keys (in cmd/kassa, the actor system).
type KeyService interface {
	CreateAPIKey(ctx context.Context, storeID, label string, perms ...kassa.Permission) (*kassa.APIKey, error)
}

// apiKeyBody is a request to make a key.
type apiKeyBody struct {
	Label       string   `json:"label"`
	Permissions []string `json:"permissions"`
}

// apiKeyRecord is a key as made: the only answer that carries it, with
// Cache-Control: no-store.
type apiKeyRecord struct {
	ID          string    `json:"id"`
	Label       string    `json:"label"`
	APIKey      string    `json:"apiKey"`
	Permissions []string  `json:"permissions"`
	CreatedAt   time.Time `json:"createdAt"`
}

// defaultKeyLabel labels a key made without a label.
const defaultKeyLabel = "API key"

// createAPIKey answers POST /api/v1/stores/{storeId}/api-keys: a key of
// the store holding exactly the permissions asked (as "name" or
// "name:storeId" of this store). The route needs
// kassa.store.canmanageapikeys (routePermissions), and the caller must
// hold each permission it grants, so that no key makes one that can do
// more than itself.
func (s *server) createAPIKey(w http.ResponseWriter, r *http.Request) {
	storeID := callerFrom(r.Context()).store.ID
	s.makeAPIKey(w, r, storeID, func(p kassa.Permission) bool { return kassa.PrincipalFrom(r.Context()).Can(storeID, p) })
}

// adminCreateAPIKey answers POST /admin/v1/stores/{storeId}/api-keys:
// the operator makes a key of any store holding any permissions (a key
// for refunds, say, which the default set leaves out).
func (s *server) adminCreateAPIKey(w http.ResponseWriter, r *http.Request) {
	storeID, err := pathID(r, "storeId", "store")
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	s.makeAPIKey(w, r, storeID, func(kassa.Permission) bool { return true })
}

// makeAPIKey makes a key of storeID from the request's body: the
// permissions asked (as "name" or "name:storeId" of this store), each of
// which may grant; none, or an unknown one, is Invalid and nothing is
// made.
func (s *server) makeAPIKey(w http.ResponseWriter, r *http.Request, storeID string, may func(kassa.Permission) bool) {
	if s.Keys == nil {
		s.notFound(w, r)
		return
	}
	var body apiKeyBody
	if err := decodeJSON(w, r, &body); err != nil {
		s.writeError(w, r, err)
		return
	}
	invalid := func(msg string) {
		s.writeError(w, r, kassa.InvalidFields([]kassa.FieldError{{Field: "permissions", Message: msg}}))
	}
	if len(body.Permissions) == 0 {
		invalid("at least one permission is needed")
		return
	}
	names := make([]string, 0, len(body.Permissions))
	for _, p := range body.Permissions {
		g, err := kassa.ParseGrant(p)
		if err != nil {
			invalid(kassa.ErrorMessage(err))
			return
		}
		if g.StoreID != "" && g.StoreID != storeID {
			s.writeError(w, r, errOtherStore)
			return
		}
		if !may(g.Permission) {
			s.writeError(w, r, kassa.Errorf(kassa.Forbidden, "this API key lacks the permission %s, so it cannot grant it", g.Permission))
			return
		}
		names = append(names, string(g.Permission))
	}
	perms, err := kassa.ParsePermissions(names)
	if err != nil {
		invalid(kassa.ErrorMessage(err))
		return
	}
	label := defaultKeyLabel
	if strings.TrimSpace(body.Label) != "" {
		label = body.Label
	}
	key, err := s.Keys.CreateAPIKey(r.Context(), storeID, label, perms...)
	if err != nil {
		s.writeError(w, r, err)
		return
	}
	out := make([]string, len(key.Permissions))
	for i, p := range key.Permissions {
		out[i] = string(p)
	}
	writeJSON(w, http.StatusOK, apiKeyRecord{ID: key.ID, Label: key.Label, APIKey: key.Key, Permissions: out, CreatedAt: key.CreatedAt})
}
