package http

import (
	"context"
	"net/http"
	"testing"

	"github.com/kassapay/kassa"
)

// TestStoreRefundAutoApproveMax: the store's answer shows
// refundAutoApproveMax, PUT /api/v1/stores/{storeId} sets it with
// canmodifystoresettings (a key without it is 403), a value the domain
// refuses (negative, above 21 million bitcoin) or of the wrong type is
// 400 on the field with nothing stored, and a body without it keeps it.
// Every exchange is checked against the OpenAPI document.
func TestStoreRefundAutoApproveMax(t *testing.T) {
	e := newEnv(t)
	owner := header{"X-Api-Key", e.keyWith(kassa.PermModifyStoreSettings)}
	type record struct {
		ID                   string      `json:"id"`
		Name                 string      `json:"name"`
		RefundAutoApproveMax *kassa.Sats `json:"refundAutoApproveMax"`
	}
	stored := func() kassa.Sats {
		t.Helper()
		st, err := e.db.Store(t.Context(), "store_a")
		if err != nil {
			t.Fatal(err)
		}
		return st.RefundAutoApproveMax
	}
	got := decode[record](t, e.do("GET", "/api/v1/stores/store_a", ""))
	if got.RefundAutoApproveMax == nil || *got.RefundAutoApproveMax != 0 {
		t.Fatalf("store %+v, want refundAutoApproveMax 0", got)
	}

	expectError(t, e.do("PUT", "/api/v1/stores/store_a", `{"refundAutoApproveMax": 5000}`), http.StatusForbidden, kassa.Forbidden, "canmodifystoresettings")
	w := e.do("PUT", "/api/v1/stores/store_a", `{"refundAutoApproveMax": 5000}`, owner)
	expectStatus(t, w, http.StatusOK)
	if got := decode[record](t, w); got.ID != "store_a" || got.RefundAutoApproveMax == nil || *got.RefundAutoApproveMax != 5000 {
		t.Fatalf("answer %+v, want refundAutoApproveMax 5000", got)
	}
	if got := stored(); got != 5000 {
		t.Fatalf("stored %d, want 5000", got)
	}
	if got := decode[record](t, e.do("GET", "/api/v1/stores/store_a", "")); got.RefundAutoApproveMax == nil || *got.RefundAutoApproveMax != 5000 {
		t.Fatalf("read back %+v", got)
	}

	for _, body := range []string{
		`{"refundAutoApproveMax": -1}`,
		`{"refundAutoApproveMax": 2100000000000001}`,
		`{"refundAutoApproveMax": 1e30}`,
		`{"refundAutoApproveMax": 1.5}`,
		`{"refundAutoApproveMax": "5000"}`,
	} {
		b := expectError(t, e.do("PUT", "/api/v1/stores/store_a", body, owner), http.StatusBadRequest, kassa.Invalid)
		if len(b.Errors) != 1 || b.Errors[0].Field != "refundAutoApproveMax" {
			t.Errorf("%s: errors %+v, want one on refundAutoApproveMax", body, b.Errors)
		}
		if got := stored(); got != 5000 {
			t.Fatalf("%s: stored %d, want 5000 kept", body, got)
		}
	}

	// Left out (or null), it keeps its value; zero turns it off.
	expectStatus(t, e.do("PUT", "/api/v1/stores/store_a", `{"refundAutoApproveMax": null}`, owner), http.StatusOK)
	if got := stored(); got != 5000 {
		t.Fatalf("after null: %d, want 5000 kept", got)
	}
	expectStatus(t, e.do("PUT", "/api/v1/stores/store_a", `{"refundAutoApproveMax": 0}`, owner), http.StatusOK)
	if got := stored(); got != 0 {
		t.Fatalf("after 0: %d, want 0", got)
	}
	if st, err := e.db.Store(t.Context(), "store_a"); err != nil || st.Name != e.storeA.Name || st.Currency != e.storeA.Currency {
		t.Fatalf("the other settings changed: %+v %v", st, err)
	}
}

// racingStores runs race once, before the first UpdateStore it passes
// on: a change that lands between the handler's read of the store and
// its update.
type racingStores struct {
	kassa.StoreService
	race func()
}

func (s *racingStores) UpdateStore(ctx context.Context, storeID string, u kassa.StoreUpdate, only ...kassa.StoreField) (*kassa.Store, error) {
	if race := s.race; race != nil {
		s.race = nil
		race()
	}
	return s.StoreService.UpdateStore(ctx, storeID, u, only...)
}

// TestStoreUpdateKeepsConcurrentChange: the dashboard saves the brand
// colour after PUT /api/v1/stores/{storeId} read the store and before
// it applies refundAutoApproveMax; both survive, the API's update
// setting only its own field.
func TestStoreUpdateKeepsConcurrentChange(t *testing.T) {
	var stores *racingStores
	e := newEnv(t, withDeps(func(d *Deps) { stores = &racingStores{StoreService: d.Stores}; d.Stores = stores }))
	stores.race = func() {
		u := e.storeA.Settings()
		u.BrandColor = "#112233"
		if _, err := e.sys.Service.UpdateStore(t.Context(), "store_a", u, kassa.StoreBrandColor); err != nil {
			t.Error(err)
		}
	}
	owner := header{"X-Api-Key", e.keyWith(kassa.PermModifyStoreSettings)}
	expectStatus(t, e.do("PUT", "/api/v1/stores/store_a", `{"refundAutoApproveMax": 5000}`, owner), http.StatusOK)
	st, err := e.db.Store(t.Context(), "store_a")
	if err != nil {
		t.Fatal(err)
	}
	if st.RefundAutoApproveMax != 5000 || st.BrandColor != "#112233" {
		t.Errorf("stored refundAutoApproveMax %d, brandColor %q; want 5000 and #112233", st.RefundAutoApproveMax, st.BrandColor)
	}
}
