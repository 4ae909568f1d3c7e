package sim_test

import (
	"testing"

	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/kassatest/simharness"
)

// TestContract runs the Chain contract on the simulated chain, with its
// state in memory (package persistence runs it over Pebble).
func TestContract(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		kassatest.RunChain(t, func(t *testing.T) kassatest.ChainHarness { return simharness.Chain(chainsim.New(nil)) })
	})
}
