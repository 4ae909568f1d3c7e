package actors

import (
	"context"
	"sync"
	"time"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/protos"
)

// A routed call's request id (StoreCall.request_id) makes a call that
// arrives twice run once: protoactor-go sends a cluster request again
// when it timed out, so a CreateInvoice could otherwise create a second
// invoice that nobody acknowledges. What makes a create once-only is
// its request record, durable with what it created (onceOnly): a repeat
// on another node or after a restart answers from it. This memo covers
// what the record cannot: a repeat that arrives on the same node while
// the first still runs waits for it, and a repeat soon after gets the
// first reply without a read. The node that runs the call keeps each
// request id's successful reply in memory for callMemoTTL, at most
// callMemoMax of them; a failed call is forgotten once answered, so that
// a retry (an Idempotency-Key after a 503) runs again.
const (
	callMemoTTL = time.Minute
	callMemoMax = 10_000
)

// callMemo holds the replies of recent routed calls by request id.
type callMemo struct {
	mu      sync.Mutex
	entries map[string]*memoEntry
	// order is the entries in the order their calls arrived: the
	// oldest are dropped first.
	order []memoItem
}

type memoItem struct {
	key string
	e   *memoEntry
}

type memoEntry struct {
	done    chan struct{} // closed when reply is set
	reply   *protos.StoreCallReply
	expires time.Time // when the reply is forgotten; zero while running
}

// once runs call for key once: the first caller runs it and keeps its
// reply, callers with the same key get that reply (waiting for it until
// ctx ends).
func (m *callMemo) once(ctx context.Context, key string, now time.Time, call func() *protos.StoreCallReply) *protos.StoreCallReply {
	m.mu.Lock()
	if m.entries == nil {
		m.entries = map[string]*memoEntry{}
	}
	m.forget(now)
	e, seen := m.entries[key]
	if !seen {
		e = &memoEntry{done: make(chan struct{})}
		m.entries[key] = e
		m.order = append(m.order, memoItem{key, e})
	}
	m.mu.Unlock()
	if seen {
		select {
		case <-e.done:
			return e.reply
		case <-ctx.Done():
			return &protos.StoreCallReply{Code: kassa.Unavailable, Message: "the call is still running: try again"}
		}
	}
	rep := call()
	m.mu.Lock()
	e.reply, e.expires = rep, now.Add(callMemoTTL)
	if rep.Code != "" {
		// Forgotten at once, so that a new call under the key runs
		// again; forget drops its place in order later.
		e.expires = now
		delete(m.entries, key)
	}
	m.mu.Unlock()
	close(e.done)
	return rep
}

// forget drops the oldest replies while they expired or are more than
// callMemoMax; it stops at the first it keeps (a call still running is
// kept, so those after it wait for it to finish). m.mu is held.
func (m *callMemo) forget(now time.Time) {
	n := 0
	for _, it := range m.order {
		if it.e.expires.IsZero() || (len(m.order)-n <= callMemoMax && now.Before(it.e.expires)) {
			break
		}
		if m.entries[it.key] == it.e {
			delete(m.entries, it.key)
		}
		n++
	}
	clear(m.order[:n])
	m.order = m.order[n:]
}
