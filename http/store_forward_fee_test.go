package http

import (
	"testing"

	"github.com/kassapay/kassa"
)

// TestAdminCreateStoreForwardFee checks that a store is created with its
// own forward fee limit, that a store without one takes the default (1%,
// at most 5,000 sat), and that out-of-range ones are refused.
func TestAdminCreateStoreForwardFee(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.do("POST", "/admin/v1/stores", `{"name": "Fees", "forwardFeePercent": "0.5", "forwardFeeMax": 100}`, admin)
	expectStatus(t, w, 200)
	st, err := e.reader.Store(t.Context(), decode[createdStore](t, w).StoreID)
	if err != nil {
		t.Fatal(err)
	}
	// 0.5% of 10,000 sat is 50 sat; of 1,000,000 sat, 5,000 capped at 100.
	if got := st.ForwardFeeLimit(10_000_000); got != 50_000 {
		t.Fatalf("fee limit of 10,000 sat: %d msat, want 50000", got)
	}
	if got := st.ForwardFeeLimit(1_000_000_000); got != 100_000 {
		t.Fatalf("fee limit of 1,000,000 sat: %d msat, want the 100 sat cap", got)
	}
	w = e.do("POST", "/admin/v1/stores", `{"name": "Defaults"}`, admin)
	expectStatus(t, w, 200)
	def, err := e.reader.Store(t.Context(), decode[createdStore](t, w).StoreID)
	if err != nil {
		t.Fatal(err)
	}
	if got := def.ForwardFeeLimit(100_000_000); got != 1_000_000 {
		t.Fatalf("default fee limit of 100,000 sat: %d msat, want 1%%", got)
	}
	if got := def.ForwardFeeLimit(10 * kassa.SatsPerBTC * 1000); got != kassa.DefaultForwardFeeCap {
		t.Fatalf("default fee limit of 10 BTC: %d msat, want the 5,000 sat cap", got)
	}
	body := expectError(t, e.do("POST", "/admin/v1/stores", `{"name": "Bad", "forwardFeePercent": 101, "forwardFeeMax": -1}`, admin), 400, "invalid")
	if len(body.Errors) != 2 || body.Errors[0].Field != "forwardFeePercent" || body.Errors[1].Field != "forwardFeeMax" {
		t.Fatalf("errors = %+v", body.Errors)
	}
}
