package persistence

import (
	"errors"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/cockroachdb/pebble/v2/vfs/errorfs"

	"github.com/kassapay/kassa"
)

// faultyDisk is a crashable in-memory file system whose writes (or
// syncs) fail with errno while the fault is on.
type faultyDisk struct {
	mem   *vfs.MemFS
	fs    vfs.FS
	on    atomic.Bool
	errno syscall.Errno
}

// newFaultyDisk returns a disk that fails the operations of the given
// kinds with errno once on is set.
func newFaultyDisk(errno syscall.Errno, kinds ...errorfs.OpKind) *faultyDisk {
	d := &faultyDisk{mem: vfs.NewCrashableMem(), errno: errno}
	d.fs = errorfs.Wrap(d.mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if !d.on.Load() {
			return nil
		}
		for _, k := range kinds {
			if op.Kind == k {
				return &fsError{op: "write", path: op.Path, errno: errno}
			}
		}
		return nil
	}))
	return d
}

// fsError is what the operating system answers: a path error with an
// errno inside.
type fsError struct {
	op, path string
	errno    syscall.Errno
}

func (e *fsError) Error() string { return e.op + " " + e.path + ": " + e.errno.Error() }
func (e *fsError) Unwrap() error { return e.errno }

// diskFull fails every write, as a full disk does; syncFails fails every
// fsync, as a dying disk does.
var (
	diskFull  = []errorfs.OpKind{errorfs.OpFileWrite, errorfs.OpFileWriteAt, errorfs.OpFilePreallocate}
	syncFails = []errorfs.OpKind{errorfs.OpFileSync, errorfs.OpFileSyncData, errorfs.OpFileSyncTo}
)

// TestWriteErrorFailsFast checks that a failed WAL write or sync answers
// the commit with an Unavailable error that names the cause, at once and
// for every later write, instead of the panic inside Pebble that used to
// wedge the service; that health reports it; and that a restart on the
// same disk, once it works again, finds every earlier commit and either
// all or nothing of the failed one.
func TestWriteErrorFailsFast(t *testing.T) {
	for _, c := range []struct {
		name  string
		errno syscall.Errno
		kinds []errorfs.OpKind
	}{
		{"DiskFull", syscall.ENOSPC, diskFull},
		{"SyncEIO", syscall.EIO, syncFails},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			disk := newFaultyDisk(c.errno, c.kinds...)
			db, err := Open("kassa", Options{FS: disk.fs})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			tx := topUp("s2", 7, t0)
			commit(t, db, func(b kassa.Batch) { b.PutTransaction(tx) })
			if err := db.Err(); err != nil {
				t.Fatalf("Err before the fault = %v", err)
			}

			disk.on.Store(true)
			b := db.NewBatch()
			fullBatch(b)
			start := time.Now()
			err = db.Commit(ctx, b)
			took := time.Since(start)
			checkFailure(t, "Commit", err, c.errno)
			select {
			case <-db.Failed():
			default:
				t.Error("Failed() not closed after a failed commit")
			}
			checkFailure(t, "Err", db.Err(), c.errno)

			// Every later write and read answers the same error at once,
			// even when the disk works again: what Pebble holds in memory
			// may include the failed batch, which is not durable.
			disk.on.Store(false)
			b = db.NewBatch()
			b.PutTransaction(topUp("s2", 1, t0))
			start = time.Now()
			checkFailure(t, "second Commit", db.Commit(ctx, b), c.errno)
			t.Logf("%v: the failing commit answered in %v, the next one in %v", c.errno, took, time.Since(start))
			checkFailure(t, "PutValue", db.PutValue(ctx, "k", []byte("v"), t0.Add(time.Hour)), c.errno)
			_, err = db.Invoice(ctx, "inv_1")
			checkFailure(t, "Invoice", err, c.errno)
			_, err = db.Balance(ctx, "s2")
			checkFailure(t, "Balance", err, c.errno)
			if err := db.Close(); !errors.Is(err, ErrFailed) {
				t.Errorf("Close = %v, want the failure", err)
			}

			// A restart on the same disk recovers what was durable.
			restarted, err := Open("kassa", Options{FS: disk.mem.CrashClone(vfs.CrashCloneCfg{})})
			if err != nil {
				t.Fatalf("open after the fault: %v", err)
			}
			defer restarted.Close()
			if bal, err := restarted.Balance(ctx, "s2"); bal != 7 || err != nil {
				t.Errorf("Balance after restart = %d, %v; want 7", bal, err)
			}
			if _, err := restarted.Invoice(ctx, "inv_1"); err == nil {
				checkFullBatch(t, restarted)
			} else {
				checkNothingOfFullBatch(t, restarted)
			}
			commit(t, restarted, func(b kassa.Batch) { b.PutTransaction(topUp("s2", 1, t0)) })
			if bal, err := restarted.Balance(ctx, "s2"); bal != 8 || err != nil {
				t.Errorf("Balance after a new commit = %d, %v; want 8", bal, err)
			}
		})
	}
}

// TestOpenOnFullDisk checks that opening on a disk that refuses writes
// answers an error instead of a panic, so that the service exits with a
// message and its supervisor can try again later.
func TestOpenOnFullDisk(t *testing.T) {
	disk := newFaultyDisk(syscall.ENOSPC, diskFull...)
	db, err := Open("kassa", Options{FS: disk.fs})
	if err != nil {
		t.Fatal(err)
	}
	commit(t, db, func(b kassa.Batch) { b.PutTransaction(topUp("s1", 5, t0)) })
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	disk.on.Store(true)
	if db, err := Open("kassa", Options{FS: disk.fs}); err == nil {
		db.Close()
		t.Skip("skipped because this Pebble version opened the store without writing, so there is no failed open to check")
	} else if !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Open on a full disk = %v, want ENOSPC", err)
	}
	// The failed open goes on retrying in the background until the disk
	// has space; a restart opens a new process on what the disk holds.
	disk.on.Store(false)
	db, err = Open("kassa", Options{FS: disk.mem.CrashClone(vfs.CrashCloneCfg{})})
	if err != nil {
		t.Fatalf("open once the disk has space: %v", err)
	}
	defer db.Close()
	if bal, err := db.Balance(t.Context(), "s1"); bal != 5 || err != nil {
		t.Errorf("Balance = %d, %v; want 5", bal, err)
	}
}

// checkFailure fails unless err is the storage failure: Unavailable, with
// a message for people, matching ErrFailed and the errno.
func checkFailure(t *testing.T, what string, err error, errno syscall.Errno) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: no error, want the storage failure", what)
		return
	}
	if code := kassa.ErrorCode(err); code != kassa.Unavailable {
		t.Errorf("%s: %v has code %s, want %s", what, err, code, kassa.Unavailable)
	}
	if !errors.Is(err, ErrFailed) || !errors.Is(err, errno) {
		t.Errorf("%s: %v does not match ErrFailed and %v", what, err, errno)
	}
	if msg := kassa.ErrorMessage(err); msg == "" || msg == "internal error" {
		t.Errorf("%s: message %q says nothing", what, msg)
	}
}

// TestFlushErrorFailsFast checks the other way a full disk shows: the WAL
// still takes writes (a recycled log has room) but flushing the memtable
// to a table fails. Pebble retries such a flush for ever while commits
// pile up behind the full memtables; the store must fail instead, so
// that commits answer at once rather than stall.
func TestFlushErrorFailsFast(t *testing.T) {
	ctx := t.Context()
	mem := vfs.NewMem()
	var on atomic.Bool
	fs := errorfs.Wrap(mem, errorfs.InjectorFunc(func(op errorfs.Op) error {
		if on.Load() && strings.HasSuffix(op.Path, ".sst") && (op.Kind == errorfs.OpFileWrite || op.Kind == errorfs.OpCreate) {
			return &fsError{op: "write", path: op.Path, errno: syscall.ENOSPC}
		}
		return nil
	}))
	db, err := Open("kassa", Options{FS: fs})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	on.Store(true)
	value := make([]byte, 64<<10)
	s := kassa.Stream{Kind: kassa.KindInvoice, ID: "big"}
	for seq := uint64(1); ; seq++ {
		if seq > 2000 { // 128 MB: far beyond the memtables
			t.Fatal("2000 commits of 64 KiB and no flush failed")
		}
		b := db.NewBatch()
		b.AppendEvent(s, seq, value)
		if err := db.Commit(ctx, b); err != nil {
			checkFailure(t, "Commit after the flush failed", err, syscall.ENOSPC)
			break
		}
	}
	checkFailure(t, "Err", db.Err(), syscall.ENOSPC)
	on.Store(false) // lets Pebble's retried flush end, so that Close can too
}
