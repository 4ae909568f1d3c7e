package sim_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
)

// TestContract runs the Chain contract on the simulated chain, with its
// state in memory (package persistence runs it over Pebble).
func TestContract(t *testing.T) {
	harness := func(c *chainsim.Chain) kassatest.ChainHarness {
		return kassatest.ChainHarness{
			Chain: c,
			Pay: func(ctx context.Context, address string, amount kassa.Sats) (string, error) {
				txid, err := c.Pay(ctx, address, amount)
				if errors.Is(err, chainsim.ErrNotRecorded) {
					return txid, nil // paid; the handler refused it
				}
				return txid, err
			},
			Mine: func(ctx context.Context, n int) error {
				_, err := c.Mine(ctx, n)
				if errors.Is(err, chainsim.ErrNotRecorded) {
					return nil
				}
				return err
			},
		}
	}
	t.Run("mem", func(t *testing.T) {
		kassatest.RunChain(t, func(t *testing.T) kassatest.ChainHarness { return harness(chainsim.New(nil)) })
	})
}
