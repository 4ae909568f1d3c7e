package persistence

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/kassatest"
)

// TestPacedWait: the wait after a sync gathers about pacedGroup commits
// at the rate they arrived, within maxSyncWait, and is none when they
// arrive fast enough to share syncs by themselves.
func TestPacedWait(t *testing.T) {
	ms := time.Millisecond
	for _, c := range []struct {
		n       int64
		elapsed time.Duration
		want    time.Duration
	}{
		{0, 5 * ms, maxSyncWait},   // none arrived: the next ones are still coming
		{3, 0, maxSyncWait},        // no time measured
		{8, ms, 0},                 // 8 a millisecond share syncs unaided
		{30, 2 * ms, 0},            // 15 a millisecond
		{4, ms, 2 * ms},            // 4 a millisecond: 8 in 2 ms
		{8, 8 * ms, maxSyncWait},   // 1 a millisecond: 8 in 8 ms
		{1, 100 * ms, maxSyncWait}, // a trickle waits no longer than the bound
	} {
		if got := pacedWait(c.n, c.elapsed); got != c.want {
			t.Errorf("%d commits in %v: wait %v, want %v", c.n, c.elapsed, got, c.want)
		}
	}
}

// TestBriskWait: under many creates not waiting for Lightning, the wait
// after a sync is briefWait while commits arrive briskGroup or more a
// millisecond and fewer than pacedGroup, and none otherwise.
func TestBriskWait(t *testing.T) {
	ms, us := time.Millisecond, time.Microsecond
	for _, c := range []struct {
		n       int64
		elapsed time.Duration
		want    time.Duration
	}{
		{0, ms, 0},               // none arrived
		{1, 100 * us, 0},         // one alone never waits for company
		{3, 0, 0},                // no time measured
		{2, ms, briefWait},       // 2 a millisecond
		{3, 700 * us, briefWait}, // about 4 a millisecond
		{3, 2 * ms, 0},           // 1.5 a millisecond: not brisk
		{8, ms, 0},               // 8 a millisecond share syncs unaided
	} {
		if got := briskWait(c.n, c.elapsed); got != c.want {
			t.Errorf("%d commits in %v: wait %v, want %v", c.n, c.elapsed, got, c.want)
		}
	}
}

// TestSyncPacerWaitsOnlyUnderManyCreates: with fewer than pacingWriters
// creates under way, or none told, a sync never waits (a sequential
// writer would only be slowed); with more, it waits briefly while their
// commits are brisk; with pacingWriters or more awaiting Lightning, it
// waits by the arrivals since the last sync, which each decision starts
// counting again.
func TestSyncPacerWaitsOnlyUnderManyCreates(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := &syncPacer{now: func() time.Time { return now }, last: now}
	step := func(arrivals int, d time.Duration) time.Duration {
		for range arrivals {
			p.arrive()
		}
		now = now.Add(d)
		return p.wait()
	}
	if got := step(4, time.Millisecond); got != 0 {
		t.Errorf("no creates told: wait %v", got)
	}
	lightning, underWay := 0, pacingWriters-1
	awaiting := func() int { return lightning }
	creating := func() int { return underWay }
	p.lightning.Store(&awaiting)
	p.underWay.Store(&creating)
	if got := step(4, time.Millisecond); got != 0 {
		t.Errorf("%d creates under way: wait %v", underWay, got)
	}
	underWay = pacingWriters
	if got := step(4, time.Millisecond); got != briefWait {
		t.Errorf("%d creates under way, 4 commits a millisecond: wait %v, want %v", underWay, got, briefWait)
	}
	if got := step(1, time.Millisecond); got != 0 {
		t.Errorf("%d creates under way, 1 commit a millisecond: wait %v", underWay, got)
	}
	lightning = pacingWriters - 1
	if got := step(4, time.Millisecond); got != briefWait {
		t.Errorf("%d creates awaiting Lightning of %d under way: wait %v, want %v", lightning, underWay, got, briefWait)
	}
	lightning = pacingWriters
	if got := step(4, time.Millisecond); got != 2*time.Millisecond {
		t.Errorf("%d creates awaiting Lightning, 4 commits a millisecond: wait %v, want 2ms", lightning, got)
	}
	if got := step(0, time.Millisecond); got != maxSyncWait {
		t.Errorf("no commit since the last decision: wait %v, want %v", got, maxSyncWait)
	}
	if got := step(16, time.Millisecond); got != 0 {
		t.Errorf("16 commits a millisecond: wait %v", got)
	}
}

// TestSyncedCommitsReachThePacer: the group's leader asks the pacer
// after each synced commit, and every synced commit counts as an arrival; a store that
// does not sync counts none.
func TestSyncedCommitsReachThePacer(t *testing.T) {
	db, err := Open(t.TempDir(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The pacer asks for the creates awaiting Lightning before it counts the
	// arrivals again: seen from there, they hold the commit.
	var asked, arrived atomic.Int64
	db.PaceSyncs(func() int {
		asked.Add(1)
		arrived.Add(db.pacer.arrivals.Load())
		return 0
	}, func() int { return 0 })
	commit(t, db, func(b kassa.Batch) { b.PutStore(kassatest.NewStore("s1", "key_1"), 1) })
	for deadline := time.Now().Add(10 * time.Second); arrived.Load() == 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("a synced commit never reached the pacer (asked %d times)", asked.Load())
		}
	}

	unsynced, err := Open(t.TempDir(), Options{NoSync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer unsynced.Close()
	commit(t, unsynced, func(b kassa.Batch) { b.PutStore(kassatest.NewStore("s1", "key_1"), 1) })
	if n := unsynced.pacer.arrivals.Load(); n != 0 {
		t.Errorf("an unsynced commit counted as %d arrivals", n)
	}
}
