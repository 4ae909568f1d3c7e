package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// TestContract runs the Lightning contract on the simulated node, with
// its state in memory (package persistence runs it over Pebble).
func TestContract(t *testing.T) {
	harness := func(n *lnsim.Node) kassatest.LightningHarness {
		return kassatest.LightningHarness{
			Lightning: n,
			Pay: func(ctx context.Context, request string, amount kassa.MSat) error {
				_, err := n.Pay(ctx, request, amount)
				if errors.Is(err, lnsim.ErrNotRecorded) {
					return nil // paid; the handler refused the settlement
				}
				return err
			},
		}
	}
	t.Run("mem", func(t *testing.T) {
		kassatest.RunLightning(t, func(t *testing.T) kassatest.LightningHarness {
			n, err := lnsim.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			return harness(n)
		})
	})
}
