package harness

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/btcsuite/btcd/btcjson"
	"github.com/btcsuite/btcd/chaincfg"
	"github.com/btcsuite/btcd/chaincfg/chainhash"
	"github.com/btcsuite/btcd/rpcclient"

	"github.com/kassapay/kassa/kassatest"
)

// BtcdVersion is the btcd release the tests run against.
const BtcdVersion = "v0.26.2"

// RPC credentials of every node the harness starts.
const (
	RPCUser = "kassa"
	RPCPass = "kassa-itest"
)

var (
	buildOnce sync.Once
	buildDir  string
	buildErr  error
)

// repoRoot is the directory of the module, found from this file.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// BtcdDir builds btcd and btcctl with scripts/build-btcd.sh (once per
// process; the script caches them across runs) and returns the directory
// that holds them. KASSA_BTCD_DIR names a directory with prebuilt binaries
// instead. A failed build fails the test: integration tests never skip
// because a daemon is missing.
func BtcdDir(t T) string {
	t.Helper()
	buildOnce.Do(func() {
		if dir := os.Getenv("KASSA_BTCD_DIR"); dir != "" {
			buildDir = dir
			return
		}
		cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "build-btcd.sh"))
		cmd.Env = append(os.Environ(), "BTCD_VERSION="+BtcdVersion)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			buildErr = fmt.Errorf("scripts/build-btcd.sh: %w\n%s", err, stderr.String())
			return
		}
		buildDir = strings.TrimSpace(string(out))
	})
	if buildErr != nil {
		t.Fatalf("cannot build btcd: %v", buildErr)
	}
	if _, err := os.Stat(filepath.Join(buildDir, "btcd")); err != nil {
		t.Fatalf("no btcd binary in %s: %v", buildDir, err)
	}
	return buildDir
}

// NodeConfig says how to start a node.
type NodeConfig struct {
	// Network is "regtest" (default) or "simnet". A regtest btcd wipes its
	// chain on every start; a simnet one keeps it.
	Network string
	// MiningAddr receives the coinbase of every block the node mines.
	MiningAddr string
	// Dir holds the node's data; empty makes a temporary one. Reuse it to
	// restart a node.
	Dir string
	// RPCPort and P2PPort; zero picks free ones.
	RPCPort, P2PPort int
	// Connect lists peers (host:port) to keep connected.
	Connect []string
	// TxIndex enables btcd's transaction index.
	TxIndex bool
}

// Node is a running btcd.
type Node struct {
	t      T
	cfg    NodeConfig
	Params *chaincfg.Params
	// RPCAddr and P2PAddr are host:port on loopback.
	RPCAddr, P2PAddr string
	// CertPath is the node's RPC TLS certificate.
	CertPath string
	Client   *rpcclient.Client

	mu   sync.Mutex
	proc *daemon
	log  *os.File
}

// ParamsOf returns the parameters of a network name.
func ParamsOf(network string) *chaincfg.Params {
	switch network {
	case "simnet":
		return &chaincfg.SimNetParams
	default:
		return &chaincfg.RegressionNetParams
	}
}

// StartNode starts a btcd and waits until its RPC answers. The node is
// stopped when the test ends.
func StartNode(t T, cfg NodeConfig) *Node {
	t.Helper()
	SkipShort(t, "btcd")
	if cfg.Network == "" {
		cfg.Network = "regtest"
	}
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	// A free port can be taken by another process before btcd binds it
	// (parallel test packages): with ports of our choosing, try others.
	autoRPC, autoP2P := cfg.RPCPort == 0, cfg.P2PPort == 0
	for attempt := 1; ; attempt++ {
		if autoRPC {
			cfg.RPCPort = FreePort(t)
		}
		if autoP2P {
			cfg.P2PPort = FreePort(t)
		}
		n := &Node{
			t: t, cfg: cfg, Params: ParamsOf(cfg.Network),
			RPCAddr:  fmt.Sprintf("127.0.0.1:%d", cfg.RPCPort),
			P2PAddr:  fmt.Sprintf("127.0.0.1:%d", cfg.P2PPort),
			CertPath: filepath.Join(cfg.Dir, "rpc.cert"),
		}
		err := n.tryStart()
		if err == nil {
			t.Cleanup(n.Stop)
			return n
		}
		if !errors.Is(err, errPortInUse) || !(autoRPC || autoP2P) || attempt == 5 {
			t.Fatalf("%v", err)
		}
		t.Logf("btcd: %v; trying other ports", err)
	}
}

// errPortInUse says btcd could not bind a port.
var errPortInUse = errors.New("a port was taken before btcd bound it")

func (n *Node) start() {
	n.t.Helper()
	if err := n.tryStart(); err != nil {
		n.t.Fatalf("%v", err)
	}
}

// tryStart starts btcd and waits until its RPC answers.
func (n *Node) tryStart() error {
	t := n.t
	t.Helper()
	bin := filepath.Join(BtcdDir(t), "btcd")
	d := n.cfg.Dir
	args := []string{
		"--" + n.cfg.Network,
		"--datadir=" + filepath.Join(d, "data"),
		"--logdir=" + filepath.Join(d, "logs"),
		"--rpccert=" + n.CertPath,
		"--rpckey=" + filepath.Join(d, "rpc.key"),
		"--rpcuser=" + RPCUser, "--rpcpass=" + RPCPass,
		"--rpclisten=" + n.RPCAddr,
		"--listen=" + n.P2PAddr,
		"--nodnsseed", "--nobanning", "--debuglevel=info",
	}
	if n.cfg.MiningAddr != "" {
		args = append(args, "--miningaddr="+n.cfg.MiningAddr)
	}
	if n.cfg.TxIndex {
		args = append(args, "--txindex")
	}
	for _, p := range n.cfg.Connect {
		args = append(args, "--addpeer="+p)
	}
	logf, err := os.OpenFile(filepath.Join(d, "btcd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("btcd log: %v", err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	proc, err := startDaemon(cmd, nil)
	if err != nil {
		logf.Close()
		t.Fatalf("start btcd: %v", err)
	}
	n.mu.Lock()
	n.proc, n.log = proc, logf
	n.mu.Unlock()

	// The certificate appears once btcd made it; then the RPC answers.
	err = proc.waitReady(60*time.Second, 50*time.Millisecond, func() bool {
		if _, err := os.Stat(n.CertPath); err != nil {
			return false
		}
		c, err := n.NewClient()
		if err != nil {
			return false
		}
		if _, err := c.GetBlockCount(); err != nil {
			c.Shutdown()
			return false
		}
		n.mu.Lock()
		n.Client = c
		n.mu.Unlock()
		return true
	})
	switch err {
	case errExited:
		n.mu.Lock()
		n.proc = nil
		n.mu.Unlock()
		logf.Close()
		out := n.Output()
		// The next attempt starts with a clean log.
		_ = os.Remove(filepath.Join(d, "btcd.out"))
		if strings.Contains(out, "address already in use") {
			return errPortInUse
		}
		return fmt.Errorf("btcd exited at start; its output:\n%s", out)
	case errNotReady:
		out := n.Output()
		proc.kill()
		logf.Close()
		n.mu.Lock()
		n.proc = nil
		n.mu.Unlock()
		return fmt.Errorf("btcd did not answer RPC within 60s; its output:\n%s", out)
	}
	return nil
}

// NewClient returns a new RPC client of the node (HTTP POST mode).
func (n *Node) NewClient() (*rpcclient.Client, error) {
	cert, err := os.ReadFile(n.CertPath)
	if err != nil {
		return nil, err
	}
	return rpcclient.New(&rpcclient.ConnConfig{
		Host: n.RPCAddr, User: RPCUser, Pass: RPCPass,
		Certificates: cert, HTTPPostMode: true, DisableConnectOnNew: true,
	}, nil)
}

// URL is the --chain value that points Kassa at this node.
func (n *Node) URL() string {
	return fmt.Sprintf("rpc://%s:%s@%s?network=%s&cert=%s", RPCUser, RPCPass, n.RPCAddr, n.cfg.Network, n.CertPath)
}

// Output returns what btcd printed.
func (n *Node) Output() string {
	return fileTail(filepath.Join(n.cfg.Dir, "btcd.out"), 8000)
}

// Stop stops the node (interrupt, then kill after 20 s) and waits for it
// to exit. Stopping a stopped node does nothing.
func (n *Node) Stop() {
	n.mu.Lock()
	proc, logf, c := n.proc, n.log, n.Client
	n.proc, n.Client = nil, nil
	n.mu.Unlock()
	if proc == nil {
		return
	}
	if c != nil {
		c.Shutdown()
	}
	proc.stop(syscall.SIGINT, 20*time.Second)
	logf.Close()
}

// Start starts a stopped node again on the same ports and data
// directory. A regtest btcd comes back with an empty chain.
func (n *Node) Start() {
	n.t.Helper()
	n.start()
}

// Mine mines count blocks and returns their hashes.
func (n *Node) Mine(count int) []*chainhash.Hash {
	n.t.Helper()
	hashes, err := n.Client.Generate(uint32(count))
	if err != nil {
		n.t.Fatalf("mine %d blocks: %v", count, err)
	}
	return hashes
}

// Height returns the height of the node's best block.
func (n *Node) Height() int64 {
	n.t.Helper()
	h, err := n.Client.GetBlockCount()
	if err != nil {
		n.t.Fatalf("getblockcount: %v", err)
	}
	return h
}

// BestHash returns the hash of the node's best block.
func (n *Node) BestHash() chainhash.Hash {
	n.t.Helper()
	h, err := n.Client.GetBestBlockHash()
	if err != nil {
		n.t.Fatalf("getbestblockhash: %v", err)
	}
	return *h
}

// Connect makes other a temporary peer of n: Disconnect drops it for good
// (a permanent peer would be redialled).
func (n *Node) Connect(other *Node) {
	n.t.Helper()
	if err := n.Client.Node(btcjson.NConnect, other.P2PAddr, btcjson.String("temp")); err != nil {
		n.t.Fatalf("connect to %s: %v", other.P2PAddr, err)
	}
}

// Disconnect drops the connection between n and other and waits until
// neither lists the other as a peer.
func (n *Node) Disconnect(other *Node) {
	n.t.Helper()
	_ = n.Client.Node(btcjson.NDisconnect, other.P2PAddr, nil)
	kassatest.Eventually(n.t, 30*time.Second, "nodes disconnected", func() error {
		for _, pair := range [][2]*Node{{n, other}, {other, n}} {
			peers, err := pair[0].Client.GetPeerInfo()
			if err != nil {
				return err
			}
			for _, p := range peers {
				if p.Addr == pair[1].P2PAddr || strings.HasSuffix(p.AddrLocal, ":"+strconv.Itoa(pair[1].cfg.P2PPort)) {
					_ = pair[0].Client.Node(btcjson.NDisconnect, p.Addr, nil)
					return fmt.Errorf("%s still lists %s", pair[0].P2PAddr, p.Addr)
				}
			}
		}
		return nil
	})
	// Inbound peers show the remote's ephemeral port: drop every peer of
	// both, which is what a two-node test means by disconnecting.
	for _, m := range []*Node{n, other} {
		peers, err := m.Client.GetPeerInfo()
		if err != nil {
			n.t.Fatalf("getpeerinfo: %v", err)
		}
		for _, p := range peers {
			_ = m.Client.Node(btcjson.NDisconnect, p.Addr, nil)
		}
	}
	kassatest.Eventually(n.t, 30*time.Second, "no peers left", func() error {
		for _, m := range []*Node{n, other} {
			peers, err := m.Client.GetPeerInfo()
			if err != nil {
				return err
			}
			if len(peers) > 0 {
				return fmt.Errorf("%s has %d peers", m.P2PAddr, len(peers))
			}
		}
		return nil
	})
}

// WaitSynced waits until every node has the same best block.
func WaitSynced(t T, nodes ...*Node) {
	t.Helper()
	kassatest.Eventually(t, 60*time.Second, "nodes synced", func() error {
		want, err := nodes[0].Client.GetBestBlockHash()
		if err != nil {
			return err
		}
		for _, n := range nodes[1:] {
			got, err := n.Client.GetBestBlockHash()
			if err != nil {
				return err
			}
			if !got.IsEqual(want) {
				return fmt.Errorf("%s at %s, %s at %s", nodes[0].P2PAddr, want, n.P2PAddr, got)
			}
		}
		return nil
	})
}
