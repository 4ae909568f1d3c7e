package persistence

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kassapay/kassa/kassatest"
)

// heldDisk is a crashable in-memory disk whose next WAL sync, once
// armed, waits until released; it counts the WAL syncs from arming on,
// and fails them with failWith (when set) after the held one.
type heldDisk struct {
	mem      *vfs.MemFS
	fs       vfs.FS
	armed    atomic.Bool
	counting atomic.Bool
	syncs    atomic.Int64
	failWith atomic.Value // syscall.Errno
	entered  chan struct{}
	release  chan struct{}
}

func newHeldDisk() *heldDisk {
	d := &heldDisk{mem: vfs.NewCrashableMem(), entered: make(chan struct{}), release: make(chan struct{})}
	d.fs = errorfs.Wrap(d.mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		sync := op.Kind == errorfs.OpFileSync || op.Kind == errorfs.OpFileSyncData || op.Kind == errorfs.OpFileSyncTo
		if !sync || !strings.HasSuffix(op.Path, ".log") {
			return nil
		}
		if d.armed.CompareAndSwap(true, false) {
			d.counting.Store(true)
			d.syncs.Add(1)
			close(d.entered)
			<-d.release
			return nil
		}
		if !d.counting.Load() {
			return nil
		}
		d.syncs.Add(1)
		if errno, ok := d.failWith.Load().(syscall.Errno); ok {
			return &fsError{op: "sync", path: op.Path, errno: errno}
		}
		return nil
	}))
	return d
}

// queued is how many commits wait in db's group queue.
func queued(db *DB) int {
	db.group.mu.Lock()
	defer db.group.mu.Unlock()
	return len(db.group.queue)
}

// commitInvoice commits the snapshot of invoice id in a goroutine.
func commitInvoice(db *DB, id string) <-chan error {
	done := make(chan error, 1)
	go func() {
		b := db.NewBatch()
		b.PutInvoice(kassatest.NewInvoice(id, "s1", t0), nil, 1)
		done <- db.Commit(context.Background(), b)
	}()
	return done
}

// heldGroup opens a store on a held disk, commits inv_0 until its WAL
// sync is held, then commits inv_1 to inv_n behind it until all n wait
// in the group's queue. The store closes when the test ends.
func heldGroup(t *testing.T, n int) (db *DB, disk *heldDisk, first <-chan error, behind []<-chan error) {
	t.Helper()
	disk = newHeldDisk()
	db, err := Open("kassa", Options{FS: disk.fs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	disk.armed.Store(true)
	first = commitInvoice(db, "inv_0")
	<-disk.entered
	for i := 1; i <= n; i++ {
		behind = append(behind, commitInvoice(db, fmt.Sprintf("inv_%d", i)))
	}
	kassatest.WaitFor(t, 10*time.Second, fmt.Sprintf("%d commits queued behind the held sync", n), func() bool { return queued(db) == n })
	return db, disk, first, behind
}

// TestWaitingCommitsShareOneCommit: the commits that arrive while a WAL
// sync runs wait in the group's queue, and once it returns they are one
// Pebble commit with one sync; each returns only then, and each is
// durable: a crash right after keeps all of them.
func TestWaitingCommitsShareOneCommit(t *testing.T) {
	_, disk, first, waiting := heldGroup(t, 5)
	for i, done := range waiting {
		select {
		case err := <-done:
			t.Fatalf("commit %d returned (%v) before its sync", i+1, err)
		default:
		}
	}
	close(disk.release)
	for i, done := range append([]<-chan error{first}, waiting...) {
		if err := <-done; err != nil {
			t.Errorf("commit %d: %v", i, err)
		}
	}
	if n := disk.syncs.Load(); n != 2 {
		t.Errorf("%d WAL syncs for the held commit and the five behind it, want 2", n)
	}
	crashed, err := Open("kassa", Options{FS: disk.mem.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatal(err)
	}
	defer crashed.Close()
	for i := range 6 {
		if _, err := crashed.Invoice(t.Context(), fmt.Sprintf("inv_%d", i)); err != nil {
			t.Errorf("inv_%d after a crash: %v", i, err)
		}
	}
}

// TestGroupFailureAnswersEveryCommit: when the sync of a group fails,
// every commit in it gets the storage failure, and after a restart the
// group is there whole or not at all; the commit synced before it stays.
func TestGroupFailureAnswersEveryCommit(t *testing.T) {
	db, disk, first, group := heldGroup(t, 3)
	disk.failWith.Store(syscall.EIO)
	close(disk.release)
	if err := <-first; err != nil {
		t.Fatalf("the commit synced before the fault: %v", err)
	}
	for i, done := range group {
		checkFailure(t, fmt.Sprintf("commit %d of the failed group", i+1), <-done, syscall.EIO)
	}
	db.Close()

	restarted, err := Open("kassa", Options{FS: disk.mem.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatal(err)
	}
	defer restarted.Close()
	if _, err := restarted.Invoice(t.Context(), "inv_0"); err != nil {
		t.Errorf("inv_0, synced before the fault: %v", err)
	}
	var found []string
	for i := 1; i <= 3; i++ {
		if _, err := restarted.Invoice(t.Context(), fmt.Sprintf("inv_%d", i)); err == nil {
			found = append(found, fmt.Sprintf("inv_%d", i))
		}
	}
	if len(found) != 0 && len(found) != 3 {
		t.Errorf("after a restart the failed group holds %v: want all three or none", found)
	}
}

// TestPacedCommitsAllReturn: many writers committing at once while the
// pacer makes each sync wait (as under many creates awaiting Lightning)
// all return, each commit readable; leadership passes on when a leader's
// own group is done, so no commit is left in the queue.
func TestPacedCommitsAllReturn(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.PaceSyncs(func() int { return pacingWriters }, func() int { return pacingWriters })
	const writers, each = 16, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				b := db.NewBatch()
				b.PutInvoice(kassatest.NewInvoice(fmt.Sprintf("inv_%d_%d", w, i), "s1", t0), nil, 1)
				if err := db.Commit(t.Context(), b); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := queued(db); n != 0 {
		t.Errorf("%d commits left in the queue", n)
	}
	for w := range writers {
		for i := range each {
			if _, err := db.Invoice(t.Context(), fmt.Sprintf("inv_%d_%d", w, i)); err != nil {
				t.Fatalf("inv_%d_%d: %v", w, i, err)
			}
		}
	}
}
