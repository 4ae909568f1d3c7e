package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
	"github.com/kassapay/kassa/persistence"
)

// TestContract runs the Lightning contract on the simulated node, with
// its state in memory and in Pebble.
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
	t.Run("pebble", func(t *testing.T) {
		kassatest.RunLightning(t, func(t *testing.T) kassatest.LightningHarness {
			db, err := persistence.Open("", persistence.Options{InMemory: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			n, err := lnsim.Open(t.Context(), nil, db.State("lnsim"))
			if err != nil {
				t.Fatal(err)
			}
			return harness(n)
		})
	})
}
