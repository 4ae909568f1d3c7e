package rpc

import (
	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Node is the part of the node's JSON-RPC interface the watcher uses:
// calls btcd and bitcoind both serve. *rpcclient.Client implements it.
type Node interface {
	GetBlockChainInfo() (*btcjson.GetBlockChainInfoResult, error)
	GetBestBlockHash() (*chainhash.Hash, error)
	GetBlockHash(height int64) (*chainhash.Hash, error)
	// GetBlock fetches the block at verbosity 0 and decodes it.
	GetBlock(hash *chainhash.Hash) (*wire.MsgBlock, error)
	GetRawMempool() ([]*chainhash.Hash, error)
	GetRawTransaction(hash *chainhash.Hash) (*btcutil.Tx, error)
	// GetTxOut returns nil for an output that is spent or does not exist.
	GetTxOut(hash *chainhash.Hash, index uint32, mempool bool) (*btcjson.GetTxOutResult, error)
}
