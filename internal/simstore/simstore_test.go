package simstore_test

import (
	"testing"

	"github.com/kassapay/kassa/internal/simstore"
	"github.com/kassapay/kassa/kassatest"
)

// TestMemContract runs the store contract on Mem, one Mem per space.
func TestMemContract(t *testing.T) {
	kassatest.RunSimStore(t, func(t *testing.T) func(string) simstore.Store {
		spaces := map[string]*simstore.Mem{}
		return func(name string) simstore.Store {
			if spaces[name] == nil {
				spaces[name] = simstore.NewMem()
			}
			return spaces[name]
		}
	})
}
