package rpc

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestStandbyNodeForgetsOldAddresses: a cluster's node that does not
// watch still hands out addresses; the ones past their monitoring
// window are forgotten as it does, so its matcher does not grow for
// good.
func TestStandbyNodeForgetsOldAddresses(t *testing.T) {
	clock := kassatest.NewTestClock(kassatest.Epoch)
	addr, _ := testAddress(t, 9)
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams}, Node: newScriptedNode(), Cluster: true,
		Clock: clock, Expiry: time.Minute, Monitoring: time.Minute, Logger: slog.New(slog.DiscardHandler),
		Wallet: WalletFunc(func(context.Context, string) (string, error) { return addr, nil })})
	if err != nil {
		t.Fatal(err)
	}
	_, old := testAddress(t, 8)
	c.matcher.add(old, &watch{address: "old", index: -1, until: kassatest.Epoch.Add(time.Minute)})
	store := &kassa.Store{ID: "s1", ConfirmationsRequired: 1}
	if _, err := c.NewAddress(t.Context(), store, "i1"); err != nil || c.matcher.Len() != 2 {
		t.Fatalf("NewAddress: %v, %d watched; want 2", err, c.matcher.Len())
	}
	clock.Advance(2 * time.Minute)
	if _, err := c.NewAddress(t.Context(), store, "i2"); err != nil {
		t.Fatal(err)
	}
	if n := c.matcher.Len(); n != 1 {
		t.Fatalf("%d addresses watched, want 1: the one past its window forgotten", n)
	}
}
