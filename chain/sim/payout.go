package sim

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/txscript"
	"github.com/btcsuite/btcd/wire"

	"github.com/kassapay/kassa"
)

// The simulated chain is also the service's wallet in simulation: it
// pays on-chain refund payouts as lnd's wallet does (actors.
// OnchainWallet), funding a transaction first and publishing it once
// the service recorded it. Its coins are not counted: it can pay any
// amount, at SimulatedNetworkFee.

// FundTx returns a transaction paying amount to address in its output
// 0, spending a made-up coin, without publishing it (it reserves
// nothing, so its key is not needed).
func (c *Chain) FundTx(ctx context.Context, _ string, address string, amount kassa.Sats) (kassa.OnchainTx, error) {
	if err := ctx.Err(); err != nil {
		return kassa.OnchainTx{}, err
	}
	if amount <= 0 || amount > kassa.MaxSats {
		return kassa.OnchainTx{}, fmt.Errorf("fund %d sats: %w", amount, ErrBadAmount)
	}
	addr, err := btcutil.DecodeAddress(address, Params)
	if err != nil || !addr.IsForNet(Params) {
		return kassa.OnchainTx{}, fmt.Errorf("fund to %q: %w", address, ErrNotRegtestAddress)
	}
	script, err := txscript.PayToAddrScript(addr)
	if err != nil {
		return kassa.OnchainTx{}, fmt.Errorf("fund to %q: %w", address, ErrNotRegtestAddress)
	}
	var prev chainhash.Hash
	if _, err := rand.Read(prev[:]); err != nil {
		return kassa.OnchainTx{}, err
	}
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&prev, 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(int64(amount), script))
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		return kassa.OnchainTx{}, err
	}
	return kassa.OnchainTx{Raw: hex.EncodeToString(buf.Bytes()), TxID: tx.TxHash().String(), Fee: SimulatedNetworkFee}, nil
}

// ReleaseTx does nothing: the simulated wallet reserves no coins.
func (c *Chain) ReleaseTx(context.Context, kassa.OnchainTx) error { return nil }

// PublishTx puts the transaction rawTx that FundTx made in the mempool
// and reports its payment; one the chain has seen before is left as it
// is.
func (c *Chain) PublishTx(ctx context.Context, rawTx, txid string) error {
	b, err := hex.DecodeString(rawTx)
	if err != nil {
		return kassa.Errorf(kassa.Invalid, "publish: the transaction is not hex")
	}
	var tx wire.MsgTx
	if err := tx.Deserialize(bytes.NewReader(b)); err != nil || len(tx.TxOut) == 0 {
		return kassa.Errorf(kassa.Invalid, "publish: not a transaction")
	}
	if tx.TxHash().String() != txid {
		return kassa.Errorf(kassa.Invalid, "publish: the transaction's id is not %s", txid)
	}
	_, addrs, _, err := txscript.ExtractPkScriptAddrs(tx.TxOut[0].PkScript, Params)
	if err != nil || len(addrs) != 1 {
		return kassa.Errorf(kassa.Invalid, "publish: the transaction pays no address")
	}
	c.mu.Lock()
	_, seen, err := c.store.Get(ctx, keyOutputPrefix+txid)
	c.mu.Unlock()
	if err != nil {
		return err
	}
	if seen {
		return nil
	}
	return c.put(ctx, txid, addrs[0].EncodeAddress(), kassa.Sats(tx.TxOut[0].Value))
}

// OnchainSpendable is what the simulated wallet may spend: any amount.
func (c *Chain) OnchainSpendable(context.Context) (kassa.Sats, error) { return kassa.MaxSats, nil }

// OnchainFee is the fee of every simulated transaction.
func (c *Chain) OnchainFee(context.Context, string, kassa.Sats) (kassa.Sats, error) {
	return SimulatedNetworkFee, nil
}
