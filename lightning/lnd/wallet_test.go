package lnd_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/walletrpc"
)

// walletRPC is fakeRPC with lnd's wallet interface: the calls answer
// what the test sets.
type walletRPC struct {
	fakeRPC
	fund    *walletrpc.FundPsbtResponse
	fundErr error
	raw     []byte
	publish error
	known   []string // txids of lnd's wallet
	release int
	leases  []*walletrpc.UtxoLease
}

func (w *walletRPC) ListLeases(context.Context) ([]*walletrpc.UtxoLease, error) { return w.leases, nil }

func (w *walletRPC) ListChannels(context.Context, *lnrpc.ListChannelsRequest) (*lnrpc.ListChannelsResponse, error) {
	return &lnrpc.ListChannelsResponse{Channels: []*lnrpc.Channel{
		{LocalBalance: 100_000, LocalConstraints: &lnrpc.ChannelConstraints{ChanReserveSat: 10_000}},
		{LocalBalance: 5_000, LocalConstraints: &lnrpc.ChannelConstraints{ChanReserveSat: 10_000}},
	}}, nil
}
func (w *walletRPC) WalletBalance(context.Context) (*lnrpc.WalletBalanceResponse, error) {
	return &lnrpc.WalletBalanceResponse{ConfirmedBalance: 50_000, ReservedBalanceAnchorChan: 10_000}, nil
}
func (w *walletRPC) EstimateFee(context.Context, *lnrpc.EstimateFeeRequest) (*lnrpc.EstimateFeeResponse, error) {
	return &lnrpc.EstimateFeeResponse{FeeSat: 250}, nil
}
func (w *walletRPC) GetTransactions(context.Context) (*lnrpc.TransactionDetails, error) {
	var out lnrpc.TransactionDetails
	for _, id := range w.known {
		out.Transactions = append(out.Transactions, &lnrpc.Transaction{TxHash: id})
	}
	return &out, nil
}
func (w *walletRPC) FundPsbt(context.Context, *walletrpc.FundPsbtRequest) (*walletrpc.FundPsbtResponse, error) {
	return w.fund, w.fundErr
}
func (w *walletRPC) FinalizePsbt(context.Context, *walletrpc.FinalizePsbtRequest) (*walletrpc.FinalizePsbtResponse, error) {
	return &walletrpc.FinalizePsbtResponse{RawFinalTx: w.raw}, nil
}
func (w *walletRPC) PublishTransaction(context.Context, *walletrpc.Transaction) (*walletrpc.PublishResponse, error) {
	return &walletrpc.PublishResponse{}, w.publish
}
func (w *walletRPC) ReleaseOutput(context.Context, *walletrpc.ReleaseOutputRequest) error {
	w.release++
	return nil
}

// TestWalletPaysPayouts: the node's funds are its channels' balances
// above their reserves and its confirmed balance less the anchor
// reserve; a funded transaction's fee is its inputs less its outputs;
// too little money is final, lnd down is retried; a transaction refused
// for spent inputs is paid when lnd's wallet holds it, else a conflict.
func TestWalletPaysPayouts(t *testing.T) {
	ctx := context.Background()
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(wire.NewTxIn(wire.NewOutPoint(&chainhash.Hash{1}, 0), nil, nil))
	tx.AddTxOut(wire.NewTxOut(30_000, []byte{0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}))
	tx.AddTxOut(wire.NewTxOut(69_700, []byte{0, 20, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 21}))
	var buf bytes.Buffer
	if err := tx.Serialize(&buf); err != nil {
		t.Fatal(err)
	}
	rpc := &walletRPC{raw: buf.Bytes(), fund: &walletrpc.FundPsbtResponse{LockedUtxos: []*walletrpc.UtxoLease{
		{Id: []byte{9}, Outpoint: &lnrpc.OutPoint{TxidStr: "ab", OutputIndex: 1}, Value: 100_000},
	}}}
	n := newNode(t, rpc, openDB(t), nil)
	if got, err := n.LightningSendable(ctx); err != nil || got != 90_000 {
		t.Fatalf("LightningSendable = %d, %v; want 90000", got, err)
	}
	if got, err := n.OnchainSpendable(ctx); err != nil || got != 40_000 {
		t.Fatalf("OnchainSpendable = %d, %v; want 40000", got, err)
	}
	// A lease of an earlier funding for the same payout (a crash before
	// it was recorded) is released first; another payout's stays.
	mine := sha256.Sum256([]byte("kassa payout po_1"))
	rpc.leases = []*walletrpc.UtxoLease{{Id: mine[:], Outpoint: &lnrpc.OutPoint{TxidStr: "cd"}}, {Id: []byte{7}, Outpoint: &lnrpc.OutPoint{TxidStr: "ef"}}}
	funded, err := n.FundTx(ctx, "po_1", "bcrt1q", 30_000)
	if rpc.release != 1 {
		t.Fatalf("%d leases released before funding, want the payout's one", rpc.release)
	}
	rpc.release, rpc.leases = 0, nil
	if err != nil || funded.Fee != 300 || funded.TxID != tx.TxHash().String() || funded.Raw != hex.EncodeToString(buf.Bytes()) || len(funded.Locks) != 1 {
		t.Fatalf("FundTx = %+v, %v", funded, err)
	}
	if err := n.ReleaseTx(ctx, funded); err != nil || rpc.release != 1 {
		t.Fatalf("ReleaseTx = %v, %d releases", err, rpc.release)
	}
	rpc.fundErr = errors.New("rpc error: code = Unknown desc = insufficient funds available to construct transaction")
	synced := false
	rpc.getInfo = func(context.Context) (*lnrpc.GetInfoResponse, error) {
		return &lnrpc.GetInfoResponse{SyncedToChain: synced}, nil
	}
	if _, err := n.FundTx(ctx, "po_1", "bcrt1q", 45_000); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("FundTx while lnd catches up with the chain: %v, want unavailable", err)
	}
	synced = true
	if _, err := n.FundTx(ctx, "po_1", "bcrt1q", 30_000); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("FundTx refused while the balance covers it (lnd just restarted): %v, want unavailable", err)
	}
	if _, err := n.FundTx(ctx, "po_1", "bcrt1q", 45_000); kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("FundTx without the money: %v, want conflict", err)
	}
	rpc.fundErr = status.Error(codes.Unknown, "server is still in the process of starting")
	if _, err := n.FundTx(ctx, "po_1", "bcrt1q", 30_000); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("FundTx while lnd starts: %v, want unavailable", err)
	}

	rpc.publish = status.Error(codes.Unknown, "transaction rejected: output already spent")
	if err := n.PublishTx(ctx, funded.Raw, funded.TxID); kassa.ErrorCode(err) != kassa.Conflict {
		t.Fatalf("PublishTx of a transaction whose inputs another spent: %v, want conflict", err)
	}
	rpc.known = []string{funded.TxID}
	if err := n.PublishTx(ctx, funded.Raw, funded.TxID); err != nil {
		t.Fatalf("PublishTx of a transaction lnd's wallet holds: %v", err)
	}
	rpc.publish = status.Error(codes.Unavailable, "connection refused")
	if err := n.PublishTx(ctx, funded.Raw, funded.TxID); kassa.ErrorCode(err) != kassa.Unavailable {
		t.Fatalf("PublishTx with lnd down: %v, want unavailable", err)
	}
	rpc.publish = nil
	if err := n.PublishTx(ctx, funded.Raw, funded.TxID); err != nil {
		t.Fatal(err)
	}
}
