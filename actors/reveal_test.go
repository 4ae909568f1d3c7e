package actors

import (
	"testing"
	"time"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/protos"
)

// TestForwardedRevealAPIKey: a reveal sent from another node is served
// on the store's node as a local one: it answers the key in full and
// journals an ApiKeyRevealed event naming the account; an unknown key is
// not found and journals nothing.
func TestForwardedRevealAPIKey(t *testing.T) {
	clock := kassatest.NewTestClock(time.Now())
	db := openMem(t)
	h := newHarness(t, db, clock)
	st := h.createStore("0", "0")
	key := st.APIKeys[0]
	reveal := func(keyID string) *protos.StoreCallReply {
		return h.sys.Cluster.serveCall(&protos.StoreCall{StoreId: st.ID, RequestId: "req-" + keyID,
			Call: &protos.StoreCall_RevealApiKey{RevealApiKey: &protos.RevealAPIKeyCall{KeyId: keyID, By: "owner@example.com"}}})
	}
	if rep := reveal("key_nosuch"); rep.Code != "not_found" {
		t.Errorf("an unknown key: %q %s", rep.Code, rep.Message)
	}
	rep := reveal(key.ID)
	got, err := apiKeyResult.get(rep)
	if rep.Code != "" || err != nil || got.ID != key.ID || got.Key != key.Key || got.Label != key.Label {
		t.Fatalf("reveal: %q %s %+v %v", rep.Code, rep.Message, got, err)
	}
	kinds, _ := storeJournal(t, db, st.ID)
	if len(kinds) != 2 || kinds[2] != "ApiKeyRevealed" {
		t.Fatalf("the journal after a refused and a served reveal: %v", kinds)
	}
}
