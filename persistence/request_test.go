package persistence

import (
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestRequestCommitsShareTheirSync: commits that record different
// request ids (creates with an Idempotency-Key) do not wait for each
// other's fsync. They used to hold one lock from the check to the end
// of the synced write, so keyed creates went through the disk one at a
// time. While the WAL sync of one such commit hangs, two others must
// reach the group's queue, and once the sync returns they commit
// together in one more sync (group.go).
func TestRequestCommitsShareTheirSync(t *testing.T) {
	disk := newHeldDisk()
	db, err := Open("kassa", Options{FS: disk.fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	commit := func(id string) <-chan error {
		done := make(chan error, 1)
		go func() {
			b := db.NewBatch()
			b.AppendEvent(kassa.Stream{Kind: kassa.KindInvoice, ID: "inv_" + id}, 1, []byte(id))
			b.(kassa.RequestBatch).PutRequest(kassa.RequestRecord{StoreID: "s1", ID: id, Kind: kassa.RequestInvoice, ResultID: "inv_" + id})
			done <- db.Commit(t.Context(), b)
		}()
		return done
	}
	disk.armed.Store(true)
	first := commit("req_1")
	<-disk.entered // req_1's batch is in the WAL, its fsync under way
	others := []<-chan error{commit("req_2"), commit("req_3")}
	released := false
	defer func() {
		if !released {
			close(disk.release)
		}
	}()
	kassatest.WaitFor(t, 10*time.Second, "req_2 and req_3 queued to commit while req_1's fsync hangs", func() bool {
		return queued(db) == 2
	})
	close(disk.release)
	released = true
	for i, done := range append([]<-chan error{first}, others...) {
		if err := <-done; err != nil {
			t.Errorf("commit %d: %v", i+1, err)
		}
	}
	if n := disk.syncs.Load(); n != 2 {
		t.Errorf("%d WAL syncs for req_1 and the two behind it, want 2", n)
	}
	for _, id := range []string{"req_1", "req_2", "req_3"} {
		if _, err := db.Request(t.Context(), "s1", id); err != nil {
			t.Errorf("%s after its commit: %v", id, err)
		}
	}
}
