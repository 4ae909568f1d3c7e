package actors

import (
	"context"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// TestStoreUpdatesOfDifferentFieldsBothKept: two callers read the store,
// then each changes one setting from what it read. The second update
// carries the first's setting as it was before the first was applied,
// yet both settings survive: each names what it sets, and the actor
// applies only that to its current state.
func TestStoreUpdatesOfDifferentFieldsBothKept(t *testing.T) {
	ctx := context.Background()
	db := openMem(t)
	h := newHarness(t, db, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	st := h.createStore("1", "0")
	read, err := db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}

	owner := read.Settings()
	owner.RefundAutoApproveMax = 5000
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, owner, kassa.StoreRefundAutoApproveMax); err != nil {
		t.Fatal(err)
	}
	manager := read.Settings() // refundAutoApproveMax still 0 here
	manager.BrandColor = "#112233"
	manager.Name = "Stale name not named" // a value for a field left out
	got, err := h.sys.Service.UpdateStore(ctx, st.ID, manager, kassa.StoreBrandColor)
	if err != nil {
		t.Fatal(err)
	}
	if got.RefundAutoApproveMax != 5000 || got.BrandColor != "#112233" || got.Name != read.Name {
		t.Errorf("after both updates: refundAutoApproveMax %d, brandColor %q, name %q; want 5000, #112233, %q",
			got.RefundAutoApproveMax, got.BrandColor, got.Name, read.Name)
	}
	stored, err := db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !stored.Equal(got) {
		t.Errorf("stored %+v, answered %+v", stored, got)
	}

	// A field named with a bad value is refused as before, and nothing
	// changes; a name that is no setting is refused.
	bad := read.Settings()
	bad.BrandColor, bad.Name = "red", ""
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, bad, kassa.StoreBrandColor); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("bad colour named: %v", err)
	}
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, bad, kassa.StoreName, "percentFee"); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("unknown field named: %v", err)
	}
	// No field named: a full update, as a node that predates the field
	// names sends; every value is the caller's.
	full := read.Settings()
	full.Name = "Full"
	if got, err = h.sys.Service.UpdateStore(ctx, st.ID, full); err != nil {
		t.Fatal(err)
	}
	if got.Name != "Full" || got.RefundAutoApproveMax != 0 || got.BrandColor != read.BrandColor {
		t.Errorf("full update: %+v", got)
	}
}

// TestStoreUpdateStaleChecksStartAgain: a turn that finds the store's
// Lightning address changed since the checks of the update were made
// stores nothing and hands back the store it holds, so that UpdateStore
// checks again against it.
func TestStoreUpdateStaleChecksStartAgain(t *testing.T) {
	ctx := context.Background()
	db := openMem(t)
	h := newHarness(t, db, kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	st := h.createStore("1", "0")
	read, err := db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	addr := read.Settings()
	addr.LightningAddress = "shop@example.com"
	if _, err := h.sys.Service.UpdateStore(ctx, st.ID, addr, kassa.StoreLightningAddress); err != nil {
		t.Fatal(err)
	}
	u := read.Settings()
	u.Name = "Renamed"
	got, stale, err := h.sys.Service.updateStore(ctx, read, u, []kassa.StoreField{kassa.StoreName})
	if err != nil || got != nil || stale == nil || stale.LightningAddress != "shop@example.com" {
		t.Fatalf("turn on a stale read = %v, %v, %v; want the current store back", got, stale, err)
	}
	if now, _ := db.Store(ctx, st.ID); now.Name != read.Name {
		t.Errorf("a stale turn stored name %q", now.Name)
	}
	if got, err = h.sys.Service.UpdateStore(ctx, st.ID, u, kassa.StoreName); err != nil || got.Name != "Renamed" || got.LightningAddress != "shop@example.com" {
		t.Errorf("update = %+v, %v", got, err)
	}
}

// TestClusterStoreUpdateNamesCrossNodes: a partial update sent through
// a node that does not run the store reaches the store's node with the
// settings it names (cmdUpdateStore), so that two updates from a stale
// read through different nodes both survive.
func TestClusterStoreUpdateNamesCrossNodes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openMem(t)
	nodes := clusterNodes(t, 3, db, kassatest.NewTestClock(time.Now()), 15*time.Minute)
	st, err := nodes[0].sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	owner := nodes[0].sys.Cluster.ownerOf(st.ID)
	var others []*harness
	for _, n := range nodes {
		if n.sys.Runtime.actorSystem().Address() != owner {
			others = append(others, n)
		}
	}
	if len(others) != 2 {
		t.Fatalf("%d nodes do not run the store, want 2", len(others))
	}
	a := st.Settings()
	a.RefundAutoApproveMax = 5000
	if _, err := others[0].sys.Service.UpdateStore(ctx, st.ID, a, kassa.StoreRefundAutoApproveMax); err != nil {
		t.Fatal(err)
	}
	b := st.Settings()
	b.BrandColor = "#112233"
	got, err := others[1].sys.Service.UpdateStore(ctx, st.ID, b, kassa.StoreBrandColor)
	if err != nil {
		t.Fatal(err)
	}
	if got.RefundAutoApproveMax != 5000 || got.BrandColor != "#112233" {
		t.Errorf("after both updates through other nodes: refundAutoApproveMax %d, brandColor %q", got.RefundAutoApproveMax, got.BrandColor)
	}
	if _, err := others[0].sys.Service.UpdateStore(ctx, st.ID, b, "percentFee"); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("an unknown name through another node: %v, want Invalid", err)
	}
}

// TestStoreUpdateWalletBoundsFollowTheAddressStored: the wallet send
// limits a store update writes are those read for the Lightning address
// the turn stores. An update checked against a read the address then
// left and came back to (its wallet's limits changed meanwhile) keeps
// the limits read on the way back, not those of its own read; an
// address cleared leaves the limits of a store without one.
func TestStoreUpdateWalletBoundsFollowTheAddressStored(t *testing.T) {
	ctx := context.Background()
	shop, other := newMerchant(t), newMerchant(t)
	h := newForwardHarness(t, openMem(t), kassatest.NewTestClock(time.Unix(1_700_000_000, 0)), shop, lnsim.NewPayer(shop.node))
	st := h.createStore()
	read, err := h.db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if read.WalletMinSendable != 1000 {
		t.Fatalf("wallet limits at creation %d to %d", read.WalletMinSendable, read.WalletMaxSendable)
	}
	shop.mu.Lock()
	shop.minSendable, shop.maxSendable = 5000, 2_000_000_000
	shop.mu.Unlock()
	// Meanwhile the address goes to another wallet and comes back: the
	// limits are read again on the way back.
	for _, addr := range []string{other.address(), shop.address()} {
		u := read.Settings()
		u.LightningAddress = addr
		if _, err := h.sys.Service.UpdateStore(ctx, st.ID, u, kassa.StoreLightningAddress); err != nil {
			t.Fatal(err)
		}
	}
	u := read.Settings()
	u.Name = "Renamed"
	got, stale, err := h.sys.Service.updateStore(ctx, read, u, []kassa.StoreField{kassa.StoreName})
	if err != nil || stale != nil || got.Name != "Renamed" {
		t.Fatalf("rename checked against the earlier read: %+v, stale %v, %v", got, stale != nil, err)
	}
	stored, err := h.db.Store(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.LightningAddress != shop.address() || stored.WalletMinSendable != 5000 || stored.WalletMaxSendable != 2_000_000_000 {
		t.Fatalf("stored %s with limits %d to %d msat; want those read last for it, 5000 to 2000000000",
			stored.LightningAddress, stored.WalletMinSendable, stored.WalletMaxSendable)
	}
	clear := stored.Settings()
	clear.LightningAddress = ""
	if got, err = h.sys.Service.UpdateStore(ctx, st.ID, clear, kassa.StoreLightningAddress); err != nil {
		t.Fatal(err)
	}
	if got.WalletMinSendable != kassa.DefaultWalletMinSendable || got.WalletMaxSendable != kassa.DefaultWalletMaxSendable {
		t.Fatalf("address cleared with limits %d to %d msat; want the defaults", got.WalletMinSendable, got.WalletMaxSendable)
	}
}
