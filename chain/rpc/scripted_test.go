package rpc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	"github.com/kassapay/kassa"
)

// scriptedNode is a node whose chain the test writes block by block. It
// answers the watcher's calls from its best chain and mempool; a reorg
// is a call of setChain with another list of blocks.
type scriptedNode struct {
	mu      sync.Mutex
	chain   []*wire.MsgBlock // chain[h] is the block at height h
	mempool []*wire.MsgTx
	// down makes every call fail, like an unreachable node.
	down bool
	// ibd makes the node report initial block download.
	ibd bool
}

var errDown = errors.New("connection refused")

func newScriptedNode() *scriptedNode {
	n := &scriptedNode{}
	n.chain = []*wire.MsgBlock{block(chainhash.Hash{}, 0)}
	return n
}

// block returns a block on prev with a coinbase marked by tag and txs.
func block(prev chainhash.Hash, tag int64, txs ...*wire.MsgTx) *wire.MsgBlock {
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{}, wire.MaxPrevOutIndex), []byte{byte(tag), byte(tag >> 8), 0x51}, nil))
	cb.AddTxOut(wire.NewTxOut(50e8, []byte{0x51}))
	b := wire.NewMsgBlock(wire.NewBlockHeader(1, &prev, &chainhash.Hash{}, 0, uint32(tag)))
	b.AddTransaction(cb)
	for _, tx := range txs {
		b.AddTransaction(tx)
	}
	return b
}

// mine appends a block with txs to the best chain and takes them out of
// the mempool.
func (n *scriptedNode) mine(tag int64, txs ...*wire.MsgTx) chainhash.Hash {
	n.mu.Lock()
	defer n.mu.Unlock()
	b := block(n.chain[len(n.chain)-1].BlockHash(), tag, txs...)
	n.chain = append(n.chain, b)
	keep := n.mempool[:0]
	for _, m := range n.mempool {
		found := false
		for _, tx := range txs {
			found = found || tx.TxHash() == m.TxHash()
		}
		if !found {
			keep = append(keep, m)
		}
	}
	n.mempool = keep
	return b.BlockHash()
}

// reorg cuts the best chain above height and mines blocks with txs on
// the fork; the mempool is left as it is, as btcd leaves it.
func (n *scriptedNode) reorg(height int64, blocks ...[]*wire.MsgTx) {
	n.mu.Lock()
	n.chain = n.chain[:height+1]
	n.mu.Unlock()
	for i, txs := range blocks {
		n.mine(1000+height*10+int64(i), txs...)
	}
}

func (n *scriptedNode) send(tx *wire.MsgTx) {
	n.mu.Lock()
	n.mempool = append(n.mempool, tx)
	n.mu.Unlock()
}

func (n *scriptedNode) drop(tx *wire.MsgTx) {
	n.mu.Lock()
	defer n.mu.Unlock()
	for i, m := range n.mempool {
		if m.TxHash() == tx.TxHash() {
			n.mempool = append(n.mempool[:i], n.mempool[i+1:]...)
			return
		}
	}
}

func (n *scriptedNode) GetBlockChainInfo() (*btcjson.GetBlockChainInfoResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	tip := len(n.chain) - 1
	return &btcjson.GetBlockChainInfoResult{Blocks: int32(tip), Headers: int32(tip), BestBlockHash: n.chain[tip].BlockHash().String(), InitialBlockDownload: n.ibd}, nil
}

func (n *scriptedNode) GetBestBlockHash() (*chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	h := n.chain[len(n.chain)-1].BlockHash()
	return &h, nil
}

func (n *scriptedNode) GetBlockHash(height int64) (*chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	if height < 0 || height >= int64(len(n.chain)) {
		return nil, fmt.Errorf("block height %d out of range", height)
	}
	h := n.chain[height].BlockHash()
	return &h, nil
}

func (n *scriptedNode) GetBlock(hash *chainhash.Hash) (*wire.MsgBlock, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	for _, b := range n.chain {
		if b.BlockHash() == *hash {
			return b, nil
		}
	}
	return nil, fmt.Errorf("block %s not found", hash)
}

func (n *scriptedNode) GetRawMempool() ([]*chainhash.Hash, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	var out []*chainhash.Hash
	for _, tx := range n.mempool {
		h := tx.TxHash()
		out = append(out, &h)
	}
	return out, nil
}

func (n *scriptedNode) GetRawTransaction(hash *chainhash.Hash) (*btcutil.Tx, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	for _, tx := range n.mempool {
		if tx.TxHash() == *hash {
			return btcutil.NewTx(tx), nil
		}
	}
	return nil, errors.New("no such mempool transaction")
}

// GetTxOut answers for outputs of the scripted "funding" transactions
// (any hash not in the chain): unspent unless a best-chain block spends
// them.
func (n *scriptedNode) GetTxOut(hash *chainhash.Hash, index uint32, mempool bool) (*btcjson.GetTxOutResult, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down {
		return nil, errDown
	}
	op := wire.OutPoint{Hash: *hash, Index: index}
	for _, b := range n.chain {
		for _, tx := range b.Transactions {
			for _, in := range tx.TxIn {
				if in.PreviousOutPoint == op {
					return nil, nil
				}
			}
		}
	}
	return &btcjson.GetTxOutResult{Value: 1}, nil
}

// memKV is a KeyValue in memory.
type memKV struct {
	mu sync.Mutex
	m  map[string][]byte
}

func (k *memKV) GetValue(_ context.Context, key string) ([]byte, bool, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	v, ok := k.m[key]
	return v, ok, nil
}

func (k *memKV) PutValue(_ context.Context, key string, value []byte, _ time.Time) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = make(map[string][]byte)
	}
	k.m[key] = append([]byte(nil), value...)
	return nil
}

// recorder collects the events the watcher delivers; fail makes the
// handler refuse them.
type recorder struct {
	events []kassa.ChainEvent
	fail   error
}

func (r *recorder) handle(_ context.Context, ev kassa.ChainEvent) error {
	if r.fail != nil {
		return r.fail
	}
	r.events = append(r.events, ev)
	return nil
}

// take returns the events since the last call as "txid:vout conf N" or
// "… dropped" lines.
func (r *recorder) take() []string {
	var out []string
	for _, ev := range r.events {
		label := fmt.Sprintf("%s:%d", ev.Payment.TxID[:8], ev.Payment.Vout)
		s := fmt.Sprintf("%s conf %d", label, ev.Payment.Confirmations)
		if ev.Dropped {
			s = label + " dropped"
			if ev.Payment.ReplaceByFee {
				s += " rbf"
			}
		}
		out = append(out, s)
	}
	r.events = nil
	return out
}

var testParams = &chaincfg.RegressionNetParams

// testAddress is a regtest P2WPKH address and its script.
func testAddress(t *testing.T, seed byte) (string, []byte) {
	t.Helper()
	program := make([]byte, 20)
	for i := range program {
		program[i] = seed
	}
	addr, err := btcutil.NewAddressWitnessPubKeyHash(program, testParams)
	if err != nil {
		t.Fatal(err)
	}
	script, err := scriptOf(addr.EncodeAddress(), testParams)
	if err != nil {
		t.Fatal(err)
	}
	return addr.EncodeAddress(), script
}

// payment returns a transaction spending funding output (fund, 0) that
// pays amount to script and the rest elsewhere.
func payment(fund byte, script []byte, amount int64) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	var h chainhash.Hash
	h[0] = fund
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&h, 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(amount, script))
	change := append([]byte{0x00, 0x14}, bytes.Repeat([]byte{fund + 100}, 20)...)
	tx.AddTxOut(wire.NewTxOut(1e8-amount-500, change))
	return tx
}

// newTestWatcher returns a Chain over node and its watcher, started at
// the node's tip with one pass.
func newTestWatcher(t *testing.T, node Node, kv kassa.KeyValue) (*Chain, *watcher) {
	t.Helper()
	c, err := New(Config{Conn: Conn{Network: "regtest", Params: testParams, Poll: time.Second}, Node: node, State: kv, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	w := &watcher{c: c, node: node, log: c.log, clock: c.clock, trace: tracer}
	if _, err := w.load(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c, w
}

func mustPass(t *testing.T, w *watcher, r *recorder) {
	t.Helper()
	if err := w.pass(context.Background(), r.handle); err != nil {
		t.Fatalf("pass: %v", err)
	}
}

func expectEvents(t *testing.T, r *recorder, want ...string) {
	t.Helper()
	got := r.take()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
}

func savedCursor(t *testing.T, kv *memKV) int64 {
	t.Helper()
	raw, ok, _ := kv.GetValue(context.Background(), "chain/rpc/regtest")
	if !ok {
		return -1
	}
	var s savedState
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatal(err)
	}
	return s.Height
}
