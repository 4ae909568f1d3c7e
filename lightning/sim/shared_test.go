package sim

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/simstore"
)

// slowStore's Get answers late what it read, as a database across a
// network does: the window in which nodes opening together all find no
// key.
type slowStore struct {
	simstore.Store
	delay time.Duration
}

func (s slowStore) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := s.Store.Get(ctx, key)
	time.Sleep(s.delay)
	return v, ok, err
}

// TestNodesOpenedTogetherShareTheirKey: cluster nodes starting at once
// on an empty store each open the simulated node. They must all end
// with the one key stored: an invoice made on one node is paid through
// whichever node the customer's request reaches, and after a restart
// every node reads the stored key.
func TestNodesOpenedTogetherShareTheirKey(t *testing.T) {
	ctx := t.Context()
	store := slowStore{Store: simstore.NewMem(), delay: 20 * time.Millisecond}
	const count = 4
	nodes := make([]*Node, count)
	var wg sync.WaitGroup
	for i := range nodes {
		wg.Go(func() {
			n, err := Open(ctx, nil, store)
			if err != nil {
				t.Error(err)
				return
			}
			nodes[i] = n
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	restarted, err := Open(ctx, nil, store)
	if err != nil {
		t.Fatal(err)
	}
	for i, n := range nodes {
		if n.PubKey() != restarted.PubKey() {
			t.Errorf("node %d has key %s; the store holds %s", i, n.PubKey(), restarted.PubKey())
		}
	}
	inv, err := nodes[0].CreateInvoice(ctx, 50_000, "order 1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := nodes[count-1].Pay(ctx, inv.PaymentRequest, 0); err != nil {
		t.Errorf("an invoice made on one node, paid through another: %v", err)
	}
}
