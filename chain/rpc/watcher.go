package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/blockchain"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"
)

const (
	// recentBlocks is how many processed block hashes the watcher keeps to
	// find the fork of a reorg.
	recentBlocks = 288
	// trackDepth is how deep a payment's block must be before the watcher
	// forgets it: a reorg deeper than this is not followed.
	trackDepth = 100
	// minReportDepth is the depth up to which confirmations are reported
	// even when the invoice needs fewer, as the simulator does.
	minReportDepth = 6
	// maxBlocksPerPass bounds the blocks processed before the cursor is
	// saved, so that a long catch-up saves its progress.
	maxBlocksPerPass = 200
	// maxMempoolPerPass bounds the new mempool transactions fetched in
	// one pass (a mainnet mempool at first start holds hundreds of
	// thousands); the rest come in the next passes.
	maxMempoolPerPass = 5000
)

// errBranchMoved stops a block scan when the node switched branches
// under it; the next pass walks back.
var errBranchMoved = errors.New("the node switched branches during the scan")

// tracked is one output paying a watched address, followed from first
// sight until it is deep enough to be final.
type tracked struct {
	// Payment is what the chain says now (the state to report).
	Payment kassa.Payment `json:"payment"`
	// Reported is the last state the handler acknowledged; nil before.
	Reported  *kassa.Payment `json:"reported,omitempty"`
	BlockHash string         `json:"blockHash,omitempty"`
	// Inputs are the outpoints the transaction spends ("txid:vout").
	Inputs   []string `json:"inputs"`
	Required int32    `json:"required"`
	StoreID  string   `json:"storeId,omitempty"`
	Index    int64    `json:"index"`
	Seq      uint64   `json:"seq"`
	// DroppedAt is the cursor height when the payment was dropped.
	DroppedAt int64 `json:"droppedAt,omitempty"`
	// Orphaned is set while a payment whose block left the best chain
	// waits for the new branch to be scanned.
	Orphaned bool `json:"orphaned,omitempty"`
	// found is the span of the block or mempool pass that last changed
	// the payment; its event's span links to it.
	found trace.SpanContext
}

// reportDepth is the deepest confirmation count reported for t.
func (t *tracked) reportDepth() int32 { return max(t.Required, minReportDepth) }

// changed reports whether t has a state the handler has not acknowledged.
func (t *tracked) changed() bool {
	r := t.Reported
	p := &t.Payment
	return r == nil || r.Confirmations != p.Confirmations || r.Dropped != p.Dropped || r.ReplaceByFee != p.ReplaceByFee
}

// savedState is what the watcher persists: the cursor, the recent block
// hashes and the payments it follows.
type savedState struct {
	Network string `json:"network"`
	// Height and Hash are the cursor: the last block whose events were all
	// acknowledged.
	Height  int64            `json:"height"`
	Hash    string           `json:"hash"`
	Recent  []string         `json:"recent"`
	Tracked []*tracked       `json:"tracked"`
	Used    map[string]int64 `json:"used,omitempty"`
	Seq     uint64           `json:"seq"`
	// Reverted counts settled payments a reorg took out of the chain.
	Reverted []string `json:"reverted,omitempty"`
}

// chainState is the watcher's view, owned by the polling goroutine.
type chainState struct {
	height  int64
	hash    chainhash.Hash
	recent  []chainhash.Hash // recent[len-1] == hash, at height
	tracked map[string]*tracked
	// byTx finds the tracked outputs of a transaction.
	byTx map[chainhash.Hash][]*tracked
	// spent maps the outpoints spent by unconfirmed or shallow tracked
	// payments to them, to find replacements and double spends.
	spent map[wire.OutPoint][]*tracked
	seq   uint64
	// seen are the mempool txids already examined.
	seen     map[chainhash.Hash]bool
	reverted []string
}

func newChainState() *chainState {
	return &chainState{
		tracked: make(map[string]*tracked),
		byTx:    make(map[chainhash.Hash][]*tracked),
		spent:   make(map[wire.OutPoint][]*tracked),
		seen:    make(map[chainhash.Hash]bool),
	}
}

func (s *chainState) add(t *tracked) {
	s.tracked[t.Payment.ID] = t
	h, _ := chainhash.NewHashFromStr(t.Payment.TxID)
	if h != nil {
		s.byTx[*h] = append(s.byTx[*h], t)
	}
	for _, in := range t.Inputs {
		if op, err := parseOutPoint(in); err == nil {
			s.spent[op] = append(s.spent[op], t)
		}
	}
}

func (s *chainState) remove(t *tracked) {
	delete(s.tracked, t.Payment.ID)
	h, _ := chainhash.NewHashFromStr(t.Payment.TxID)
	if h != nil {
		s.byTx[*h] = without(s.byTx[*h], t)
		if len(s.byTx[*h]) == 0 {
			delete(s.byTx, *h)
		}
	}
	for _, in := range t.Inputs {
		if op, err := parseOutPoint(in); err == nil {
			s.spent[op] = without(s.spent[op], t)
			if len(s.spent[op]) == 0 {
				delete(s.spent, op)
			}
		}
	}
}

func without(list []*tracked, t *tracked) []*tracked {
	out := list[:0]
	for _, x := range list {
		if x != t {
			out = append(out, x)
		}
	}
	return out
}

func parseOutPoint(s string) (wire.OutPoint, error) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return wire.OutPoint{}, fmt.Errorf("bad outpoint %q", s)
	}
	h, err := chainhash.NewHashFromStr(s[:i])
	if err != nil {
		return wire.OutPoint{}, err
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 32)
	if err != nil {
		return wire.OutPoint{}, err
	}
	return wire.OutPoint{Hash: *h, Index: uint32(n)}, nil
}

// watcher follows the node. One goroutine runs its passes.
type watcher struct {
	c     *Chain
	node  Node
	log   *slog.Logger
	clock kassa.Clock
	trace trace.Tracer

	// kv keeps the cursor: the lease's fenced store under Watch; nil
	// means the Chain's own (Config.State).
	kv kassa.KeyValue

	st *chainState
	// dirty is set when the state changed since it was saved.
	dirty bool
}

// state is where the watcher keeps its cursor.
func (w *watcher) state() kassa.KeyValue {
	if w.kv != nil {
		return w.kv
	}
	return w.c.kv
}

// load reads the saved state; none means starting at the node's tip.
func (w *watcher) load(ctx context.Context) (bool, error) {
	w.st = newChainState()
	if w.state() == nil {
		return false, nil
	}
	raw, ok, err := w.state().GetValue(ctx, w.c.stateKey())
	if err != nil || !ok {
		return false, err
	}
	var s savedState
	if err := json.Unmarshal(raw, &s); err != nil {
		return false, fmt.Errorf("chain watcher state: %w", err)
	}
	if s.Network != w.c.conn.Network {
		return false, fmt.Errorf("chain watcher state is for %s, not %s", s.Network, w.c.conn.Network)
	}
	h, err := chainhash.NewHashFromStr(s.Hash)
	if err != nil {
		return false, fmt.Errorf("chain watcher cursor: %w", err)
	}
	w.st.height, w.st.hash = s.Height, *h
	for _, r := range s.Recent {
		rh, err := chainhash.NewHashFromStr(r)
		if err != nil {
			return false, fmt.Errorf("chain watcher state: %w", err)
		}
		w.st.recent = append(w.st.recent, *rh)
	}
	for _, t := range s.Tracked {
		w.st.add(t)
	}
	w.st.seq = s.Seq
	w.st.reverted = s.Reverted
	w.c.gap.restore(s.Used)
	return true, nil
}

// save writes the state. It is called only when every event is
// acknowledged, so the saved cursor never passes an unacknowledged event.
func (w *watcher) save(ctx context.Context) error {
	if w.state() == nil || !w.dirty {
		return nil
	}
	s := savedState{Network: w.c.conn.Network, Height: w.st.height, Hash: w.st.hash.String(), Seq: w.st.seq,
		Used: w.c.gap.used(), Reverted: w.st.reverted}
	for _, r := range w.st.recent {
		s.Recent = append(s.Recent, r.String())
	}
	s.Tracked = append(s.Tracked, w.sortedTracked()...)
	raw, err := json.Marshal(&s)
	if err != nil {
		return err
	}
	if err := w.state().PutValue(ctx, w.c.stateKey(), raw, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		return fmt.Errorf("save chain cursor: %w", err)
	}
	w.dirty = false
	return nil
}

func (w *watcher) sortedTracked() []*tracked {
	out := make([]*tracked, 0, len(w.st.tracked))
	for _, t := range w.st.tracked {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Seq < out[j].Seq })
	return out
}

// pass brings the watcher up to the node once: blocks first, then the
// mempool, then the events; it saves the state when every event was
// acknowledged. It returns the first error, after delivering what it can.
func (w *watcher) pass(ctx context.Context, handle func(context.Context, kassa.ChainEvent) error) error {
	info, err := w.node.GetBlockChainInfo()
	if err != nil {
		return w.c.nodeDown(err)
	}
	best, err := chainhash.NewHashFromStr(info.BestBlockHash)
	if err != nil {
		return fmt.Errorf("getblockchaininfo: best hash: %w", err)
	}
	tip := int64(info.Blocks)
	syncing := info.InitialBlockDownload || info.Headers > info.Blocks
	w.c.health.node(tip, *best, syncing)
	w.c.health.learnKind(w.c)
	if syncing {
		// Nothing settles from a node that is still catching up.
		return nil
	}
	// Every transaction up to this tip was sent after its invoice was
	// committed: what other nodes handed out by now is found here.
	if err := w.c.refreshShared(ctx); err != nil {
		return err
	}
	if len(w.st.recent) == 0 {
		w.begin(tip, *best)
	}

	ctx, span := w.trace.Start(ctx, "chain.Pass", trace.WithAttributes(attribute.Int64("chain.tip", tip)))
	defer span.End()

	scanErr := w.scan(ctx, tip, *best)
	if scanErr == nil {
		scanErr = w.scanMempool(ctx)
	}
	w.c.health.cursor(w.st.height, w.st.hash, w.st.reverted)
	delivered := w.deliver(ctx, handle)
	if scanErr != nil {
		return scanErr
	}
	if delivered != nil {
		return delivered
	}
	return w.save(ctx)
}

// begin sets the cursor of a watcher that never ran to the node's tip:
// payments before it are not for invoices of this service.
func (w *watcher) begin(tip int64, best chainhash.Hash) {
	w.st.height, w.st.hash = tip, best
	w.st.recent = []chainhash.Hash{best}
	w.dirty = true
	w.log.Info("chain watcher starts at the node's tip", "height", tip, "hash", best.String())
}

// beginNow sets and saves the first cursor at once when the node
// answers, so that a crash before the first pass cannot skip blocks.
func (w *watcher) beginNow(ctx context.Context) {
	info, err := w.node.GetBlockChainInfo()
	if err != nil || info.InitialBlockDownload || info.Headers > info.Blocks {
		return
	}
	best, err := chainhash.NewHashFromStr(info.BestBlockHash)
	if err != nil {
		return
	}
	w.begin(int64(info.Blocks), *best)
	if err := w.save(ctx); err != nil {
		w.log.Warn("save the first chain cursor", "err", err)
	}
}

// scan processes the blocks from the cursor to the node's tip, walking
// back first when the cursor left the best chain.
func (w *watcher) scan(ctx context.Context, tip int64, best chainhash.Hash) error {
	if best == w.st.hash {
		return nil
	}
	onBest, behind, err := w.cursorOnBest(tip)
	if err != nil {
		return err
	}
	if behind {
		// The node has not caught up with our cursor (restarted, syncing):
		// wait for it.
		w.c.health.behind(true)
		return nil
	}
	w.c.health.behind(false)
	if !onBest {
		if err := w.walkBack(ctx, tip); err != nil {
			return err
		}
	}
	processed := 0
	for w.st.height < tip && processed < maxBlocksPerPass {
		h := w.st.height + 1
		hash, err := w.node.GetBlockHash(h)
		if err != nil {
			return w.c.nodeDown(err)
		}
		block, err := w.node.GetBlock(hash)
		if err != nil {
			return w.c.nodeDown(err)
		}
		if block.Header.PrevBlock != w.st.hash {
			return errBranchMoved
		}
		w.block(ctx, h, *hash, block)
		processed++
	}
	w.verifyOrphans()
	return nil
}

// cursorOnBest reports whether the cursor's block is on the node's best
// chain, and whether the node is merely behind it (its tip is an ancestor
// of the cursor).
func (w *watcher) cursorOnBest(tip int64) (onBest, behind bool, err error) {
	if w.st.height <= tip {
		h, err := w.node.GetBlockHash(w.st.height)
		if err != nil {
			return false, false, w.c.nodeDown(err)
		}
		return *h == w.st.hash, false, nil
	}
	// The node's tip is below the cursor: if it is one of our recent
	// blocks, the node is behind; otherwise the best chain is shorter.
	h, err := w.node.GetBlockHash(tip)
	if err != nil {
		return false, false, w.c.nodeDown(err)
	}
	if r, ok := w.recentAt(tip); ok && r == *h {
		return false, true, nil
	}
	if _, ok := w.recentAt(tip); !ok {
		// Far below anything we know: a node that lost its chain and is
		// syncing again.
		return false, true, nil
	}
	return false, false, nil
}

func (w *watcher) recentAt(height int64) (chainhash.Hash, bool) {
	i := len(w.st.recent) - 1 - int(w.st.height-height)
	if i < 0 || i >= len(w.st.recent) {
		return chainhash.Hash{}, false
	}
	return w.st.recent[i], true
}

// walkBack finds the last block the cursor's branch shares with the
// node's best chain and undoes the confirmations of the blocks above it.
func (w *watcher) walkBack(ctx context.Context, tip int64) error {
	_, span := w.trace.Start(ctx, "chain.Reorg")
	defer span.End()
	fork := int64(-1)
	for i := len(w.st.recent) - 1; i >= 0; i-- {
		h := w.st.height - int64(len(w.st.recent)-1-i)
		if h > tip {
			continue
		}
		nh, err := w.node.GetBlockHash(h)
		if err != nil {
			return w.c.nodeDown(err)
		}
		if *nh == w.st.recent[i] {
			fork = h
			break
		}
	}
	if fork < 0 {
		err := fmt.Errorf("reorg deeper than the %d blocks the watcher remembers: its cursor at height %d (%s) is not on the node's chain; check the node's network",
			len(w.st.recent), w.st.height, w.st.hash)
		w.log.Error("chain watcher cannot follow a reorg", "err", err)
		return err
	}
	depth := w.st.height - fork
	w.log.Warn("chain reorganisation: walking back", "from", w.st.height, "fork", fork, "depth", depth)
	span.SetAttributes(attribute.Int64("chain.fork", fork), attribute.Int64("chain.depth", depth))
	for _, t := range w.st.tracked {
		if t.Payment.BlockHeight > fork {
			if t.Reported != nil && t.Reported.Confirmations > 0 && t.Reported.Confirmations >= t.Required {
				w.log.Error("reorg took a payment out of its block after it counted as confirmed",
					"txid", t.Payment.TxID, "address", t.Payment.Destination, "height", t.Payment.BlockHeight, "confirmations", t.Reported.Confirmations)
				w.st.reverted = appendCapped(w.st.reverted, t.Payment.ID)
			}
			t.Payment.BlockHeight = 0
			t.Payment.Confirmations = 0
			t.BlockHash = ""
			t.Orphaned = true
			t.found = span.SpanContext()
		}
	}
	w.st.recent = w.st.recent[:len(w.st.recent)-int(depth)]
	w.st.height, w.st.hash = fork, w.st.recent[len(w.st.recent)-1]
	w.c.health.reorg(depth)
	w.dirty = true
	return nil
}

func appendCapped(list []string, s string) []string {
	list = append(list, s)
	if len(list) > 20 {
		list = list[len(list)-20:]
	}
	return list
}

// block processes one block of the best chain at height.
func (w *watcher) block(ctx context.Context, height int64, hash chainhash.Hash, block *wire.MsgBlock) {
	_, span := w.trace.Start(ctx, "chain.Block", trace.WithAttributes(
		attribute.Int64("block.height", height), attribute.String("block.hash", hash.String()),
		attribute.Int("block.txs", len(block.Transactions))))
	defer span.End()
	st := w.st
	inBlock := make(map[chainhash.Hash]*wire.MsgTx)
	for _, tx := range block.Transactions {
		txid := tx.TxHash()
		inBlock[txid] = tx
		// A transaction that spends an input of a tracked payment other
		// than itself replaces it (or double-spends it) on the chain.
		if !blockchainIsCoinbase(tx) {
			for _, in := range tx.TxIn {
				for _, t := range st.spent[in.PreviousOutPoint] {
					if t.Payment.TxID != txid.String() && !t.Payment.Dropped {
						w.conflict(t, tx)
						t.found = span.SpanContext()
					}
				}
			}
		}
		// Outputs already tracked (seen in the mempool) are confirmed.
		for _, t := range st.byTx[txid] {
			t.Payment.BlockHeight = height
			t.BlockHash = hash.String()
			t.Payment.Dropped = false
			t.Orphaned = false
			t.found = span.SpanContext()
		}
	}
	w.c.matcher.match(block.Transactions, func(tx *wire.MsgTx, vout int, wa *watch) {
		id := tx.TxHash().String() + ":" + strconv.Itoa(vout)
		if st.tracked[id] != nil || tx.TxOut[vout].Value <= 0 {
			return // known, or a zero-value output that pays nothing
		}
		t := w.newTracked(tx, vout, wa)
		t.found = span.SpanContext()
		t.Payment.BlockHeight = height
		t.BlockHash = hash.String()
		t.Payment.NetworkFee, t.Payment.FeeRate = w.fee(tx, inBlock, nil)
		st.add(t)
		span.AddEvent("payment", trace.WithAttributes(attribute.String("payment.id", id)))
	})
	st.height, st.hash = height, hash
	st.recent = append(st.recent, hash)
	if len(st.recent) > recentBlocks {
		st.recent = append([]chainhash.Hash(nil), st.recent[len(st.recent)-recentBlocks:]...)
	}
	// Depths follow the cursor; payments deep enough are forgotten once
	// their last state was acknowledged.
	for _, t := range st.tracked {
		if t.Payment.Dropped {
			if t.DroppedAt == 0 {
				t.DroppedAt = height
			}
			if height-t.DroppedAt > trackDepth && !t.changed() {
				st.remove(t)
			}
			continue
		}
		t.DroppedAt = 0
		if t.Payment.BlockHeight == 0 {
			continue
		}
		depth := height - t.Payment.BlockHeight + 1
		if c := int32(min(depth, int64(t.reportDepth()))); c != t.Payment.Confirmations {
			t.Payment.Confirmations = c
			t.found = span.SpanContext()
		}
		if depth > trackDepth && !t.changed() {
			st.remove(t)
		}
	}
	w.dirty = true
}

func blockchainIsCoinbase(tx *wire.MsgTx) bool {
	return len(tx.TxIn) == 1 && tx.TxIn[0].PreviousOutPoint.Index == wire.MaxPrevOutIndex &&
		tx.TxIn[0].PreviousOutPoint.Hash == chainhash.Hash{}
}

// conflict marks t dropped because tx spends one of its inputs. When tx
// pays t's address too, it is a fee bump (RBF) and t is marked replaced.
func (w *watcher) conflict(t *tracked, tx *wire.MsgTx) {
	t.Payment.Dropped = true
	t.Payment.Confirmations = 0
	t.Payment.BlockHeight = 0
	t.BlockHash = ""
	t.Orphaned = false
	if script, err := scriptOf(t.Payment.Destination, w.c.conn.Params); err == nil {
		for _, out := range tx.TxOut {
			if bytes.Equal(out.PkScript, script) {
				t.Payment.ReplaceByFee = true
			}
		}
	}
	w.log.Warn("payment replaced or double-spent", "txid", t.Payment.TxID, "by", tx.TxHash().String(),
		"address", t.Payment.Destination, "rbf", t.Payment.ReplaceByFee)
	w.dirty = true
}

func (w *watcher) newTracked(tx *wire.MsgTx, vout int, wa *watch) *tracked {
	w.st.seq++
	txid := tx.TxHash().String()
	t := &tracked{
		Payment: kassa.Payment{
			ID: txid + ":" + strconv.Itoa(vout), Method: kassa.MethodOnchain,
			TxID: txid, Vout: uint32(vout), Amount: kassa.Sats(tx.TxOut[vout].Value),
			Destination: wa.address, ReceivedAt: w.clock.Now().UTC(),
		},
		Required: wa.confirmations, StoreID: wa.storeID, Index: wa.index, Seq: w.st.seq,
	}
	if !blockchainIsCoinbase(tx) {
		for _, in := range tx.TxIn {
			t.Inputs = append(t.Inputs, in.PreviousOutPoint.String())
		}
	}
	w.c.gap.use(wa.storeID, wa.index)
	w.log.Info("payment seen", "txid", txid, "vout", vout, "address", wa.address, "amount", int64(t.Payment.Amount))
	return t
}

// fee returns the network fee and fee rate (sat/vB) of tx when the values
// of its inputs can be found: in the same block, in the mempool
// (mempoolTx), or unspent on the chain. Without a transaction index the
// inputs of a confirmed transaction are often unknown: the fee is then 0.
func (w *watcher) fee(tx *wire.MsgTx, inBlock map[chainhash.Hash]*wire.MsgTx, mempoolTx map[chainhash.Hash]bool) (kassa.Sats, kassa.Sats) {
	if blockchainIsCoinbase(tx) {
		return 0, 0
	}
	var in int64
	for _, txIn := range tx.TxIn {
		op := txIn.PreviousOutPoint
		if prev := inBlock[op.Hash]; prev != nil && int(op.Index) < len(prev.TxOut) {
			in += prev.TxOut[op.Index].Value
			continue
		}
		if mempoolTx == nil {
			if v, ok := w.prevValue(op); ok {
				in += v
				continue
			}
			return 0, 0
		}
		if mempoolTx[op.Hash] {
			if v, ok := w.prevValue(op); ok {
				in += v
				continue
			}
			return 0, 0
		}
		out, err := w.node.GetTxOut(&op.Hash, op.Index, false)
		if err != nil || out == nil {
			return 0, 0
		}
		amt, err := btcutil.NewAmount(out.Value)
		if err != nil {
			return 0, 0
		}
		in += int64(amt)
	}
	var out int64
	for _, o := range tx.TxOut {
		out += o.Value
	}
	fee := in - out
	if fee < 0 {
		return 0, 0
	}
	vsize := (blockchain.GetTransactionWeight(btcutil.NewTx(tx)) + blockchain.WitnessScaleFactor - 1) / blockchain.WitnessScaleFactor
	rate := int64(0)
	if vsize > 0 {
		rate = (fee + vsize - 1) / vsize
	}
	return kassa.Sats(fee), kassa.Sats(rate)
}

// prevValue looks up the value of op through getrawtransaction, which
// finds mempool transactions on any node and confirmed ones on a node
// with a transaction index.
func (w *watcher) prevValue(op wire.OutPoint) (int64, bool) {
	prev, err := w.node.GetRawTransaction(&op.Hash)
	if err != nil || int(op.Index) >= len(prev.MsgTx().TxOut) {
		return 0, false
	}
	return prev.MsgTx().TxOut[op.Index].Value, true
}

// verifyOrphans settles the fate of payments whose block left the best
// chain and that the new branch did not confirm: still valid in the
// mempool, they go back to unconfirmed; otherwise they are dropped. The
// mempool alone is not trusted (a node syncing a longer branch may keep a
// transaction the branch double-spent): every input must still be unspent
// on the best chain, or be an output of another mempool transaction.
func (w *watcher) verifyOrphans() {
	var orphans []*tracked
	for _, t := range w.st.tracked {
		if t.Orphaned {
			orphans = append(orphans, t)
		}
	}
	if len(orphans) == 0 {
		return
	}
	pool, err := w.node.GetRawMempool()
	if err != nil {
		return // try again next pass; they stay orphaned
	}
	inPool := make(map[chainhash.Hash]bool, len(pool))
	for _, h := range pool {
		inPool[*h] = true
	}
	for _, t := range orphans {
		h, _ := chainhash.NewHashFromStr(t.Payment.TxID)
		ok := h != nil && inPool[*h] && w.inputsUnspent(t.Inputs, inPool)
		t.Orphaned = false
		if !ok {
			t.Payment.Dropped = true
			w.log.Warn("payment left the chain with its block and is gone", "txid", t.Payment.TxID, "address", t.Payment.Destination)
		} else {
			w.log.Warn("payment left the chain with its block; back in the mempool", "txid", t.Payment.TxID, "address", t.Payment.Destination)
		}
		w.dirty = true
	}
}

// inputsUnspent reports whether every input is unspent on the best chain
// or an output of a transaction in the mempool.
func (w *watcher) inputsUnspent(inputs []string, inPool map[chainhash.Hash]bool) bool {
	for _, in := range inputs {
		op, err := parseOutPoint(in)
		if err != nil {
			return false
		}
		if inPool[op.Hash] {
			continue
		}
		out, err := w.node.GetTxOut(&op.Hash, op.Index, false)
		if err != nil || out == nil {
			return false
		}
	}
	return true
}

// scanMempool examines the transactions that entered the mempool since
// the last pass.
func (w *watcher) scanMempool(ctx context.Context) error {
	pool, err := w.node.GetRawMempool()
	if err != nil {
		return w.c.nodeDown(err)
	}
	// Likewise for the transactions in this mempool list.
	if err := w.c.refreshShared(ctx); err != nil {
		return err
	}
	_, span := w.trace.Start(ctx, "chain.Mempool", trace.WithAttributes(attribute.Int("mempool.size", len(pool))))
	defer span.End()
	st := w.st
	inPool := make(map[chainhash.Hash]bool, len(pool))
	for _, h := range pool {
		inPool[*h] = true
	}
	var fresh []*wire.MsgTx
	fetched := 0
	for _, h := range pool {
		if st.seen[*h] {
			continue
		}
		if fetched >= maxMempoolPerPass {
			w.c.Wake() // more to read: the next pass comes at once
			break
		}
		fetched++
		st.seen[*h] = true
		if len(st.byTx[*h]) > 0 {
			continue // already tracked
		}
		tx, err := w.node.GetRawTransaction(h)
		if err != nil {
			continue // left the mempool meanwhile
		}
		fresh = append(fresh, tx.MsgTx())
	}
	for h := range st.seen {
		if !inPool[h] {
			delete(st.seen, h)
		}
	}
	// Replacements: a new transaction spending an input of a tracked
	// unconfirmed payment replaces it.
	for _, tx := range fresh {
		txid := tx.TxHash().String()
		for _, in := range tx.TxIn {
			for _, t := range st.spent[in.PreviousOutPoint] {
				if t.Payment.TxID != txid && !t.Payment.Dropped && t.Payment.BlockHeight == 0 {
					w.conflict(t, tx)
					t.found = span.SpanContext()
				}
			}
		}
	}
	w.c.matcher.match(fresh, func(tx *wire.MsgTx, vout int, wa *watch) {
		id := tx.TxHash().String() + ":" + strconv.Itoa(vout)
		if st.tracked[id] != nil || tx.TxOut[vout].Value <= 0 {
			return // known, or a zero-value output that pays nothing
		}
		t := w.newTracked(tx, vout, wa)
		// The mempool's word is checked against the chain: a transaction
		// whose inputs the best chain already spent is ignored.
		if !w.inputsUnspent(t.Inputs, inPool) {
			w.log.Warn("mempool transaction conflicts with the best chain; ignored", "txid", t.Payment.TxID, "address", wa.address)
			return
		}
		t.Payment.NetworkFee, t.Payment.FeeRate = w.fee(tx, nil, inPool)
		t.found = span.SpanContext()
		st.add(t)
		span.AddEvent("payment", trace.WithAttributes(attribute.String("payment.id", id)))
		w.dirty = true
	})
	// Unconfirmed payments that left the mempool without a block or a
	// replacement we saw are gone (evicted, or replaced by a transaction
	// that confirmed in a block we have not scanned yet: the next pass
	// finds it and the block confirms or replaces it again).
	best, err := w.node.GetBestBlockHash()
	if err == nil && *best == st.hash {
		for _, t := range st.tracked {
			if t.Payment.BlockHeight != 0 || t.Payment.Dropped || t.Orphaned {
				continue
			}
			h, _ := chainhash.NewHashFromStr(t.Payment.TxID)
			if h != nil && !inPool[*h] {
				t.Payment.Dropped = true
				w.log.Warn("unconfirmed payment left the mempool", "txid", t.Payment.TxID, "address", t.Payment.Destination)
				w.dirty = true
			}
		}
	}
	return nil
}

// deliver hands every unacknowledged state to handle, oldest payment
// first. It returns the first error; the others are still tried.
func (w *watcher) deliver(ctx context.Context, handle func(context.Context, kassa.ChainEvent) error) error {
	var first error
	// New and deeper payments first, then the drops: a replacement is
	// recorded before the payment it replaces is taken away, so the
	// invoice does not fall back to New in between.
	all := w.sortedTracked()
	ordered := make([]*tracked, 0, len(all))
	for _, t := range all {
		if !t.Payment.Dropped {
			ordered = append(ordered, t)
		}
	}
	for _, t := range all {
		if t.Payment.Dropped {
			ordered = append(ordered, t)
		}
	}
	for _, t := range ordered {
		if !t.changed() {
			continue
		}
		if t.Reported == nil && t.Payment.Dropped {
			// Never reported: nothing to take back.
			w.st.remove(t)
			w.dirty = true
			continue
		}
		p := t.Payment
		ev := kassa.ChainEvent{Address: p.Destination, Payment: p, Dropped: p.Dropped}
		// The event's span links to the block or mempool pass that found
		// it; the invoice actor's spans are its children.
		opts := []trace.SpanStartOption{trace.WithAttributes(
			attribute.String("payment.id", p.ID), attribute.Int("payment.confirmations", int(p.Confirmations)),
			attribute.Bool("payment.dropped", p.Dropped))}
		if t.found.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: t.found}))
		}
		evCtx, span := w.trace.Start(ctx, "chain.Payment", opts...)
		err := handle(evCtx, ev)
		span.End()
		if err != nil {
			if first == nil {
				first = fmt.Errorf("payment %s: %w", p.ID, err)
			}
			continue
		}
		t.Reported = &p
		w.dirty = true
	}
	return first
}

// wakeable sleeps until d passed, ctx ended or wake fired.
func wakeable(ctx context.Context, d time.Duration, wake <-chan struct{}) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-ctx.Done():
	case <-timer.C:
	case <-wake:
	}
}

var tracer = otel.Tracer("github.com/kassapay/kassa/chain/rpc")
