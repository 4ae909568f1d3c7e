package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/btcsuite/btcd/btcutil/hdkeychain"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"

	chainrpc "github.com/kassapay/kassa/chain/rpc"
	"github.com/kassapay/kassa/kassatest/harness"
)

// benchChain prints the chain watcher's figures: matching one block of
// 5,000 outputs against 1,000,000 watched scripts (decoding included),
// and the time from a block that confirms a payment to the Settled
// webhook, on a real btcd in regtest.
func benchChain(ctx context.Context, payments int) error {
	if err := benchBlockMatch(); err != nil {
		return err
	}
	return benchBlockToSettled(payments)
}

func benchBlockMatch() error {
	const watched, outputs = 1_000_000, 5_000
	m := chainrpc.NewMatcher()
	until := time.Now().Add(time.Hour)
	scripts := make([][]byte, 0, watched)
	for i := range watched {
		s := make([]byte, 22)
		s[0], s[1] = 0x00, 0x14
		binary.BigEndian.PutUint64(s[2:], uint64(i)*0x9e3779b97f4a7c15)
		binary.BigEndian.PutUint64(s[10:], uint64(i))
		scripts = append(scripts, s)
		m.Watch(s, "addr"+strconv.Itoa(i), until)
	}
	// A block of 1,000 transactions with 5 outputs each; one output in
	// fifty pays a watched script.
	block := wire.NewMsgBlock(wire.NewBlockHeader(1, &chainhash.Hash{}, &chainhash.Hash{}, 0, 0))
	for i := 0; i < outputs/5; i++ {
		tx := wire.NewMsgTx(2)
		var prev chainhash.Hash
		_, _ = rand.Read(prev[:])
		tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&prev, 0), nil, [][]byte{make([]byte, 72), make([]byte, 33)}))
		for j := range 5 {
			out := make([]byte, 22)
			out[0], out[1] = 0x00, 0x14
			_, _ = rand.Read(out[2:])
			if (i*5+j)%50 == 0 {
				out = scripts[(i*5+j)*97%watched]
			}
			tx.AddTxOut(wire.NewTxOut(int64(1000+j), out))
		}
		block.AddTransaction(tx)
	}
	var buf bytes.Buffer
	if err := block.Serialize(&buf); err != nil {
		return err
	}
	raw := buf.Bytes()
	var times []float64
	for range 30 {
		start := time.Now()
		n, err := m.MatchBlock(raw)
		if err != nil {
			return err
		}
		times = append(times, float64(time.Since(start).Microseconds())/1000)
		if n != outputs/50 {
			return fmt.Errorf("matched %d outputs, want %d", n, outputs/50)
		}
	}
	slices.Sort(times)
	bench("chain_block_match_ms", times[len(times)/2], "ms")
	bench("chain_block_match_max_ms", times[len(times)-1], "ms")
	return nil
}

// benchBlockToSettled pays invoices on a real btcd and measures, for
// each, the time from the block that confirms the payment to the
// Settled webhook. Kassa polls at the regtest default (2 s); btcd's
// websocket notifications wake it early.
func benchBlockToSettled(payments int) (err error) {
	t := &harness.Process{}
	defer t.Close()
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("chain bench: %v", r)
		}
	}()
	w := harness.NewWallet(t, harness.ParamsOf("regtest"))
	node := harness.StartNode(t, harness.NodeConfig{MiningAddr: w.Address()})
	node.Mine(100 + payments)
	k := harness.StartKassa(t, "", "--chain", node.URL())
	seed := make([]byte, 32)
	_, _ = rand.Read(seed)
	master, err := hdkeychain.NewMaster(seed, &chaincfg.RegressionNetParams)
	if err != nil {
		return err
	}
	xpub, err := master.Neuter()
	if err != nil {
		return err
	}
	store := k.CreateStore("--name", "Bench", "--xpub", xpub.String(), "--confirmations", "1")
	hooks := k.ListenWebhooks(store)
	var times []float64
	for range payments {
		inv := k.CreateInvoice(store, 50_000)
		w.Pay(t, node, harness.Output{Address: inv.OnchainAddress, Amount: 50_000})
		hooks.Wait(inv.ID, "Processing")
		node.Mine(1)
		mined := time.Now()
		ev := hooks.Wait(inv.ID, "Settled")
		times = append(times, float64(ev.At.Sub(mined).Microseconds())/1000)
	}
	slices.Sort(times)
	bench("chain_block_to_settled_ms_p50", times[len(times)/2], "ms")
	bench("chain_block_to_settled_ms_p99", times[min(len(times)-1, len(times)*99/100)], "ms")
	return nil
}
