package persistence

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestRequestCommitsShareTheirSync: commits that record different
// request ids (creates with an Idempotency-Key) do not wait for each
// other's fsync. They used to hold one lock from the check to the end
// of the synced write, so keyed creates went through the disk one at a
// time. While the WAL sync of one such commit hangs, another one's batch
// must be applied (readable), then both commit once the sync returns.
func TestRequestCommitsShareTheirSync(t *testing.T) {
	var armed atomic.Bool
	entered, release := make(chan struct{}), make(chan struct{})
	fs := errorfs.Wrap(vfs.NewMem(), errorfs.InjectorFunc(func(op errorfs.Op) error {
		sync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if sync && strings.HasSuffix(op.Path, ".log") && armed.CompareAndSwap(true, false) {
			close(entered)
			<-release
		}
		return nil
	}))
	db, err := Open("kassa", Options{FS: fs})
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
	armed.Store(true)
	first := commit("req_1")
	<-entered // req_1's batch is in the WAL, its fsync under way
	second := commit("req_2")
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	kassatest.WaitFor(t, 10*time.Second, "req_2's batch applied while req_1's fsync hangs", func() bool {
		_, err := db.Request(t.Context(), "s1", "req_2")
		return err == nil
	})
	close(release)
	released = true
	for i, done := range []<-chan error{first, second} {
		if err := <-done; err != nil {
			t.Errorf("commit %d: %v", i+1, err)
		}
	}
}
