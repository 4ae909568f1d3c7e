package actors

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"google.golang.org/protobuf/proto"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/persistence"
	"github.com/kassapay/kassa/persistence/format"
	"github.com/kassapay/kassa/protos"
)

// storeJournal returns the kinds of the store's journal events by
// sequence number, and the documents its created and settings-changed
// events hold.
func storeJournal(t *testing.T, db *persistence.DB, storeID string) (map[uint64]string, map[uint64]*kassa.Store) {
	t.Helper()
	kinds, docs := map[uint64]string{}, map[uint64]*kassa.Store{}
	err := db.Events(context.Background(), kassa.Stream{Kind: kassa.KindStore, ID: storeID}, 0, func(seq uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			kinds[seq] = "undecodable"
			return nil
		}
		kinds[seq] = eventKind(ev.Kind)
		var doc []byte
		switch k := ev.Kind.(type) {
		case *protos.StoreEvent_Created:
			doc = k.Created.Store
		case *protos.StoreEvent_SettingsChanged:
			doc = k.SettingsChanged.Store
		}
		if doc != nil {
			var st kassa.Store
			if err := format.Unmarshal(doc, &st); err != nil {
				return err
			}
			docs[seq] = &st
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return kinds, docs
}

// TestStoreJournalIsAnAuditLog: the store's journal records every
// command, one event each, in order, while the store's state is its
// snapshot (docs/decisions.md, "Storage").
// Each command that changes the store document writes the snapshot in
// the event's batch, at the event's sequence number, and the documents
// that the created and settings events hold are that snapshot. Loading
// reads the snapshot alone: an event after it that does not even decode
// changes nothing of the state, and the journal goes on after it.
func TestStoreJournalIsAnAuditLog(t *testing.T) {
	dir := t.TempDir()
	clock := kassatest.NewTestClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	db := openDir(t, dir)
	h := newHarness(t, db, clock)
	ctx := context.Background()
	st := h.createStore("0", "0")

	type step struct {
		kind    string
		changes bool // the store document: the snapshot follows the event
		do      func() error
	}
	var keyID string
	var hook *kassa.Webhook
	steps := []step{
		{"Created", true, func() error { return nil }},
		{"SettingsChanged", true, func() error {
			_, err := h.sys.Service.UpdateStore(ctx, st.ID, kassa.StoreUpdate{Name: "Renamed", Currency: kassa.EUR, ConfirmationsRequired: 2})
			return err
		}},
		{"ApiKeyCreated", true, func() error {
			k, err := h.sys.Service.CreateAPIKey(ctx, st.ID, "till")
			if err == nil {
				keyID = k.ID
			}
			return err
		}},
		{"ApiKeyRevealed", false, func() error {
			k, err := h.sys.Service.RevealAPIKey(ctx, st.ID, keyID, "owner@example.com")
			if err == nil && (k.ID != keyID || k.Label != "till" || k.Key == "") {
				t.Fatalf("revealed %+v, want the key %s in full", k, keyID)
			}
			return err
		}},
		{"ApiKeyDeleted", true, func() error { return h.sys.Service.DeleteAPIKey(ctx, st.ID, keyID) }},
		{"ToppedUp", true, func() error { _, err := h.sys.Service.TopUp(ctx, st.ID, 5000, "ref-1"); return err }},
		{"PaymentRequestSaved", false, func() error {
			_, err := h.sys.Service.CreatePaymentRequest(ctx, st.ID, &kassa.PaymentRequestInput{Amount: decimal.NewFromInt(20), HasAmount: true, Title: "Shoes"})
			return err
		}},
		{"WebhookSaved", false, func() error { hook = h.webhook("https://a.example/hook"); return nil }},
		{"WebhookDeleted", false, func() error { return h.sys.Service.DeleteWebhook(ctx, st.ID, hook.ID) }},
	}
	snapSeq := uint64(0)
	for i, s := range steps {
		seq := uint64(i + 1)
		if err := s.do(); err != nil {
			t.Fatalf("%s: %v", s.kind, err)
		}
		kinds, docs := storeJournal(t, db, st.ID)
		if len(kinds) != int(seq) || kinds[seq] != s.kind {
			t.Fatalf("after %s the journal is %v; want %d events, the last a %s", s.kind, kinds, seq, s.kind)
		}
		snap, got, err := db.StoreSnapshot(ctx, st.ID)
		if err != nil {
			t.Fatal(err)
		}
		if s.changes {
			snapSeq = seq
		}
		if got != snapSeq {
			t.Fatalf("after %s the snapshot is at seq %d; want %d", s.kind, got, snapSeq)
		}
		if doc, ok := docs[seq]; ok {
			sameJSON(t, s.kind+" event's document against the snapshot", doc, snap)
		}
	}
	var revealedBy []string
	err := db.Events(ctx, kassa.Stream{Kind: kassa.KindStore, ID: st.ID}, 0, func(_ uint64, data []byte) error {
		var ev protos.StoreEvent
		if err := proto.Unmarshal(data, &ev); err != nil {
			return err
		}
		if r := ev.GetApiKeyRevealed(); r != nil {
			revealedBy = append(revealedBy, r.KeyId+" by "+r.By)
		}
		return nil
	})
	if err != nil || len(revealedBy) != 1 || revealedBy[0] != keyID+" by owner@example.com" {
		t.Fatalf("the journal's reveals: %v, %v; want the key %s by owner@example.com", revealedBy, err, keyID)
	}
	want, _, err := db.StoreSnapshot(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if want.Name != "Renamed" || len(want.APIKeys) != len(st.APIKeys) || len(want.TopUpRefs) != 1 {
		t.Fatalf("the store after the script: %+v", want)
	}

	// An audit entry that does not decode, after the snapshot.
	next := uint64(len(steps) + 1)
	b := db.NewBatch()
	b.AppendEvent(kassa.Stream{Kind: kassa.KindStore, ID: st.ID}, next, []byte{0xff, 0xff, 0xff})
	if err := db.Commit(ctx, b); err != nil {
		t.Fatal(err)
	}
	db2 := reopen(t, h, db, dir)
	defer db2.Close()
	h2 := newHarness(t, db2, clock)
	h2.store = st
	if _, err := h2.sys.Service.TopUp(ctx, st.ID, 5000, "ref-1"); err != nil {
		t.Fatalf("a top-up credited before, again after the restart: %v", err)
	}
	kinds, _ := storeJournal(t, db2, st.ID)
	if len(kinds) != int(next) {
		t.Fatalf("a top-up of a reference already credited journaled something: %v", kinds)
	}
	if _, err := h2.sys.Service.UpdateStore(ctx, st.ID, kassa.StoreUpdate{Name: "Again", Currency: kassa.EUR, ConfirmationsRequired: 2}); err != nil {
		t.Fatalf("update after the restart: %v", err)
	}
	kinds, docs := storeJournal(t, db2, st.ID)
	if kinds[next] != "undecodable" || kinds[next+1] != "SettingsChanged" || len(kinds) != int(next+1) {
		t.Fatalf("the journal after the restart: %v; want the undecodable entry, then the update", kinds)
	}
	after, seq, err := db2.StoreSnapshot(ctx, st.ID)
	if err != nil || seq != next+1 {
		t.Fatalf("snapshot after the restart: seq %d, %v; want %d", seq, err, next+1)
	}
	after.Name = want.Name
	sameJSON(t, "the store loaded from its snapshot, but for the new name", after, want)
	sameJSON(t, "the update's event document", docs[next+1].Name, "Again")
	if faults := h2.sys.Runtime.JournalFaults(); len(faults) != 0 {
		t.Fatalf("journal faults %+v: the store's state does not come from its journal", faults)
	}
}

// sameJSON fails t unless got and want encode to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	g, err1 := json.Marshal(got)
	w, err2 := json.Marshal(want)
	if err1 != nil || err2 != nil || string(g) != string(w) {
		t.Fatalf("%s:\n got %s\nwant %s", what, g, w)
	}
}
