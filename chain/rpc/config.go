// Package rpc is the on-chain backend of `kassa serve --chain rpc://…`:
// a watcher that polls a Bitcoin node (btcd or bitcoind) over JSON-RPC,
// matches every block's and mempool transaction's outputs against the
// addresses of open invoices held in memory, and reports payments,
// confirmations, reorgs, replacements and double spends to the invoice
// actors. It uses only calls both nodes serve (getbestblockhash,
// getblockhash, getblock at verbosity 0, getrawmempool, getrawtransaction,
// gettxout, getblockchaininfo) and derives addresses locally from each
// store's xpub (package derive), so the node needs no wallet and no
// transaction index. docs/decisions.md explains the cursor, reorg and
// replacement rules.
package rpc

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/btcsuite/btcd/chaincfg"

	"github.com/kassapay/kassa"
)

// Default poll intervals: regtest blocks come on demand, so poll often.
const (
	DefaultPollRegtest = 2 * time.Second
	DefaultPoll        = 10 * time.Second
)

// Conn says how to reach the node; ParseURL reads it from --chain.
type Conn struct {
	Host       string
	User, Pass string
	// Cookie is bitcoind's cookie file, instead of User and Pass.
	Cookie string
	// Cert is btcd's RPC certificate (PEM); empty uses the system roots.
	Cert string
	// NoTLS talks plain HTTP (bitcoind, or btcd --notls).
	NoTLS  bool
	Params *chaincfg.Params
	// Network is the name given in the URL.
	Network string
	// Poll is how often the node is polled.
	Poll time.Duration
}

// Networks maps the network names of --chain to their parameters.
var Networks = map[string]*chaincfg.Params{
	"mainnet": &chaincfg.MainNetParams,
	"testnet": &chaincfg.TestNet3Params,
	"signet":  &chaincfg.SigNetParams,
	"regtest": &chaincfg.RegressionNetParams,
	"simnet":  &chaincfg.SimNetParams,
}

// ParseURL reads rpc://USER:PASS@HOST:PORT?network=regtest&cert=PATH
// (also &notls=1, &cookie=PATH instead of USER:PASS, &poll=2s). Errors
// never repeat the password.
func ParseURL(raw string) (Conn, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "rpc" || u.Host == "" {
		return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: want rpc://USER:PASS@HOST:PORT?network=NAME")
	}
	q := u.Query()
	c := Conn{Host: u.Host, Network: q.Get("network"), Cert: q.Get("cert"), Cookie: q.Get("cookie")}
	if c.Network == "" {
		return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: name the network (network=mainnet, testnet, signet, regtest or simnet)")
	}
	if c.Params = Networks[c.Network]; c.Params == nil {
		return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: unknown network %q: use mainnet, testnet, signet, regtest or simnet", c.Network)
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Pass, _ = u.User.Password()
	}
	if (c.User == "") == (c.Cookie == "") {
		return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: give either USER:PASS or cookie=PATH")
	}
	if v := q.Get("notls"); v != "" {
		if c.NoTLS, err = strconv.ParseBool(v); err != nil {
			return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: notls=%q is not a boolean", v)
		}
	}
	c.Poll = DefaultPoll
	if c.Network == "regtest" || c.Network == "simnet" {
		c.Poll = DefaultPollRegtest
	}
	if v := q.Get("poll"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 10*time.Millisecond || d > 10*time.Minute {
			return Conn{}, kassa.Errorf(kassa.Invalid, "--chain: poll=%q: want a duration between 10ms and 10m", v)
		}
		c.Poll = d
	}
	return c, nil
}

// redact removes the password from an error text of the RPC client.
func (c Conn) redact(s string) string {
	if c.Pass != "" {
		s = strings.ReplaceAll(s, c.Pass, "***")
	}
	return s
}
