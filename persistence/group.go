package persistence

import (
	"sync"
	"time"

	"github.com/cockroachdb/pebble/v2"
)

// groupCommit makes the synced commits that wait together one Pebble
// commit. Handed to Pebble one by one, each commit woke its WAL's flush
// goroutine and was written to the file on its own while the sync waited
// for company (syncpace.go): under Lightning creates about one write
// system call and one wake-up per create for one sync per eight. Here
// the commits queue, and one of them, the leader, waits for the pacer,
// then takes the whole queue, applies the others' batches to its own in
// the order they came, and commits that once, synced. Each caller returns
// once the commit holding its batch is synced, with that commit's error:
// nothing is acknowledged earlier, and no batch is split.
type groupCommit struct {
	pacer *syncPacer
	mu    sync.Mutex
	queue []*member
	// leading is set while a leader is at work; the first of the queue
	// leads next.
	leading bool
	// next is when the next sync may start (the pacer's wait after the
	// last one); only the leader touches it.
	next time.Time
}

// member is one commit in the queue. done carries true when it is to
// lead, false when its batch was committed with err.
type member struct {
	b    *pebble.Batch
	err  error
	done chan bool
}

// commit commits b synced, with the commits waiting beside it.
func (g *groupCommit) commit(b *pebble.Batch) error {
	m := &member{b: b, done: make(chan bool, 1)}
	g.mu.Lock()
	g.queue = append(g.queue, m)
	if g.leading {
		g.mu.Unlock()
		if lead := <-m.done; !lead {
			return m.err
		}
	} else {
		g.leading = true
		g.mu.Unlock()
	}
	if d := time.Until(g.next); d > 0 {
		time.Sleep(d)
	}
	g.mu.Lock()
	group := g.queue // m first: it led the queue, or found it empty
	g.queue = nil
	g.mu.Unlock()
	err := guarded(func() error {
		for _, o := range group[1:] {
			if err := m.b.Apply(o.b, nil); err != nil {
				return err
			}
		}
		return m.b.Commit(pebble.Sync)
	})
	g.next = time.Now().Add(g.pacer.wait())
	g.mu.Lock()
	if len(g.queue) > 0 {
		g.queue[0].done <- true
	} else {
		g.leading = false
	}
	g.mu.Unlock()
	for _, o := range group[1:] {
		o.err = err
		o.done <- false
	}
	return err
}
