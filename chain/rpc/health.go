package rpc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/btcsuite/btcd/chaincfg/chainhash"

	"github.com/kassapay/kassa"
)

// health is what the watcher last learned, for the health check.
type health struct {
	mu         sync.Mutex
	network    string
	kind       string
	seen       bool
	tip        int64
	best       chainhash.Hash
	syncing    bool
	isBehind   bool
	height     int64
	hash       chainhash.Hash
	err        string
	lastReorg  int64
	reverted   []string
	gapWarning []string
	// standby is set on a cluster's node while another node holds the
	// chain-watcher lease.
	standby bool
}

func (h *health) setStandby(b bool) {
	h.mu.Lock()
	h.standby = b
	h.mu.Unlock()
}

func (h *health) node(tip int64, best chainhash.Hash, syncing bool) {
	h.mu.Lock()
	h.seen, h.tip, h.best, h.syncing = true, tip, best, syncing
	h.mu.Unlock()
}

func (h *health) cursor(height int64, hash chainhash.Hash, reverted []string) {
	h.mu.Lock()
	h.height, h.hash = height, hash
	h.reverted = append([]string(nil), reverted...)
	h.mu.Unlock()
}

func (h *health) behind(b bool) {
	h.mu.Lock()
	h.isBehind = b
	h.mu.Unlock()
}

func (h *health) reorg(depth int64) {
	h.mu.Lock()
	h.lastReorg = depth
	h.mu.Unlock()
}

func (h *health) setErr(err error, conn Conn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil || errors.Is(err, errBranchMoved) {
		h.err = ""
		return
	}
	h.err = conn.redact(err.Error())
}

func (h *health) gapWarnings(w []string) {
	h.mu.Lock()
	h.gapWarning = w
	h.mu.Unlock()
}

// learnKind asks the node whether it is btcd or bitcoind, once: the
// watcher calls it after the node answered, so health never waits on
// an unreachable node.
func (h *health) learnKind(c *Chain) {
	if !h.kindUnknown() || c.client == nil {
		return
	}
	kind, err := c.client.kind()
	if err != nil {
		return
	}
	h.mu.Lock()
	h.kind = kind
	h.mu.Unlock()
}

// info reports what the watcher last learned; it does not call the node.
func (h *health) info() kassa.BackendInfo {
	h.mu.Lock()
	defer h.mu.Unlock()
	info := kassa.BackendInfo{
		Backend: "rpc", Network: h.network, Node: h.kind,
		Height: h.height, Error: h.err,
	}
	if h.standby {
		return info
	}
	if h.seen {
		info.NodeHeight = h.tip
		info.BestHash = h.best.String()
		info.Lag = max(h.tip-h.height, 0)
	}
	var warnings []string
	info.Synced = h.seen && h.err == "" && !h.syncing && !h.isBehind && info.Lag == 0
	if h.syncing {
		warnings = append(warnings, "the node is still syncing (initial block download): nothing settles until it is done")
	}
	if h.isBehind {
		warnings = append(warnings, fmt.Sprintf("the node (height %d) is behind the watcher's cursor (height %d): waiting for it to sync", h.tip, h.height))
	}
	if h.lastReorg > 0 {
		warnings = append(warnings, fmt.Sprintf("last chain reorganisation: %d blocks deep", h.lastReorg))
	}
	for _, id := range h.reverted {
		warnings = append(warnings, "ALERT: a reorg took confirmed payment "+id+" out of the chain; its invoice no longer counts it (see logs)")
	}
	warnings = append(warnings, h.gapWarning...)
	info.Warning = strings.Join(warnings, "; ")
	return info
}

// standbyInfo is the health of a cluster's node that does not hold the
// chain-watcher lease: how far the holder's saved cursor is behind the
// node's tip, read from the shared store and the node.
func (c *Chain) standbyInfo(ctx context.Context, info kassa.BackendInfo) kassa.BackendInfo {
	info.Warning = "standby: the chain watcher runs on the node holding the chain-watcher lease (see cluster.leases)"
	info.Height, info.Error = 0, ""
	if c.kv != nil {
		if raw, ok, err := c.kv.GetValue(ctx, c.stateKey()); err != nil {
			info.Error = "read the chain watcher's cursor: " + err.Error()
			return info
		} else if ok {
			var s savedState
			if json.Unmarshal(raw, &s) == nil {
				info.Height = s.Height
			}
		}
	}
	bi, err := c.node.GetBlockChainInfo()
	if err != nil {
		info.Error = c.conn.redact(c.nodeDown(err).Error())
		return info
	}
	info.NodeHeight, info.BestHash = int64(bi.Blocks), bi.BestBlockHash
	info.Lag = max(info.NodeHeight-info.Height, 0)
	info.Synced = !bi.InitialBlockDownload && bi.Headers <= bi.Blocks && info.Lag == 0 && info.Height > 0
	return info
}

func (h *health) kindUnknown() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.kind == ""
}

// gapTracker counts, per store, the addresses handed out after the last
// one that received a payment, against the store's gap limit.
type gapTracker struct {
	mu     sync.Mutex
	next   map[string]int64 // highest index handed out
	last   map[string]int64 // highest index that received a payment
	limits map[string]int64 // the store's gap limit, when not GapLimit
}

func (g *gapTracker) init() {
	g.next = make(map[string]int64)
	g.last = make(map[string]int64)
	g.limits = make(map[string]int64)
}

// setLimit records the gap limit of store st's wallet.
func (g *gapTracker) setLimit(st *kassa.Store) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if l := st.GapLimit(); l != GapLimit {
		g.limits[st.ID] = l
	} else {
		delete(g.limits, st.ID)
	}
}

func (g *gapTracker) limitLocked(store string) int64 {
	if l, ok := g.limits[store]; ok {
		return l
	}
	return GapLimit
}

func (g *gapTracker) restore(used map[string]int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for k, v := range used {
		g.last[k] = max(g.last[k], v)
	}
}

func (g *gapTracker) used() map[string]int64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := make(map[string]int64, len(g.last))
	for k, v := range g.last {
		out[k] = v
	}
	return out
}

// allocate records that index was handed out and returns a warning when
// the store now has more unused addresses in a row than its gap limit.
func (g *gapTracker) allocate(store string, index int64) string {
	if store == "" || index < 0 {
		return ""
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if prev, ok := g.next[store]; !ok || index > prev {
		g.next[store] = index
	}
	if limit := g.limitLocked(store); g.unusedLocked(store) == limit+1 {
		return fmt.Sprintf("%d consecutive addresses without a payment: a wallet restored from this xpub stops looking after %d; raise its gap limit", limit+1, limit)
	}
	return ""
}

func (g *gapTracker) use(store string, index int64) {
	if store == "" || index < 0 {
		return
	}
	g.mu.Lock()
	if last, ok := g.last[store]; !ok || index > last {
		g.last[store] = index
	}
	g.mu.Unlock()
}

func (g *gapTracker) unusedLocked(store string) int64 {
	next, ok := g.next[store]
	if !ok {
		return 0
	}
	last, ok := g.last[store]
	if !ok {
		last = -1
	}
	return next - last
}

func (g *gapTracker) warnings() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out []string
	for store := range g.next {
		if n, limit := g.unusedLocked(store), g.limitLocked(store); n > limit {
			out = append(out, fmt.Sprintf("store %s: %d consecutive derived addresses without a payment (its wallet scans %d): raise the wallet's gap limit", store, n, limit))
		}
	}
	sort.Strings(out)
	return out
}
