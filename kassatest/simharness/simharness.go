// Package simharness adapts the simulated chain and Lightning node to the
// contract suites of package kassatest, for the tests that run those
// suites over memory (chain/sim, lightning/sim) and over Pebble
// (persistence).
package simharness

import (
	"context"
	"errors"

	"github.com/kassapay/kassa"
	chainsim "github.com/kassapay/kassa/chain/sim"
	"github.com/kassapay/kassa/kassatest"
	lnsim "github.com/kassapay/kassa/lightning/sim"
)

// Chain is the Chain contract's harness of c. A payment or block that
// the handler refused to record (chainsim.ErrNotRecorded) was still
// made, so it is no error here.
func Chain(c *chainsim.Chain) kassatest.ChainHarness {
	return kassatest.ChainHarness{
		Chain: c,
		Pay: func(ctx context.Context, address string, amount kassa.Sats) (string, error) {
			txid, err := c.Pay(ctx, address, amount)
			if errors.Is(err, chainsim.ErrNotRecorded) {
				return txid, nil
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

// Lightning is the Lightning contract's harness of n. A payment whose
// settlement the handler refused to record (lnsim.ErrNotRecorded) was
// still paid, so it is no error here.
func Lightning(n *lnsim.Node) kassatest.LightningHarness {
	return kassatest.LightningHarness{
		Lightning: n,
		Pay: func(ctx context.Context, request string, amount kassa.MSat) error {
			_, err := n.Pay(ctx, request, amount)
			if errors.Is(err, lnsim.ErrNotRecorded) {
				return nil
			}
			return err
		},
	}
}
