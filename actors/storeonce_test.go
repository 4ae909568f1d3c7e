package actors

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// storeEvents counts the store's events in the journal (a store
// made once has one, its creation, until something else changes it).
func storeEvents(t *testing.T, j kassa.Journal, storeID string) int {
	t.Helper()
	n := 0
	err := j.Events(context.Background(), kassa.Stream{Kind: kassa.KindStore, ID: storeID}, 0, func(uint64, []byte) error {
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestCreateStoreOnceAfterAnotherActivationCreated: two activations of
// the store with one fixed id (two nodes during a topology change) both
// create it. The second one's commit is refused, as the journal refuses a
// sequence number already taken; it reloads and answers the store the
// first one made, not "try again" and not a second store.
func TestCreateStoreOnceAfterAnotherActivationCreated(t *testing.T) {
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	journal := &faultyJournal{Journal: db}
	stale := newHarnessWith(t, db, clock, func(c *Config) { c.Journal = journal })
	// The stale node's actor of the store is active, with no store yet:
	// its first create failed (a disk error).
	settings := kassa.StoreSettings{Name: "Kassa operator", Currency: kassa.SATS}
	journal.commitErr = func() error { return errors.New("injected: disk error") }
	if _, err := stale.sys.Service.CreateStoreOnce(ctx, "kassa-operator", settings); err == nil {
		t.Fatal("the create with a failing disk succeeded")
	}
	owner := newHarness(t, db, clock)
	first, err := owner.sys.Service.CreateStoreOnce(ctx, "kassa-operator", settings)
	if err != nil {
		t.Fatal(err)
	}
	refused := refuseNextCommit(journal)
	got, err := stale.sys.Service.CreateStoreOnce(ctx, "kassa-operator", settings)
	if err != nil || got.APIKeys[0].Key != first.APIKeys[0].Key {
		t.Fatalf("stale activation = %+v, %v; want the store the owner made", got, err)
	}
	if !refused.Load() {
		t.Fatal("the stale activation never tried to commit")
	}
	if n := storeEvents(t, db, "kassa-operator"); n != 1 {
		t.Errorf("%d store events, want 1 (its creation)", n)
	}
}

// TestClusterCreateStoreOnce: every node of a cluster makes the store
// with one fixed id at once (the dashboard's first top-up on each): one
// store, the same one for every caller.
func TestClusterCreateStoreOnce(t *testing.T) {
	t.Parallel()
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Now())
	nodes := clusterNodes(t, 2, db, clock, 15*time.Minute)
	ctx := context.Background()
	keys, errs := atOnce(8, func(i int) (string, error) {
		st, err := nodes[i%2].sys.Service.CreateStoreOnce(ctx, "kassa-operator", kassa.StoreSettings{Name: "Kassa operator", Currency: kassa.SATS})
		if err != nil {
			return "", err
		}
		return st.APIKeys[0].Key, nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i%2, err)
		}
		if keys[i] != keys[0] {
			t.Errorf("caller %d got another store than caller 0", i)
		}
	}
	if n := storeEvents(t, db, "kassa-operator"); n != 1 {
		t.Errorf("%d store events, want 1 (its creation)", n)
	}
}
