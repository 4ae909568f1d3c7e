package rpc

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/btcutil"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/wire"
)

// Client calls the node's JSON-RPC over HTTP POST on connections it
// keeps open between polls. (rpcclient's HTTP POST mode closes the
// connection after every call, so each poll paid a new TLS handshake;
// it also retried a failed call for 22.5 s, where the watcher's own
// poll loop is the retry.) It implements Node.
type Client struct {
	url  string
	conn Conn
	http *http.Client
	ids  atomic.Uint64

	// The cookie file is read again when it changes (bitcoind writes a
	// new one at every start).
	cookieMu             sync.Mutex
	cookieMod            time.Time
	cookieUser, cookiePw string
}

var _ Node = (*Client)(nil)

// callTimeout bounds one call, the answer included (a block of 4 MB on
// a slow link).
const callTimeout = time.Minute

// Client returns a client of the node.
func (c Conn) Client() (*Client, error) {
	scheme := "https"
	var tlsConf *tls.Config
	if c.NoTLS {
		scheme = "http"
	} else {
		// btcd closes the connection after every answer, so each call
		// is a new TLS connection: resuming the last session spares
		// both sides the certificate's signature and its check (a
		// P-521 key in btcd's, about 1.5 ms of CPU here per call).
		tlsConf = &tls.Config{MinVersion: tls.VersionTLS12, ClientSessionCache: tls.NewLRUClientSessionCache(4)}
		if c.Cert != "" {
			pem, err := os.ReadFile(c.Cert)
			if err != nil {
				return nil, fmt.Errorf("--chain: read cert: %w", err)
			}
			pool := x509.NewCertPool()
			if !pool.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--chain: cert %s holds no PEM certificate", c.Cert)
			}
			tlsConf.RootCAs = pool
		}
	}
	transport := &http.Transport{
		TLSClientConfig: tlsConf, MaxIdleConns: 4, MaxIdleConnsPerHost: 4,
		IdleConnTimeout: 5 * time.Minute, TLSHandshakeTimeout: 10 * time.Second,
		ResponseHeaderTimeout: callTimeout,
	}
	return &Client{
		url: scheme + "://" + c.Host, conn: c,
		http: &http.Client{Transport: transport, Timeout: callTimeout},
	}, nil
}

// Close closes the connections kept open.
func (n *Client) Close() { n.http.CloseIdleConnections() }

// auth returns the user and password, from the cookie file if any.
func (n *Client) auth() (string, string, error) {
	if n.conn.Cookie == "" {
		return n.conn.User, n.conn.Pass, nil
	}
	n.cookieMu.Lock()
	defer n.cookieMu.Unlock()
	fi, err := os.Stat(n.conn.Cookie)
	if err != nil {
		return "", "", fmt.Errorf("read cookie: %w", err)
	}
	if !fi.ModTime().Equal(n.cookieMod) || n.cookieUser == "" {
		b, err := os.ReadFile(n.conn.Cookie)
		if err != nil {
			return "", "", fmt.Errorf("read cookie: %w", err)
		}
		user, pass, ok := strings.Cut(strings.TrimSpace(string(b)), ":")
		if !ok {
			return "", "", errors.New("read cookie: not USER:PASSWORD")
		}
		n.cookieMod, n.cookieUser, n.cookiePw = fi.ModTime(), user, pass
	}
	return n.cookieUser, n.cookiePw, nil
}

// call makes one JSON-RPC call and decodes its result into result
// (which may stay untouched for a null result). An error the node
// answers is a *btcjson.RPCError.
func (n *Client) call(method string, params []any, result any) error {
	body, err := json.Marshal(map[string]any{"jsonrpc": "1.0", "id": n.ids.Add(1), "method": method, "params": params})
	if err != nil {
		return err
	}
	req, err := http.NewRequest(http.MethodPost, n.url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	user, pass, err := n.auth()
	if err != nil {
		return err
	}
	req.SetBasicAuth(user, pass)
	resp, err := n.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	defer resp.Body.Close()
	// Read the whole answer, so that the connection can be used again.
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s: read answer: %w", method, err)
	}
	var out struct {
		Result json.RawMessage   `json:"result"`
		Error  *btcjson.RPCError `json:"error"`
	}
	if jerr := json.Unmarshal(data, &out); jerr != nil {
		// Not JSON: an HTTP error such as 401 from a wrong password.
		return fmt.Errorf("%s: %s", method, resp.Status)
	}
	if out.Error != nil {
		return out.Error
	}
	if len(out.Result) == 0 || string(out.Result) == "null" {
		return nil
	}
	if err := json.Unmarshal(out.Result, result); err != nil {
		return fmt.Errorf("%s: decode result: %w", method, err)
	}
	return nil
}

func (n *Client) hash(method string, params []any) (*chainhash.Hash, error) {
	var s string
	if err := n.call(method, params, &s); err != nil {
		return nil, err
	}
	return chainhash.NewHashFromStr(s)
}

// GetBlockChainInfo calls getblockchaininfo.
func (n *Client) GetBlockChainInfo() (*btcjson.GetBlockChainInfoResult, error) {
	var r btcjson.GetBlockChainInfoResult
	if err := n.call("getblockchaininfo", []any{}, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// GetBestBlockHash calls getbestblockhash.
func (n *Client) GetBestBlockHash() (*chainhash.Hash, error) {
	return n.hash("getbestblockhash", []any{})
}

// GetBlockHash calls getblockhash.
func (n *Client) GetBlockHash(height int64) (*chainhash.Hash, error) {
	return n.hash("getblockhash", []any{height})
}

// GetBlock calls getblock at verbosity 0 and decodes the block.
func (n *Client) GetBlock(hash *chainhash.Hash) (*wire.MsgBlock, error) {
	var s string
	if err := n.call("getblock", []any{hash.String(), 0}, &s); err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("getblock: %w", err)
	}
	var b wire.MsgBlock
	if err := b.Deserialize(bytes.NewReader(raw)); err != nil {
		return nil, fmt.Errorf("getblock: %w", err)
	}
	return &b, nil
}

// GetRawMempool calls getrawmempool.
func (n *Client) GetRawMempool() ([]*chainhash.Hash, error) {
	var ss []string
	if err := n.call("getrawmempool", []any{false}, &ss); err != nil {
		return nil, err
	}
	out := make([]*chainhash.Hash, 0, len(ss))
	for _, s := range ss {
		h, err := chainhash.NewHashFromStr(s)
		if err != nil {
			return nil, fmt.Errorf("getrawmempool: %w", err)
		}
		out = append(out, h)
	}
	return out, nil
}

// GetRawTransaction calls getrawtransaction (not verbose) and decodes
// the transaction.
func (n *Client) GetRawTransaction(hash *chainhash.Hash) (*btcutil.Tx, error) {
	var s string
	if err := n.call("getrawtransaction", []any{hash.String(), 0}, &s); err != nil {
		return nil, err
	}
	raw, err := hex.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("getrawtransaction: %w", err)
	}
	return btcutil.NewTxFromBytes(raw)
}

// GetTxOut calls gettxout; nil for an output that is spent or does not
// exist.
func (n *Client) GetTxOut(hash *chainhash.Hash, index uint32, mempool bool) (*btcjson.GetTxOutResult, error) {
	var r *btcjson.GetTxOutResult
	if err := n.call("gettxout", []any{hash.String(), index, mempool}, &r); err != nil {
		return nil, err
	}
	return r, nil
}

// kind tells whether the node is btcd or bitcoind: bitcoind has no
// getinfo.
func (n *Client) kind() (string, error) {
	var info json.RawMessage
	err := n.call("getinfo", []any{}, &info)
	var rpcErr *btcjson.RPCError
	switch {
	case err == nil:
		return "btcd", nil
	case errors.As(err, &rpcErr) && rpcErr.Code == btcjson.ErrRPCMethodNotFound.Code:
		return "bitcoind", nil
	}
	return "", err
}
