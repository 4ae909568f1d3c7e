package http

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest/apitest"
)

// TestDocumentedErrorStatuses produces, for every operation of the OpenAPI
// document, each error status it documents that has a recipe here: no
// key (401), another store's key or one lacking the permission (403), an id of the wrong shape (404),
// an oversized (413) or non-JSON (415) body, the rate limit (429), a
// failing key look-up (500, 503). Each must come out as documented, and
// the wrapped handler checks the body against the document. Together
// with the other suites this leaves no documented status unexercised
// that the server can produce (TestOpenAPICoverage lists the rest).
func TestDocumentedErrorStatuses(t *testing.T) {
	t.Parallel()
	doc, err := apitest.Load()
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t)
	seedWebhooks(e)
	payLink, _, _ := seedPayLinks(e)
	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	ids := strings.NewReplacer("{storeId}", "store_a", "{invoiceId}", inv.ID, "{webhookId}", "wh_a1",
		"{deliveryId}", "dl_a1_1", "{payloadId}", "dl_a1_1")

	// A second handler whose key look-up fails, and a third whose key is
	// over its rate limit.
	failing := newEnv(t)
	limited := newEnv(t, withDeps(func(d *Deps) { d.RateLimit, d.RateBurst = 1e-9, 1 }))
	expectStatus(t, limited.do("GET", "/api/v1/stores/store_a", ""), 200) // spends the only token

	createOnly := e.keyWith(kassa.PermCreateInvoice)
	keyManager := e.keyWith(kassa.PermManageAPIKeys)
	refunder := e.keyWith(kassa.PermCreateNonApprovedPullPayments)
	owner := e.keyWith(kassa.PermModifyStoreSettings)
	sim := newEnv(t, withSim) // the sim routes read their body only in simulation
	big := `{"pad": "` + strings.Repeat("a", MaxBodyBytes) + `"}`
	type recipe struct {
		e       *env
		path    string
		body    string
		headers []header
		setup   func()
	}
	for path, item := range doc.Paths.Map() {
		for method, op := range item.Operations() {
			isAdmin := strings.HasPrefix(path, "/admin/")
			public := op.Security != nil && len(*op.Security) == 0
			filled := ids.Replace(path)
			if strings.Contains(path, "/payment-requests/{id}") {
				filled = strings.Replace(filled, "{id}", payLink, 1)
			}
			filled = strings.Replace(filled, "{id}", inv.ID, 1)
			recipes := map[string]recipe{}
			if !public && !isAdmin {
				recipes["401"] = recipe{e: e, path: filled, headers: []header{{"X-Api-Key", ""}}}
				recipes["403"] = recipe{e: e, path: filled, headers: []header{asB}}
				if !strings.Contains(path, "{storeId}") {
					// No store in the path: a key lacking the route's permission.
					recipes["403"] = recipe{e: e, path: filled, headers: []header{{"X-Api-Key", createOnly}}}
				}
				recipes["429"] = recipe{e: limited, path: filled}
				recipes["500"] = recipe{e: failing, path: filled, setup: func() {
					failing.reader.storeByAPIKey = func(string) (*kassa.Store, error) { return nil, errors.New("disk on fire") }
				}}
				recipes["503"] = recipe{e: failing, path: filled, setup: func() {
					failing.reader.storeByAPIKey = func(string) (*kassa.Store, error) {
						return nil, kassa.Errorf(kassa.Unavailable, "storage is failing")
					}
				}}
				if strings.Contains(path, "{storeId}") {
					recipes["404"] = recipe{e: e, path: strings.Replace(path, "{storeId}", "no.such", 1)}
				}
			}
			if isAdmin {
				recipes["401"] = recipe{e: e, path: filled}
			}
			if op.RequestBody != nil || strings.HasSuffix(path, "/redeliver") {
				auth := []header{}
				if isAdmin {
					auth = append(auth, admin)
				}
				// The route's permission is checked before the body is read.
				switch {
				case strings.HasSuffix(path, "/api-keys"):
					auth = append(auth, header{"X-Api-Key", keyManager})
				case strings.HasSuffix(path, "/refund") || strings.Contains(path, "/pull-payments"):
					auth = append(auth, header{"X-Api-Key", refunder})
				case path == "/api/v1/stores/{storeId}":
					auth = append(auth, header{"X-Api-Key", owner})
				}
				target := e
				if strings.HasPrefix(path, "/admin/v1/sim/") {
					target = sim
				}
				recipes["413"] = recipe{e: target, path: filled, body: big, headers: auth}
				recipes["415"] = recipe{e: target, path: filled, body: `{}`, headers: append(auth, header{"Content-Type", "text/plain"})}
			}
			for status, r := range recipes {
				if op.Responses.Value(status) == nil {
					continue
				}
				if strings.HasSuffix(path, "/redeliver") && status == "415" {
					continue // takes no body: its type is not looked at
				}
				t.Run(method+" "+path+" "+status, func(t *testing.T) {
					if r.setup != nil {
						r.setup()
					}
					w := r.e.do(method, r.path, r.body, r.headers...)
					if got := w.Code; got != atoi(status) {
						t.Errorf("%s %s = %d, want %s: %s", method, r.path, got, status, w.Body.String())
					}
				})
			}
		}
	}
}

func atoi(s string) int {
	n := 0
	for _, c := range s {
		n = n*10 + int(c-'0')
	}
	return n
}

// TestDocumentedStatusesOfState produces the documented statuses that
// depend on an object's state rather than on the request: changing an
// archived pay link (409), paying a paid invoice in simulation (409), an
// Idempotency-Key of the wrong shape on a redelivery (400), and the admin
// list of stores.
func TestDocumentedStatusesOfState(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withSim)
	seedWebhooks(e)
	payLink, _, _ := seedPayLinks(e)
	path := "/api/v1/stores/store_a/payment-requests/" + payLink
	expectStatus(t, e.do("DELETE", path, ""), 200)
	expectError(t, e.do("DELETE", path, ""), 409, kassa.Conflict, "archived")
	expectError(t, e.do("PUT", path, `{"amount": 3, "title": "Again"}`), 409, kassa.Conflict, "archived")

	inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
	pay := `{"invoiceId": "` + inv.ID + `", "method": "lightning"}`
	expectStatus(t, e.do("POST", "/admin/v1/sim/pay", pay, admin), 200)
	expectError(t, e.do("POST", "/admin/v1/sim/pay", pay, admin), 409, kassa.Conflict)

	expectError(t, e.do("POST", "/api/v1/stores/store_a/webhooks/wh_a1/paylods/dl_a1_1/redeliver", "",
		header{"Idempotency-Key", "not a key"}), 400, kassa.Invalid, "Idempotency-Key")

	w := e.do("GET", "/admin/v1/stores", "", admin)
	expectStatus(t, w, 200)
	if stores := decode[[]adminStore](t, w); len(stores) != 2 {
		t.Errorf("admin list: %+v, want stores A and B", stores)
	}
}

// TestAdminFailureStatuses produces the admin API's documented 500 and
// 503: each service the admin routes call fails with an unexpected error
// (500, the cause only in the log) or a coded Unavailable (503).
func TestAdminFailureStatuses(t *testing.T) {
	t.Parallel()
	for status, fault := range map[int]error{
		500: errors.New("disk on fire"),
		503: kassa.Errorf(kassa.Unavailable, "storage is failing"),
	} {
		e := newEnv(t, withSim)
		inv := e.seedInvoice("store_a", testNow, `{"amount": 1}`)
		e.deps.Stores = failingStores{fault}
		e.deps.Simulator = failingSimulator{fault}
		e.deps.Reader = failingStoreList{Reader: e.reader, err: fault}
		e.rebuild()
		for _, c := range []struct{ method, path, body string }{
			{"GET", "/admin/v1/stores", ""},
			{"POST", "/admin/v1/stores", `{"name": "Carol"}`},
			{"POST", "/admin/v1/stores/store_a/topup", `{"amount": 1000}`},
			{"POST", "/admin/v1/sim/pay", `{"invoiceId": "` + inv.ID + `"}`},
			{"POST", "/admin/v1/sim/mine", `{"blocks": 1}`},
		} {
			if w := e.do(c.method, c.path, c.body, admin); w.Code != status {
				t.Errorf("%s %s with %v = %d, want %d: %s", c.method, c.path, fault, w.Code, status, w.Body.String())
			}
		}
	}
}

// The fakes below only fail, with err; they hold no rules.

type failingStores struct{ err error }

func (f failingStores) CreateStore(context.Context, kassa.StoreSettings) (*kassa.Store, error) {
	return nil, f.err
}

func (f failingStores) TopUp(context.Context, string, kassa.Sats, string) (*kassa.Transaction, error) {
	return nil, f.err
}

func (f failingStores) UpdateStore(context.Context, string, kassa.StoreUpdate, ...kassa.StoreField) (*kassa.Store, error) {
	return nil, f.err
}

type failingSimulator struct{ err error }

func (f failingSimulator) Pay(context.Context, *kassa.Invoice, kassa.PaymentMethod, kassa.Sats) (string, error) {
	return "", f.err
}

func (f failingSimulator) Mine(context.Context, int) (int64, error) { return 0, f.err }

// failingStoreList is the reader whose list of stores fails.
type failingStoreList struct {
	kassa.Reader
	err error
}

func (f failingStoreList) Stores(context.Context, func(*kassa.Store) error) error { return f.err }
