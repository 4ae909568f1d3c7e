package harness

import (
	"bytes"
	"sync"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"
)

// coinbaseMaturity is how deep a coinbase must be before it can be spent.
const coinbaseMaturity = 100

// Wallet is a test wallet with one key: it receives the coinbase of the
// blocks mined by nodes started with its Address as MiningAddr, and pays
// with signed P2WPKH transactions. It spends only coinbase outputs, one
// per payment, so that payments never depend on each other.
type Wallet struct {
	params *chaincfg.Params
	key    *btcec.PrivateKey
	addr   *btcutil.AddressWitnessPubKeyHash
	script []byte

	mu    sync.Mutex
	spent map[wire.OutPoint]bool
}

// Coin is an output the wallet owns.
type Coin struct {
	OutPoint wire.OutPoint
	Value    int64
}

// NewWallet returns a wallet with a fresh key for params' network.
func NewWallet(t T, params *chaincfg.Params) *Wallet {
	t.Helper()
	key, err := btcec.NewPrivateKey()
	if err != nil {
		t.Fatalf("wallet key: %v", err)
	}
	return walletOf(t, key, params)
}

// WalletFromKey returns the wallet of a 32-byte private key.
func WalletFromKey(t T, secret []byte, params *chaincfg.Params) *Wallet {
	t.Helper()
	key, _ := btcec.PrivKeyFromBytes(secret)
	return walletOf(t, key, params)
}

func walletOf(t T, key *btcec.PrivateKey, params *chaincfg.Params) *Wallet {
	addr, err := btcutil.NewAddressWitnessPubKeyHash(btcutil.Hash160(key.PubKey().SerializeCompressed()), params)
	if err != nil {
		t.Fatalf("wallet address: %v", err)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		t.Fatalf("wallet script: %v", err)
	}
	return &Wallet{params: params, key: key, addr: addr, script: script, spent: make(map[wire.OutPoint]bool)}
}

// Address is the wallet's address, for a node's MiningAddr.
func (w *Wallet) Address() string { return w.addr.EncodeAddress() }

// Coin returns an unspent mature coinbase output of the wallet on n's best
// chain and reserves it, so that the next call returns another one.
func (w *Wallet) Coin(t T, n *Node) Coin {
	t.Helper()
	tip := n.Height()
	for h := int64(1); h <= tip-coinbaseMaturity; h++ {
		hash, err := n.Client.GetBlockHash(h)
		if err != nil {
			t.Fatalf("getblockhash %d: %v", h, err)
		}
		block, err := n.Client.GetBlock(hash)
		if err != nil {
			t.Fatalf("getblock %d: %v", h, err)
		}
		cb := block.Transactions[0]
		for i, out := range cb.TxOut {
			if !bytes.Equal(out.PkScript, w.script) {
				continue
			}
			op := wire.OutPoint{Hash: cb.TxHash(), Index: uint32(i)}
			w.mu.Lock()
			used := w.spent[op]
			if !used {
				w.spent[op] = true
			}
			w.mu.Unlock()
			if !used {
				return Coin{OutPoint: op, Value: out.Value}
			}
		}
	}
	t.Fatalf("the wallet has no mature coinbase left below height %d: mine more blocks", tip-coinbaseMaturity)
	return Coin{}
}

// Output is an amount to an address.
type Output struct {
	Address string
	Amount  int64 // sats
}

// Build returns a transaction that spends coins and pays outs, with its
// change back to the wallet, at feeRate sat/vB. Every input signals
// replaceability (BIP125).
func (w *Wallet) Build(t T, coins []Coin, outs []Output, feeRate int64) *wire.MsgTx {
	t.Helper()
	tx := wire.NewMsgTx(2)
	var in int64
	prev := txscript.NewMultiPrevOutFetcher(nil)
	for _, c := range coins {
		txIn := wire.NewTxIn(&c.OutPoint, nil, nil)
		txIn.Sequence = wire.MaxTxInSequenceNum - 2
		tx.AddTxIn(txIn)
		in += c.Value
		prev.AddPrevOut(c.OutPoint, wire.NewTxOut(c.Value, w.script))
	}
	var out int64
	for _, o := range outs {
		addr, err := btcutil.DecodeAddress(o.Address, w.params)
		if err != nil {
			t.Fatalf("pay to %q: %v", o.Address, err)
		}
		script, err := txscript.PayToAddrScript(addr)
		if err != nil {
			t.Fatalf("pay to %q: %v", o.Address, err)
		}
		tx.AddTxOut(wire.NewTxOut(o.Amount, script))
		out += o.Amount
	}
	change := wire.NewTxOut(0, w.script)
	tx.AddTxOut(change)
	// A P2WPKH input is 68 vB, an output 31-43 vB, the rest 11 vB.
	vsize := int64(11 + 68*len(coins) + 43*len(tx.TxOut))
	fee := vsize * feeRate
	change.Value = in - out - fee
	if change.Value < 1000 {
		t.Fatalf("coins of %d sat cannot pay %d sat and a fee of %d", in, out, fee)
	}
	sigHashes := txscript.NewTxSigHashes(tx, prev)
	for i, c := range coins {
		wit, err := txscript.WitnessSignature(tx, sigHashes, i, c.Value, w.script, txscript.SigHashAll, w.key, true)
		if err != nil {
			t.Fatalf("sign input %d: %v", i, err)
		}
		tx.TxIn[i].Witness = wit
	}
	return tx
}

// Send broadcasts tx through n and returns its id.
func (w *Wallet) Send(t T, n *Node, tx *wire.MsgTx) chainhash.Hash {
	t.Helper()
	id, err := n.Client.SendRawTransaction(tx, true)
	if err != nil {
		t.Fatalf("sendrawtransaction: %v", err)
	}
	return *id
}

// Pay spends one fresh coin to outs at 2 sat/vB through n and returns the
// transaction.
func (w *Wallet) Pay(t T, n *Node, outs ...Output) *wire.MsgTx {
	t.Helper()
	tx := w.Build(t, []Coin{w.Coin(t, n)}, outs, 2)
	w.Send(t, n, tx)
	return tx
}
