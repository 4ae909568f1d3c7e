package http

import (
	"net/http"
	"testing"
)

// TestAuthorizeForwardedToDashboard: BTCPay's plugins send the merchant
// to <their base URL>/api-keys/authorize, the server's root or the
// Greenfield base; both lead to the dashboard's page with the query.
func TestAuthorizeForwardedToDashboard(t *testing.T) {
	e := newEnv(t, withDeps(func(d *Deps) {
		d.Dashboard = http.NotFoundHandler()
		d.Greenfield = http.NotFoundHandler()
	}))
	const q = "?applicationName=Shop&permissions=btcpay.store.canviewinvoices&redirect=https%3A%2F%2Fshop.example%2Fcb"
	for _, path := range []string{"/api-keys/authorize", GreenfieldPath + "/api-keys/authorize"} {
		w := e.do("GET", path+q, "", noKey)
		if w.Code != http.StatusSeeOther || w.Header().Get("Location") != "/dashboard/api-keys/authorize"+q {
			t.Errorf("%s: %d to %q", path, w.Code, w.Header().Get("Location"))
		}
	}
}
