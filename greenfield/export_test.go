package greenfield

import (
	"maps"
	"strings"

	"github.com/kassapay/kassa"
)

// RoutePermissions is the route table, keyed "METHOD /api/v1/pattern".
func RoutePermissions() map[string]kassa.Permission {
	out := map[string]kassa.Permission{}
	for k, v := range maps.All(routePermissions) {
		method, pattern, _ := strings.Cut(k, " ")
		out[method+" /api/v1"+pattern] = v
	}
	return out
}
