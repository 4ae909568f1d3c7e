package persistence

import (
	"sync/atomic"
	"time"
)

// Pacing the WAL's syncs. Every commit is synced before it returns, and
// commits that arrive while a sync runs share the next one. Syncing again
// the moment a sync ends wastes syncs in two cases, and in both the WAL
// waits a little after a sync before it starts the next one. A commit
// still returns only once it is synced: nothing is acknowledged earlier,
// only later.
//
// Lightning creates: lnd's AddInvoice releases them one by one about a
// millisecond apart, so nearly every commit had a sync of its own (0.56
// per Lightning create), and each waited in the disk's queue beside
// lnd's own syncs, slowing the serial step that sets the rate of every
// Lightning create. While many creates wait for the Lightning backend,
// the wait is long enough for about pacedGroup commits to gather at the
// rate they arrive, and never more than maxSyncWait (docs/decisions.md,
// "Group commit on Pebble").
//
// Many creates under way, their commits arriving briskly (briskGroup or
// more per naturalWindow): a sync right after a sync carries only the
// few commits that came during it, and each fdatasync costs the kernel
// about 50 µs of the CPU the creates need. Then the WAL waits briefWait,
// about a sync's length, so that a sync carries a few times more commits:
// at the peak of plain creates about 0.13 syncs per create instead of
// 0.3–0.6, and about 7% more creates a second (docs/decisions.md, "Group
// commit on Pebble").
//
// Without many creates there is no wait: a sequential writer, or a few,
// would only be slowed (each of their commits would wait for company
// that never comes). Nor is there a wait when commits arrive fast enough
// to share syncs by themselves.
const (
	// pacedGroup is how many commits a paced sync aims to carry.
	pacedGroup = 8
	// pacingWriters is how many creates must be under way (or wait for
	// Lightning) for the WAL to wait: enough that more commits are
	// surely on their way.
	pacingWriters = 8
	// maxSyncWait bounds the wait after a sync (and so what pacing adds
	// to a commit's latency).
	maxSyncWait = 8 * time.Millisecond
	// naturalWindow is about how long a sync takes: commits arriving
	// pacedGroup or more per window share syncs without waiting.
	naturalWindow = time.Millisecond
	// briskGroup is how many commits per naturalWindow make the
	// arrivals brisk enough for the brief wait.
	briskGroup = 2
	// briefWait is the wait under many creates that do not wait for
	// Lightning.
	briefWait = naturalWindow
)

// syncPacer decides, after each synced group commit (group.go), how long
// the next one waits.
type syncPacer struct {
	// lightning counts the callers that will commit soon, one by one
	// (the creates awaiting Lightning), and underWay those that will
	// commit soon at all (the creates under way); nil until PaceSyncs
	// sets them.
	lightning, underWay atomic.Pointer[func() int]
	// arrivals counts the synced commits begun since the last decision.
	arrivals atomic.Int64
	// last is when the last decision was made. Only the group's
	// leader decides, one leader at a time, so only it touches last.
	last time.Time
	now  func() time.Time
}

// arrive counts a synced commit.
func (p *syncPacer) arrive() { p.arrivals.Add(1) }

// wait is called by the group's leader right after its synced commit:
// how long the next one waits.
func (p *syncPacer) wait() time.Duration {
	now := p.now()
	elapsed := now.Sub(p.last)
	p.last = now
	lightning, underWay := many(&p.lightning), many(&p.underWay)
	n := p.arrivals.Swap(0)
	switch {
	case lightning:
		return pacedWait(n, elapsed)
	case underWay:
		return briskWait(n, elapsed)
	}
	return 0
}

// many reports whether the count in c is pacingWriters or more.
func many(c *atomic.Pointer[func() int]) bool {
	f := c.Load()
	return f != nil && (*f)() >= pacingWriters
}

// briskWait is the wait after a sync under many creates that do not wait
// for Lightning, when n commits arrived in the elapsed time since the
// sync before: briefWait when they came briskly, but not so fast that
// they share syncs by themselves.
func briskWait(n int64, elapsed time.Duration) time.Duration {
	if n < briskGroup || elapsed <= 0 ||
		n*int64(naturalWindow) < briskGroup*int64(elapsed) || n*int64(naturalWindow) >= pacedGroup*int64(elapsed) {
		return 0
	}
	return briefWait
}

// pacedWait is the wait after a sync when n commits arrived in the
// elapsed time since the one before.
func pacedWait(n int64, elapsed time.Duration) time.Duration {
	if n <= 0 || elapsed <= 0 {
		return maxSyncWait
	}
	if n*int64(naturalWindow) >= pacedGroup*int64(elapsed) {
		return 0 // they share syncs as they come
	}
	return min(time.Duration(pacedGroup*int64(elapsed)/n), maxSyncWait)
}
