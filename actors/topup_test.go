package actors

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// toppedUpEvents returns the references of the store's BalanceToppedUp
// journal events.
func toppedUpEvents(t *testing.T, j kassa.Journal, storeID string) []string {
	t.Helper()
	var refs []string
	err := j.Events(context.Background(), kassa.Stream{Kind: kassa.KindStore, ID: storeID}, 0, func(_ uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		if up := ev.GetToppedUp(); up != nil {
			refs = append(refs, up.Reference)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return refs
}

// TestTopUpWithReferenceCreditsOnce: many callers credit the same
// reference at once: one ledger line, one journal event, and each caller
// gets that line; later calls with the reference, whatever their amount,
// write nothing. Top-ups without a reference credit every time.
func TestTopUpWithReferenceCreditsOnce(t *testing.T) {
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)))
	st := h.createStore("1", "0")
	ctx := context.Background()
	ids, errs := atOnce(8, func(i int) (int64, error) {
		tx, err := h.sys.Service.TopUp(ctx, st.ID, 25_000, "inv_topup1")
		if err != nil {
			return 0, err
		}
		return tx.ID, nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
		if ids[i] != ids[0] {
			t.Errorf("caller %d got line %d, caller 0 line %d", i, ids[i], ids[0])
		}
	}
	again, err := h.sys.Service.TopUp(ctx, st.ID, 99_000, "inv_topup1")
	if err != nil || again.ID != ids[0] || again.Amount != 25_000 {
		t.Errorf("the reference again with another amount = %+v, %v; want line %d of 25000 sat", again, err, ids[0])
	}
	if lines := kassatest.TopUpLines(t, h.db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
	for range 2 {
		if _, err := h.sys.Service.TopUp(ctx, st.ID, 1000, ""); err != nil {
			t.Fatal(err)
		}
	}
	if bal, _ := h.db.Balance(ctx, st.ID); bal != 27_000 {
		t.Errorf("balance = %d, want 27000", bal)
	}
	if refs := toppedUpEvents(t, h.db, st.ID); len(refs) != 3 || refs[0] != "inv_topup1" || refs[1] != "" {
		t.Errorf("journal top-ups = %q, want the reference once and two without", refs)
	}
	if _, err := h.sys.Service.TopUp(ctx, st.ID, 1000, "has space"); kassa.ErrorCode(err) != kassa.Invalid {
		t.Errorf("a reference with a space: %v, want invalid", err)
	}
}

// TestTopUpReferenceSurvivesRestart: after a restart, the store rebuilt
// from storage still knows the references it credited.
func TestTopUpReferenceSurvivesRestart(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	st := h.createStore("1", "0")
	first, err := h.sys.Service.TopUp(ctx, st.ID, 25_000, "inv_before")
	if err != nil {
		t.Fatal(err)
	}
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	if _, err := h2.sys.Runtime.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	again, err := h2.sys.Service.TopUp(ctx, st.ID, 25_000, "inv_before")
	if err != nil || again.ID != first.ID {
		t.Fatalf("the reference after a restart = %+v, %v; want line %d", again, err, first.ID)
	}
	if _, err := h2.sys.Service.TopUp(ctx, st.ID, 5_000, "inv_after"); err != nil {
		t.Fatal(err)
	}
	if bal, _ := db2.Balance(ctx, st.ID); bal != 30_000 {
		t.Errorf("balance = %d, want 30000", bal)
	}
	if refs := toppedUpEvents(t, db2, st.ID); len(refs) != 2 {
		t.Errorf("journal top-ups = %q, want 2", refs)
	}
}

// TestTopUpReferenceRecheckedAfterAnotherActivationWrote: two
// activations of one store (two nodes during a topology change) credit
// the same reference. The second one's commit is refused, as the journal
// refuses a sequence number already taken; it reloads and answers the
// first one's line instead of "try again".
func TestTopUpReferenceRecheckedAfterAnotherActivationWrote(t *testing.T) {
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	journal := &faultyJournal{Journal: db}
	stale := newHarnessWith(t, db, clock, func(c *Config) { c.Journal = journal })
	st := stale.createStore("1", "0")
	// The stale node's store actor is active, with the state of now.
	if _, err := stale.sys.Service.TopUp(ctx, st.ID, 1000, "inv_warm"); err != nil {
		t.Fatal(err)
	}
	owner := newHarness(t, db, clock)
	first, err := owner.sys.Service.TopUp(ctx, st.ID, 25_000, "inv_both")
	if err != nil {
		t.Fatal(err)
	}
	refused := refuseNextCommit(journal)
	got, err := stale.sys.Service.TopUp(ctx, st.ID, 25_000, "inv_both")
	if err != nil || got.ID != first.ID {
		t.Fatalf("stale activation = %+v, %v; want line %d", got, err, first.ID)
	}
	if !refused.Load() {
		t.Fatal("the stale activation never tried to commit")
	}
	if bal, _ := db.Balance(ctx, st.ID); bal != 26_000 {
		t.Errorf("balance = %d, want 26000", bal)
	}
}

// TestClusterTopUpReferenceOnce: every node of a cluster credits the same
// reference at once (each dashboard's background loop does): one line.
func TestClusterTopUpReferenceOnce(t *testing.T) {
	t.Parallel()
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Now())
	nodes := clusterNodes(t, 2, db, clock, 15*time.Minute)
	ctx := context.Background()
	st, err := nodes[0].sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Shop", Currency: kassa.EUR, ConfirmationsRequired: 1})
	if err != nil {
		t.Fatal(err)
	}
	ids, errs := atOnce(8, func(i int) (int64, error) {
		tx, err := nodes[i%2].sys.Service.TopUp(ctx, st.ID, 25_000, "inv_cluster")
		if err != nil {
			return 0, err
		}
		return tx.ID, nil
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("node %d: %v", i%2, err)
		}
		if ids[i] != ids[0] {
			t.Errorf("caller %d got line %d, caller 0 line %d", i, ids[i], ids[0])
		}
	}
	if lines := kassatest.TopUpLines(t, db, st.ID); len(lines) != 1 {
		t.Errorf("%d top-up lines, want 1", len(lines))
	}
}

// TestStoreActorResumesAfterTheJournalsLastEvent: a webhook saved (an
// event that leaves the store's document as it was) and then a restart:
// the next store event must follow it in the journal, not take its
// sequence number (which overwrote it on Pebble and was refused for good
// on PostgreSQL, the reload finding the same stale number).
func TestStoreActorResumesAfterTheJournalsLastEvent(t *testing.T) {
	db := openMem(t)
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	ctx := context.Background()
	h := newHarness(t, db, clock)
	st := h.createStore("1", "0")
	h.webhook("https://shop.example/hook")
	h.sys.Runtime.Shutdown()

	h2 := newHarness(t, db, clock)
	if _, err := h2.sys.Service.TopUp(ctx, st.ID, 1000, "inv_after_restart"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	err := db.Events(ctx, kassa.Stream{Kind: kassa.KindStore, ID: st.ID}, 0, func(_ uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		kinds = append(kinds, fmt.Sprintf("%T", ev.Kind))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "[*protos.StoreEvent_Created *protos.StoreEvent_WebhookSaved *protos.StoreEvent_ToppedUp]"
	if fmt.Sprint(kinds) != want {
		t.Errorf("store journal = %v, want %s", kinds, want)
	}
}
