package sim_test

import (
	"testing"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/simharness"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// TestContract runs the Lightning contract on the simulated node, with
// its state in memory (package persistence runs it over Pebble).
func TestContract(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		kassatest.RunLightning(t, func(t *testing.T) kassatest.LightningHarness {
			n, err := lnsim.New(nil)
			if err != nil {
				t.Fatal(err)
			}
			return simharness.Lightning(n)
		})
	})
}
