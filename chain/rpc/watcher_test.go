package rpc

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"go.opentelemetry.io/otel"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/kassapay/kassa"

	"github.com/btcsuite/btcd/wire"
)

func watchScript(c *Chain, address string, script []byte, confirmations int32) {
	c.matcher.add(script, &watch{address: address, index: -1, until: time.Now().Add(time.Hour), confirmations: confirmations})
}

func label(txid string) string { return txid[:8] + ":0" }

func TestPaymentSeenThenConfirmed(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 1)
	watchScript(c, addr, script, 2)

	tx := payment(1, script, 5000)
	id := label(tx.TxHash().String())
	node.send(tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 0")
	mustPass(t, w, r)
	expectEvents(t, r) // nothing new, nothing twice

	node.mine(2, tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 1")
	for i := range 7 {
		node.mine(int64(3 + i))
	}
	mustPass(t, w, r)
	// Reported up to depth 6 (the depth the simulator reports), once.
	expectEvents(t, r, id+" conf 6")
	if ev := r.events; len(ev) != 0 {
		t.Fatal(ev)
	}
}

// TestReorgWalkBack scripts the chain: a payment confirmed in a block
// that a reorg orphans goes back to the mempool, confirms on the new
// branch, and is dropped when another branch double-spends it although
// the node's mempool still lists it.
func TestReorgWalkBack(t *testing.T) {
	node := newScriptedNode()
	for i := range 5 {
		node.mine(int64(1 + i))
	}
	kv := &memKV{}
	c, w := newTestWatcher(t, node, kv)
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 2)
	watchScript(c, addr, script, 1)

	tx := payment(7, script, 5000)
	id := label(tx.TxHash().String())
	node.send(tx)
	node.mine(6, tx)
	node.mine(7)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 2")

	// The blocks 6 and 7 are orphaned by a longer branch without the
	// payment; the node returns it to the mempool.
	node.reorg(5, nil, nil, nil)
	node.send(tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 0")
	if w.st.height != 8 || w.st.hash != node.chain[8].BlockHash() {
		t.Fatalf("cursor at %d %s, want the new tip", w.st.height, w.st.hash)
	}

	// It confirms on the new branch.
	node.mine(9, tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" conf 1")

	// A deeper reorg replaces that block with one that spends the same
	// input elsewhere. The node keeps the old transaction in its mempool
	// (as btcd does after syncing a branch): the watcher checks the chain.
	conflict := payment(7, []byte{0x51}, 4000)
	node.reorg(8, []*wire.MsgTx{conflict}, nil)
	node.send(tx)
	mustPass(t, w, r)
	expectEvents(t, r, id+" dropped")
	node.mine(20)
	mustPass(t, w, r)
	expectEvents(t, r)
}

func TestReplacementToSameAddressAndDoubleSpend(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 3)
	watchScript(c, addr, script, 1)

	first := payment(9, script, 5000)
	node.send(first)
	mustPass(t, w, r)
	expectEvents(t, r, label(first.TxHash().String())+" conf 0")

	// A fee bump: same input, same address, less change.
	bump := payment(9, script, 5000)
	bump.TxOut[1].Value -= 1000
	node.drop(first)
	node.send(bump)
	mustPass(t, w, r)
	expectEvents(t, r, label(bump.TxHash().String())+" conf 0", label(first.TxHash().String())+" dropped rbf")

	// A double spend of the bump's input to elsewhere, mined.
	elsewhere := payment(9, []byte{0x51}, 5000)
	node.drop(bump)
	node.mine(2, elsewhere)
	mustPass(t, w, r)
	expectEvents(t, r, label(bump.TxHash().String())+" dropped")
}

// TestCursorWaitsForAcknowledgement: a refused event is delivered again,
// and the saved cursor does not pass it; a restart from the saved state
// finds it again.
func TestCursorWaitsForAcknowledgement(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	kv := &memKV{}
	c, w := newTestWatcher(t, node, kv)
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 4)
	watchScript(c, addr, script, 1)

	tx := payment(11, script, 5000)
	node.mine(2, tx)
	r.fail = errors.New("journal full")
	if err := w.pass(context.Background(), r.handle); err == nil {
		t.Fatal("pass with a refused event returned nil")
	}
	if saved := savedCursor(t, kv); saved != 1 {
		t.Fatalf("saved cursor at %d, want 1 (before the unacknowledged block)", saved)
	}

	// Restart from the saved state: the block is processed again.
	c2, w2 := newTestWatcher(t, node, kv)
	watchScript(c2, addr, script, 1)
	r2 := &recorder{}
	mustPass(t, w2, r2)
	expectEvents(t, r2, label(tx.TxHash().String())+" conf 1")
	if saved := savedCursor(t, kv); saved != 2 {
		t.Fatalf("saved cursor at %d, want 2", saved)
	}
}

func TestNodeDownAndBack(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 5)
	watchScript(c, addr, script, 1)

	node.down = true
	err := w.pass(context.Background(), r.handle)
	if err == nil {
		t.Fatal("pass against a down node returned nil")
	}
	c.health.setErr(err, c.conn)
	if info := c.Info(context.Background()); info.Synced || info.Error == "" {
		t.Fatalf("health while down: %+v", info)
	}
	tx := payment(12, script, 5000)
	node.down = false
	node.mine(2, tx)
	node.mine(3)
	mustPass(t, w, r)
	c.health.setErr(nil, c.conn)
	expectEvents(t, r, label(tx.TxHash().String())+" conf 2")
	if info := c.Info(context.Background()); !info.Synced || info.Height != 3 {
		t.Fatalf("health when back: %+v", info)
	}
}

func TestNothingSettlesDuringInitialBlockDownload(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	addr, script := testAddress(t, 6)
	watchScript(c, addr, script, 1)

	node.ibd = true
	tx := payment(13, script, 5000)
	node.mine(2, tx)
	mustPass(t, w, r)
	expectEvents(t, r)
	info := c.Info(context.Background())
	if info.Synced || !strings.Contains(info.Warning, "initial block download") || info.Height != 1 {
		t.Fatalf("health during IBD: %+v", info)
	}
	node.ibd = false
	mustPass(t, w, r)
	expectEvents(t, r, label(tx.TxHash().String())+" conf 1")
	if info := c.Info(context.Background()); !info.Synced || info.Warning != "" {
		t.Fatalf("health after IBD: %+v", info)
	}
}

func TestGapLimitWarning(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	seed := bytes.Repeat([]byte{7}, 32)
	master, err := hdkeychain.NewMaster(seed, testParams)
	if err != nil {
		t.Fatal(err)
	}
	tpub, _ := master.Neuter()
	store := &kassa.Store{ID: "store_gap", Xpub: tpub.String(), ConfirmationsRequired: 1}
	var last string
	for i := range GapLimit + 1 {
		store.NextAddressIndex = uint32(i)
		if last, err = c.NewAddress(context.Background(), store, "inv"); err != nil {
			t.Fatal(err)
		}
	}
	mustPass(t, w, r)
	c.health.gapWarnings(c.gap.warnings())
	if info := c.Info(context.Background()); !strings.Contains(info.Warning, "21 consecutive") {
		t.Fatalf("no gap warning after 21 unused addresses: %+v", info)
	}
	// A payment to the last address closes the gap.
	script, _ := scriptOf(last, testParams)
	node.send(payment(14, script, 5000))
	mustPass(t, w, r)
	c.health.gapWarnings(c.gap.warnings())
	if info := c.Info(context.Background()); info.Warning != "" {
		t.Fatalf("gap warning after a payment to the last address: %+v", info)
	}
}

// TestGapLimitWarningFollowsTheStore: a store whose wallet scans a
// longer gap (Store.WalletGapLimit) is warned about only past its own
// limit.
func TestGapLimitWarningFollowsTheStore(t *testing.T) {
	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	r := &recorder{}
	mustPass(t, w, r)
	master, err := hdkeychain.NewMaster(bytes.Repeat([]byte{9}, 32), testParams)
	if err != nil {
		t.Fatal(err)
	}
	tpub, _ := master.Neuter()
	store := &kassa.Store{ID: "store_gap50", Xpub: tpub.String(), ConfirmationsRequired: 1, WalletGapLimit: 50}
	next := func(n int) {
		t.Helper()
		for range n {
			if _, err := c.NewAddress(context.Background(), store, "inv"); err != nil {
				t.Fatal(err)
			}
			store.NextAddressIndex++
		}
		mustPass(t, w, r)
		c.health.gapWarnings(c.gap.warnings())
	}
	next(GapLimit + 1)
	if info := c.Info(context.Background()); info.Warning != "" {
		t.Fatalf("21 unused addresses of a store whose wallet scans 50: %+v", info)
	}
	next(50 - GapLimit)
	if info := c.Info(context.Background()); !strings.Contains(info.Warning, "51 consecutive") || !strings.Contains(info.Warning, "scans 50") {
		t.Fatalf("no gap warning after 51 unused addresses of a store whose wallet scans 50: %+v", info)
	}
}

// TestPaymentSpanLinksToItsBlock: the event of a payment found in a block
// is delivered in a span linked to that block's span, so the invoice
// actor's spans and the webhook they cause join it.
func TestPaymentSpanLinksToItsBlock(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	prev := otel.GetTracerProvider()
	otel.SetTracerProvider(tp)
	t.Cleanup(func() { otel.SetTracerProvider(prev) })

	node := newScriptedNode()
	node.mine(1)
	c, w := newTestWatcher(t, node, &memKV{})
	w.trace = tp.Tracer("test")
	var handled trace.SpanContext
	r := &recorder{}
	handle := func(ctx context.Context, ev kassa.ChainEvent) error {
		handled = trace.SpanContextFromContext(ctx)
		return r.handle(ctx, ev)
	}
	if err := w.pass(context.Background(), handle); err != nil {
		t.Fatal(err)
	}
	addr, script := testAddress(t, 8)
	watchScript(c, addr, script, 1)
	node.mine(2, payment(15, script, 5000))
	if err := w.pass(context.Background(), handle); err != nil {
		t.Fatal(err)
	}
	var block, pay sdktrace.ReadOnlySpan
	for _, s := range rec.Ended() {
		switch s.Name() {
		case "chain.Block":
			block = s
		case "chain.Payment":
			pay = s
		}
	}
	if block == nil || pay == nil {
		t.Fatalf("spans: block %v, payment %v", block, pay)
	}
	if pay.SpanContext().SpanID() != handled.SpanID() {
		t.Fatalf("the handler did not run in the payment's span")
	}
	if links := pay.Links(); len(links) != 1 || links[0].SpanContext.SpanID() != block.SpanContext().SpanID() {
		t.Fatalf("payment span links %v, want the block's span", pay.Links())
	}
}
