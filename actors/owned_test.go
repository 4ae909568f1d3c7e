package actors

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestOwnerCacheOnPostgres runs the owner's reads that PostgreSQL
// serves from its owned cache (store, key, balance) through the writes
// that change them: a deleted API key stops resolving to a store that
// holds it at once, and the credit limit is reached exactly through a
// settle's fee and freed by a top-up.
func TestOwnerCacheOnPostgres(t *testing.T) {
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	pgA, _ := openPG(t, clock)
	h := newHarnessWith(t, openMem(t), clock, func(c *Config) { c.Journal, c.Reader = pgA, pgA })
	ctx := context.Background()
	st := h.createStore("50", "0")

	key, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "second")
	if err != nil {
		t.Fatal(err)
	}
	holds := func(s *kassa.Store) bool {
		for _, k := range s.APIKeys {
			if k.Key == key.Key {
				return true
			}
		}
		return false
	}
	for range 2 {
		if got, err := pgA.StoreByAPIKey(ctx, key.Key); err != nil || !holds(got) {
			t.Fatalf("StoreByAPIKey of a new key = %v, %v", got, err)
		}
	}
	if err := h.sys.Service.DeleteAPIKey(ctx, st.ID, key.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := pgA.StoreByAPIKey(ctx, key.Key); err == nil && holds(got) {
		t.Fatal("a deleted key still resolves to a store that holds it")
	}

	create := func(sat int64) error {
		_, err := h.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.NewFromInt(sat), HasAmount: true, Currency: kassa.SATS})
		return err
	}
	// 50% of 200 002 sat passes the 100 000 sat credit limit.
	if err := create(200_002); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("an invoice whose fee passes the credit limit: %v", err)
	}
	// 50% of 200 000 sat is the whole credit; paid, it is on the balance.
	inv := h.invoice("200000", kassa.SATS)
	h.payLightning(inv, 200_000)
	if bal, err := pgA.Balance(ctx, st.ID); err != nil || bal != -100_000 {
		t.Fatalf("Balance after the fee = %d, %v; want -100000", bal, err)
	}
	if err := create(1); kassa.ErrorCode(err) != kassa.PaymentRequired {
		t.Fatalf("an invoice past the exact credit limit: %v", err)
	}
	if _, err := h.sys.Service.TopUp(ctx, st.ID, 100_000, ""); err != nil {
		t.Fatal(err)
	}
	if bal, err := pgA.Balance(ctx, st.ID); err != nil || bal != 0 {
		t.Fatalf("Balance after the top-up = %d, %v; want 0", bal, err)
	}
	if err := create(1); err != nil {
		t.Fatalf("after the top-up: %v", err)
	}
}
