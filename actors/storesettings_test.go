package actors

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestStoreSettingsAndKeys changes a store's settings and keys through
// the store actor and reads the result back from storage, after a
// restart too.
func TestStoreSettingsAndKeys(t *testing.T) {
	ctx := context.Background()
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, db, clock)
	st := h.createStore("1", "0")

	u := kassa.StoreUpdate{Name: "Renamed", Currency: kassa.USD, LightningAddress: "shop@example.com", ConfirmationsRequired: 3,
		OnchainMinAmount: 5000, LogoURL: "data:image/png;base64,iVBORw0KGgo=", BrandColor: "#112233", DefaultRedirectURL: "https://shop.example/thanks"}
	got, err := h.sys.Service.UpdateStore(ctx, st.ID, u)
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "Renamed" || got.Currency != kassa.USD || got.BrandColor != "#112233" || !got.PercentFee.Equal(st.PercentFee) {
		t.Errorf("updated store = %+v", got)
	}
	bad := u
	bad.BrandColor, bad.Name = "red", ""
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, bad); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("bad update: %v", err)
	}

	key, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "shop plugin")
	if err != nil {
		t.Fatal(err)
	}
	if byKey, err := db.StoreByAPIKey(ctx, key.Key); err != nil || byKey.ID != st.ID {
		t.Fatalf("new key's store = %v, %v", byKey, err)
	}
	if _, err := h.sys.Service.CreateAPIKey(ctx, st.ID, ""); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("empty label: %v", err)
	}
	if err := h.sys.Service.DeleteAPIKey(ctx, st.ID, st.APIKeys[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := h.sys.Service.DeleteAPIKey(ctx, st.ID, st.APIKeys[0].ID); kassa.ErrorCode(err) != kassa.NotFound {
		t.Errorf("deleting a deleted key: %v", err)
	}
	if err := h.sys.Service.DeleteAPIKey(ctx, "nostore", "key_x"); kassa.ErrorCode(err) != kassa.NotFound {
		t.Errorf("key of a missing store: %v", err)
	}

	h.sys.Runtime.Shutdown()
	h2 := newHarness(t, db, clock)
	after, err := db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.APIKeys) != 1 || after.APIKeys[0].ID != key.ID || after.Name != "Renamed" || after.DefaultRedirectURL != u.DefaultRedirectURL {
		t.Errorf("after restart: %+v", after)
	}
	// An invoice without a redirect takes the store's default.
	inv, err := h2.sys.Service.CreateInvoice(ctx, st.ID, &kassa.InvoiceRequest{Amount: decimal.RequireFromString("10"), HasAmount: true, Currency: kassa.USD})
	if err != nil {
		t.Fatal(err)
	}
	if inv.RedirectURL != u.DefaultRedirectURL {
		t.Errorf("invoice redirect = %q", inv.RedirectURL)
	}
}

// TestAPIKeyWithPermissions: a key made with permissions holds exactly
// those (stored, and after a restart); unknown ones are refused and
// nothing is stored; a key made without holds the defaults.
func TestAPIKeyWithPermissions(t *testing.T) {
	ctx := context.Background()
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h := newHarness(t, db, clock)
	st := h.createStore("1", "0")

	key, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "plugin", kassa.PermCreateInvoice, kassa.PermViewInvoices)
	if err != nil {
		t.Fatal(err)
	}
	want := kassa.Permissions{kassa.PermCreateInvoice, kassa.PermViewInvoices}
	if !slices.Equal(key.Permissions, want) {
		t.Errorf("new key holds %v, want %v", key.Permissions, want)
	}
	if _, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "bad", kassa.PermCreateInvoice, "btcpay.store.canfly"); kassa.ErrorCode(err) != kassa.Invalid || !strings.Contains(kassa.ErrorMessage(err), "canfly") {
		t.Errorf("unknown permission: %v", err)
	}
	plain, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "plain")
	if err != nil {
		t.Fatal(err)
	}
	h.sys.Runtime.Shutdown()
	newHarness(t, db, clock)
	after, err := db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.APIKeys) != 3 {
		t.Fatalf("keys after restart: %+v (the refused one stored?)", after.APIKeys)
	}
	if !slices.Equal(after.APIKeys[1].Granted(), want) || after.APIKeys[2].ID != plain.ID || !slices.Equal(after.APIKeys[2].Granted(), kassa.DefaultKeyPermissions) {
		t.Errorf("after restart: %+v", after.APIKeys)
	}
}
