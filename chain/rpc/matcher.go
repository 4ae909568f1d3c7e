package rpc

import (
	"bytes"
	"sync"
	"time"

	"github.com/btcsuite/btcd/wire"
)

// watch is an address the watcher looks for, with what it needs to know
// about the invoice behind it.
type watch struct {
	address string
	storeID string
	// index is the address's derivation index, -1 when unknown.
	index int64
	// until is when the address stops being watched: the end of its
	// invoice's monitoring window.
	until time.Time
	// confirmations is how deep the invoice wants its payment.
	confirmations int32
}

// Matcher holds the output scripts of the watched addresses in memory and
// finds the outputs that pay them. A lookup is one map access with no
// allocation, so a block costs time in its outputs, not in the number of
// watched scripts. It is safe for concurrent use.
type Matcher struct {
	mu      sync.RWMutex
	scripts map[string]*watch
}

// NewMatcher returns an empty matcher.
func NewMatcher() *Matcher { return &Matcher{scripts: make(map[string]*watch)} }

// Watch adds script, paying address, until the given time.
func (m *Matcher) Watch(script []byte, address string, until time.Time) {
	m.add(script, &watch{address: address, index: -1, until: until})
}

func (m *Matcher) add(script []byte, w *watch) {
	m.mu.Lock()
	if old := m.scripts[string(script)]; old == nil || old.until.Before(w.until) {
		m.scripts[string(script)] = w
	}
	m.mu.Unlock()
}

// Len is the number of watched scripts.
func (m *Matcher) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.scripts)
}

// prune forgets the scripts watched until before now.
func (m *Matcher) prune(now time.Time) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, w := range m.scripts {
		if w.until.Before(now) {
			delete(m.scripts, k)
			n++
		}
	}
	return n
}

// match calls fn for every output of txs that pays a watched script.
func (m *Matcher) match(txs []*wire.MsgTx, fn func(tx *wire.MsgTx, vout int, w *watch)) {
	type hit struct {
		tx   *wire.MsgTx
		vout int
		w    *watch
	}
	var hits []hit
	m.mu.RLock()
	for _, tx := range txs {
		for i, out := range tx.TxOut {
			if w := m.scripts[string(out.PkScript)]; w != nil {
				hits = append(hits, hit{tx, i, w})
			}
		}
	}
	m.mu.RUnlock()
	for _, h := range hits {
		fn(h.tx, h.vout, h.w)
	}
}

// MatchBlock decodes a serialized block and returns how many of its
// outputs pay a watched script: the watcher's per-block work, for
// benchmarks.
func (m *Matcher) MatchBlock(raw []byte) (int, error) {
	var block wire.MsgBlock
	if err := block.Deserialize(bytes.NewReader(raw)); err != nil {
		return 0, err
	}
	n := 0
	m.match(block.Transactions, func(*wire.MsgTx, int, *watch) { n++ })
	return n, nil
}
