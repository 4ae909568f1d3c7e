package persistence

import (
	"sync/atomic"
	"time"
)

// Pacing the WAL's syncs. Every commit is synced before it returns, and
// commits that arrive while a sync runs share the next one. That shares
// well when commits come faster than a sync takes (plain creates, a few
// thousand a second), and badly when they come one at a time about a
// millisecond apart: Lightning creates, which lnd's AddInvoice releases
// one by one. Then nearly every commit has a sync of its own (0.56 per
// Lightning create), and each waits in the disk's queue beside lnd's
// own syncs, slowing the serial step that sets the rate of every
// Lightning create (docs/decisions.md, "The WAL's syncs wait for
// company under many creates (issue 23)").
//
// So while many creates wait for the Lightning backend (their commits
// follow one by one, at its pace), the WAL waits a little after a sync
// before it starts the next one, long enough for about pacedGroup
// commits to gather at the rate they arrive, and never more than
// maxSyncWait. A commit still returns only once it is synced: nothing is
// acknowledged earlier, only later. Without such creates there is no
// wait: a sequential writer would only be slowed (each of its commits
// would wait for company that never comes), and creates that do not
// wait for a slow backend mostly wait in their commit already, all of
// them sharing each sync, so a wait only lengthens every commit (at
// the peak of plain creates it lifted a commit from about 2.9 to 4.5 ms
// at the same rate). Nor is there a wait when commits arrive fast
// enough to share syncs by themselves.
const (
	// pacedGroup is how many commits a paced sync aims to carry.
	pacedGroup = 8
	// pacingWriters is how many creates must wait for Lightning for the
	// WAL to wait: enough that more commits are surely on their way.
	pacingWriters = 8
	// maxSyncWait bounds the wait after a sync (and so what pacing adds
	// to a commit's latency).
	maxSyncWait = 8 * time.Millisecond
	// naturalWindow is about how long a sync takes: commits arriving
	// pacedGroup or more per window share syncs without waiting.
	naturalWindow = time.Millisecond
)

// syncPacer decides, after each WAL sync, how long the next one waits
// (Pebble's WALMinSyncInterval).
type syncPacer struct {
	// writers counts the callers that will commit soon, one by one (the
	// creates awaiting Lightning); nil until PaceSyncs sets it.
	writers atomic.Pointer[func() int]
	// arrivals counts the synced commits begun since the last decision.
	arrivals atomic.Int64
	// last is when the last decision was made. Pebble decides from
	// its one flush goroutine, so only it touches last.
	last time.Time
	now  func() time.Time
}

// arrive counts a synced commit.
func (p *syncPacer) arrive() { p.arrivals.Add(1) }

// wait is called by Pebble right after a sync: how long the next sync
// waits.
func (p *syncPacer) wait() time.Duration {
	now := p.now()
	elapsed := now.Sub(p.last)
	p.last = now
	writers := p.writers.Load()
	many := writers != nil && (*writers)() >= pacingWriters
	n := p.arrivals.Swap(0)
	if !many {
		return 0
	}
	return pacedWait(n, elapsed)
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
