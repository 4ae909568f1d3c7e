package lnd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"

	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/walletrpc"
)

// WalletRPC is the part of lnd's interface that pays on-chain refund
// payouts and tells what the node can pay: lnd's wallet (walletrpc) and
// its balances. Dial's RPC implements it.
type WalletRPC interface {
	ListChannels(ctx context.Context, in *lnrpc.ListChannelsRequest) (*lnrpc.ListChannelsResponse, error)
	WalletBalance(ctx context.Context) (*lnrpc.WalletBalanceResponse, error)
	EstimateFee(ctx context.Context, in *lnrpc.EstimateFeeRequest) (*lnrpc.EstimateFeeResponse, error)
	GetTransactions(ctx context.Context) (*lnrpc.TransactionDetails, error)
	FundPsbt(ctx context.Context, in *walletrpc.FundPsbtRequest) (*walletrpc.FundPsbtResponse, error)
	FinalizePsbt(ctx context.Context, in *walletrpc.FinalizePsbtRequest) (*walletrpc.FinalizePsbtResponse, error)
	PublishTransaction(ctx context.Context, in *walletrpc.Transaction) (*walletrpc.PublishResponse, error)
	ReleaseOutput(ctx context.Context, in *walletrpc.ReleaseOutputRequest) error
	ListLeases(ctx context.Context) ([]*walletrpc.UtxoLease, error)
}

// PayoutTargetConf is the confirmation target, in blocks, of the fee of
// an on-chain payout's transaction.
const PayoutTargetConf = 6

// payoutLock is how long lnd keeps the inputs of a funded payout
// transaction for it, in seconds: a week, so that the transaction a
// crash left recorded but unpublished can still be published after the
// restart.
const payoutLock = 7 * 24 * 3600

func (n *Node) wallet() (WalletRPC, error) {
	w, ok := n.rpc.(WalletRPC)
	if !ok {
		return nil, kassa.Errorf(kassa.Unavailable, "this lnd connection has no wallet interface")
	}
	return w, nil
}

// lndErr is err of an lnd call: Unavailable when lnd could not be
// reached or did not answer in time, so that the caller tries again.
func lndErr(call string, err error) error {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Aborted:
		return kassa.Errorf(kassa.Unavailable, "lnd %s: %s", call, grpcMessage(err))
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return kassa.Errorf(kassa.Unavailable, "lnd %s: %v", call, err)
	}
	return kassa.Errorf(kassa.Conflict, "lnd %s: %s", call, grpcMessage(err))
}

// LightningSendable is what lnd's active channels can send now: their
// local balances above their reserves.
func (n *Node) LightningSendable(ctx context.Context) (kassa.Sats, error) {
	w, err := n.wallet()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	r, err := w.ListChannels(ctx, &lnrpc.ListChannelsRequest{ActiveOnly: true})
	if err != nil {
		return 0, lndErr("ListChannels", err)
	}
	var sum kassa.Sats
	for _, c := range r.Channels {
		reserve := int64(c.GetLocalConstraints().GetChanReserveSat())
		if free := c.LocalBalance - reserve; free > 0 {
			sum += kassa.Sats(free)
		}
	}
	return sum, nil
}

// OnchainSpendable is lnd's confirmed wallet balance less what it keeps
// for anchor channels.
func (n *Node) OnchainSpendable(ctx context.Context) (kassa.Sats, error) {
	w, err := n.wallet()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	r, err := w.WalletBalance(ctx)
	if err != nil {
		return 0, lndErr("WalletBalance", err)
	}
	return kassa.Sats(max(r.ConfirmedBalance-r.ReservedBalanceAnchorChan, 0)), nil
}

// OnchainFee is lnd's estimate of the fee of a transaction paying amount
// to address, at PayoutTargetConf.
func (n *Node) OnchainFee(ctx context.Context, address string, amount kassa.Sats) (kassa.Sats, error) {
	w, err := n.wallet()
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	r, err := w.EstimateFee(ctx, &lnrpc.EstimateFeeRequest{AddrToAmount: map[string]int64{address: int64(amount)}, TargetConf: PayoutTargetConf, MinConfs: 1})
	if err != nil {
		return 0, lndErr("EstimateFee", err)
	}
	return kassa.Sats(r.FeeSat), nil
}

// FundTx funds (walletrpc FundPsbt, confirmed coins only, fee at
// PayoutTargetConf) and signs (FinalizePsbt) a transaction paying amount
// to address, without publishing it. lnd keeps its inputs for it for a
// week, or until ReleaseTx, under a lock id of key's: the inputs an
// earlier FundTx of key leased (a crash before the transaction was
// recorded, so never published) are released first.
func (n *Node) FundTx(ctx context.Context, key, address string, amount kassa.Sats) (kassa.OnchainTx, error) {
	w, err := n.wallet()
	if err != nil {
		return kassa.OnchainTx{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	lockID := sha256.Sum256([]byte("kassa payout " + key))
	leases, err := w.ListLeases(ctx)
	if err != nil {
		return kassa.OnchainTx{}, kassa.Errorf(kassa.Unavailable, "lnd ListLeases: %s", grpcMessage(err))
	}
	for _, l := range leases {
		if bytes.Equal(l.Id, lockID[:]) {
			if err := w.ReleaseOutput(ctx, &walletrpc.ReleaseOutputRequest{Id: l.Id, Outpoint: l.Outpoint}); err != nil {
				return kassa.OnchainTx{}, kassa.Errorf(kassa.Unavailable, "lnd ReleaseOutput: %s", grpcMessage(err))
			}
		}
	}
	funded, err := w.FundPsbt(ctx, &walletrpc.FundPsbtRequest{
		CustomLockId:          lockID[:],
		Template:              &walletrpc.FundPsbtRequest_Raw{Raw: &walletrpc.TxTemplate{Outputs: map[string]uint64{address: uint64(amount)}}},
		Fees:                  &walletrpc.FundPsbtRequest_TargetConf{TargetConf: PayoutTargetConf},
		MinConfs:              1,
		ChangeType:            walletrpc.ChangeAddressType_CHANGE_ADDRESS_TYPE_P2TR,
		LockExpirationSeconds: payoutLock,
	})
	if err != nil {
		// What the wallet cannot pay is final; anything else (lnd down,
		// starting, its wallet not unlocked yet) is tried again.
		if containsAny(err, "insufficient", "not enough") && n.walletShort(ctx, amount) {
			return kassa.OnchainTx{}, kassa.Errorf(kassa.Conflict, "lnd FundPsbt: %s", grpcMessage(err))
		}
		if containsAny(err, "dust", "invalid address", "decode address", "unknown address") {
			return kassa.OnchainTx{}, kassa.Errorf(kassa.Conflict, "lnd FundPsbt: %s", grpcMessage(err))
		}
		return kassa.OnchainTx{}, kassa.Errorf(kassa.Unavailable, "lnd FundPsbt: %s", grpcMessage(err))
	}
	tx := kassa.OnchainTx{}
	var in int64
	for _, l := range funded.LockedUtxos {
		in += int64(l.Value)
		tx.Locks = append(tx.Locks, hex.EncodeToString(l.Id)+":"+l.Outpoint.GetTxidStr()+":"+fmt.Sprint(l.Outpoint.GetOutputIndex()))
	}
	final, err := w.FinalizePsbt(ctx, &walletrpc.FinalizePsbtRequest{FundedPsbt: funded.FundedPsbt})
	if err != nil {
		n.ReleaseTx(context.WithoutCancel(ctx), tx)
		return kassa.OnchainTx{}, kassa.Errorf(kassa.Unavailable, "lnd FinalizePsbt: %s", grpcMessage(err))
	}
	var msg wire.MsgTx
	if err := msg.Deserialize(bytes.NewReader(final.RawFinalTx)); err != nil {
		n.ReleaseTx(context.WithoutCancel(ctx), tx)
		return kassa.OnchainTx{}, fmt.Errorf("lnd FinalizePsbt: the transaction does not decode: %w", err)
	}
	var out int64
	for _, o := range msg.TxOut {
		out += o.Value
	}
	tx.Raw, tx.TxID, tx.Fee = hex.EncodeToString(final.RawFinalTx), msg.TxHash().String(), kassa.Sats(in-out)
	return tx, nil
}

// walletShort says whether lnd's wallet, synced to the chain, holds
// less than amount confirmed: lnd just restarted answers "insufficient
// funds" until it has caught up with its coins.
func (n *Node) walletShort(ctx context.Context, amount kassa.Sats) bool {
	info, err := n.rpc.GetInfo(ctx)
	if err != nil || !info.SyncedToChain {
		return false
	}
	have, err := n.OnchainSpendable(ctx)
	return err == nil && have < amount
}

// ReleaseTx gives back the inputs FundTx reserved for tx.
func (n *Node) ReleaseTx(ctx context.Context, tx kassa.OnchainTx) error {
	w, err := n.wallet()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	var errs []error
	for _, l := range tx.Locks {
		parts := strings.Split(l, ":")
		if len(parts) != 3 {
			continue
		}
		id, _ := hex.DecodeString(parts[0])
		var index uint32
		fmt.Sscan(parts[2], &index)
		if err := w.ReleaseOutput(ctx, &walletrpc.ReleaseOutputRequest{Id: id, Outpoint: &lnrpc.OutPoint{TxidStr: parts[1], OutputIndex: index}}); err != nil {
			errs = append(errs, lndErr("ReleaseOutput", err))
		}
	}
	return errors.Join(errs...)
}

// PublishTx publishes rawTx (walletrpc PublishTransaction); lnd takes a
// transaction it knows already (published or mined) without error. A
// transaction refused because its inputs are spent is looked for among
// lnd's wallet transactions: found, it was published before (and is
// mined, or on its way); not found, another transaction spent its
// inputs and it can never be mined (actors.ErrTxConflict).
func (n *Node) PublishTx(ctx context.Context, rawTx, txid string) error {
	w, err := n.wallet()
	if err != nil {
		return err
	}
	raw, err := hex.DecodeString(rawTx)
	if err != nil {
		return kassa.Errorf(kassa.Invalid, "publish: the transaction is not hex")
	}
	ctx, cancel := context.WithTimeout(ctx, n.cfg.CallTimeout)
	defer cancel()
	_, err = w.PublishTransaction(ctx, &walletrpc.Transaction{TxHex: raw, Label: "kassa payout"})
	if err == nil {
		return nil
	}
	if !containsAny(err, "already spent", "double spend", "missing inputs", "missingorspent", "conflict", "already have transaction", "already exists", "already known", "txn-already") {
		return kassa.Errorf(kassa.Unavailable, "lnd PublishTransaction: %s", grpcMessage(err))
	}
	txs, gerr := w.GetTransactions(ctx)
	if gerr != nil {
		return lndErr("GetTransactions", gerr)
	}
	for _, t := range txs.Transactions {
		if t.TxHash == txid {
			return nil
		}
	}
	return kassa.Errorf(kassa.Conflict, "the transaction's inputs were spent by another transaction: %s", grpcMessage(err))
}

func (g *grpcRPC) ListChannels(ctx context.Context, in *lnrpc.ListChannelsRequest) (*lnrpc.ListChannelsResponse, error) {
	return g.ln.ListChannels(ctx, in)
}

func (g *grpcRPC) WalletBalance(ctx context.Context) (*lnrpc.WalletBalanceResponse, error) {
	return g.ln.WalletBalance(ctx, &lnrpc.WalletBalanceRequest{})
}

func (g *grpcRPC) EstimateFee(ctx context.Context, in *lnrpc.EstimateFeeRequest) (*lnrpc.EstimateFeeResponse, error) {
	return g.ln.EstimateFee(ctx, in)
}

func (g *grpcRPC) GetTransactions(ctx context.Context) (*lnrpc.TransactionDetails, error) {
	return g.ln.GetTransactions(ctx, &lnrpc.GetTransactionsRequest{EndHeight: -1})
}

func (g *grpcRPC) FundPsbt(ctx context.Context, in *walletrpc.FundPsbtRequest) (*walletrpc.FundPsbtResponse, error) {
	return g.wallet.FundPsbt(ctx, in)
}

func (g *grpcRPC) FinalizePsbt(ctx context.Context, in *walletrpc.FinalizePsbtRequest) (*walletrpc.FinalizePsbtResponse, error) {
	return g.wallet.FinalizePsbt(ctx, in)
}

func (g *grpcRPC) PublishTransaction(ctx context.Context, in *walletrpc.Transaction) (*walletrpc.PublishResponse, error) {
	return g.wallet.PublishTransaction(ctx, in)
}

func (g *grpcRPC) ListLeases(ctx context.Context) ([]*walletrpc.UtxoLease, error) {
	r, err := g.wallet.ListLeases(ctx, &walletrpc.ListLeasesRequest{})
	if err != nil {
		return nil, err
	}
	return r.LockedUtxos, nil
}

func (g *grpcRPC) ReleaseOutput(ctx context.Context, in *walletrpc.ReleaseOutputRequest) error {
	_, err := g.wallet.ReleaseOutput(ctx, in)
	return err
}
