package harness

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	"github.com/kassapay/kassa/kassatest"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
)

// LndVersion is the lnd release the tests run against.
const LndVersion = "v0.21.3-beta"

var (
	lndOnce sync.Once
	lndDir  string
	lndErr  error
)

// LndDir builds lnd and lncli with scripts/build-lnd.sh (once per
// process; the script caches them by version across runs, the first
// build takes minutes) and returns the directory that holds them.
// KASSA_LND_DIR names a directory with prebuilt binaries instead. A
// failed build fails the test: integration tests never skip because a
// daemon is missing.
func LndDir(t T) string {
	t.Helper()
	lndOnce.Do(func() {
		if dir := os.Getenv("KASSA_LND_DIR"); dir != "" {
			lndDir = dir
			return
		}
		cmd := exec.Command("bash", filepath.Join(repoRoot(), "scripts", "build-lnd.sh"), LndVersion)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			lndErr = fmt.Errorf("scripts/build-lnd.sh: %w\n%s", err, stderr.String())
			return
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		lndDir = lines[len(lines)-1]
	})
	if lndErr != nil {
		t.Fatalf("%v", lndErr)
	}
	return lndDir
}

// Lnd is a running lnd on regtest, backed by a btcd Node.
type Lnd struct {
	t    T
	Name string
	Dir  string
	// RPCAddr and P2PAddr are host:port on loopback.
	RPCAddr, P2PAddr string
	TLSCertPath      string
	MacaroonPath     string
	btcd             *Node

	mu     sync.Mutex
	proc   *daemon
	conn   *grpc.ClientConn
	Client lnrpc.LightningClient
	Router routerrpc.RouterClient
}

// StartLnd starts an lnd named name on btcd and waits until its RPC
// answers and it is synced to the chain. It is stopped when the test
// ends (before btcd, whose cleanup was registered first).
func StartLnd(t T, btcd *Node, name string) *Lnd {
	t.Helper()
	SkipShort(t, "lnd")
	dir := t.TempDir()
	l := &Lnd{
		t: t, Name: name, Dir: dir, btcd: btcd,
		RPCAddr:      fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		P2PAddr:      fmt.Sprintf("127.0.0.1:%d", FreePort(t)),
		TLSCertPath:  filepath.Join(dir, "tls.cert"),
		MacaroonPath: filepath.Join(dir, "data", "chain", "bitcoin", "regtest", "admin.macaroon"),
	}
	l.start()
	t.Cleanup(l.Stop)
	return l
}

func (l *Lnd) start() {
	t := l.t
	t.Helper()
	args := []string{
		"--lnddir=" + l.Dir, "--noseedbackup", "--nobootstrap", "--norest",
		"--bitcoin.regtest", "--bitcoin.node=btcd",
		"--btcd.rpchost=" + l.btcd.RPCAddr, "--btcd.rpcuser=" + RPCUser, "--btcd.rpcpass=" + RPCPass,
		"--btcd.rpccert=" + l.btcd.CertPath,
		"--rpclisten=" + l.RPCAddr, "--listen=" + l.P2PAddr,
		"--trickledelay=50", "--debuglevel=info", "--alias=" + l.Name,
		"--tlsextraip=127.0.0.1",
	}
	logf, err := os.OpenFile(filepath.Join(l.Dir, "lnd.out"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatalf("lnd log: %v", err)
	}
	cmd := exec.Command(filepath.Join(LndDir(t), "lnd"), args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	proc, err := startDaemon(cmd, func() { logf.Close() })
	if err != nil {
		logf.Close()
		t.Fatalf("start lnd %s: %v", l.Name, err)
	}
	l.mu.Lock()
	l.proc = proc
	l.mu.Unlock()

	err = proc.waitReady(120*time.Second, 100*time.Millisecond, func() bool {
		if l.connect() != nil {
			return false
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		info, err := l.Client.GetInfo(ctx, &lnrpc.GetInfoRequest{})
		return err == nil && info.SyncedToChain
	})
	switch err {
	case errExited:
		t.Fatalf("lnd %s exited at start; its output:\n%s", l.Name, l.Output())
	case errNotReady:
		t.Fatalf("lnd %s did not answer within 120s; its output:\n%s", l.Name, l.Output())
	}
}

// connect dials the node's gRPC once its certificate and macaroon exist.
func (l *Lnd) connect() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		return nil
	}
	pem, err := os.ReadFile(l.TLSCertPath)
	if err != nil {
		return err
	}
	mac, err := os.ReadFile(l.MacaroonPath)
	if err != nil {
		return err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return errors.New("no certificate yet")
	}
	conn, err := grpc.NewClient(l.RPCAddr,
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool})),
		grpc.WithPerRPCCredentials(macaroonCreds(hex.EncodeToString(mac))))
	if err != nil {
		return err
	}
	l.conn, l.Client, l.Router = conn, lnrpc.NewLightningClient(conn), routerrpc.NewRouterClient(conn)
	return nil
}

type macaroonCreds string

func (m macaroonCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"macaroon": string(m)}, nil
}
func (macaroonCreds) RequireTransportSecurity() bool { return true }

// URL is the --lightning value that points Kassa at this node.
func (l *Lnd) URL() string {
	return "lnd://" + l.RPCAddr + "?tls=" + url.QueryEscape(l.TLSCertPath) + "&macaroon=" + url.QueryEscape(l.MacaroonPath)
}

// Output returns the tail of what lnd printed.
func (l *Lnd) Output() string {
	return fileTail(filepath.Join(l.Dir, "lnd.out"), 8000)
}

// Pid is the running lnd process's id (0 when stopped).
func (l *Lnd) Pid() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.proc == nil {
		return 0
	}
	return l.proc.cmd.Process.Pid
}

// Stop stops lnd (interrupt, then kill after 30 s) and waits for it.
func (l *Lnd) Stop() {
	if proc := l.detach(); proc != nil {
		proc.stop(syscall.SIGINT, 30*time.Second)
	}
}

// Kill kills lnd at once (SIGKILL) and waits for it.
func (l *Lnd) Kill() {
	if proc := l.detach(); proc != nil {
		proc.kill()
	}
}

// detach forgets the running process (nil when stopped) and closes the
// connection to it, for Stop and Kill.
func (l *Lnd) detach() *daemon {
	l.mu.Lock()
	proc, conn := l.proc, l.conn
	l.proc, l.conn = nil, nil
	l.mu.Unlock()
	if proc != nil && conn != nil {
		conn.Close()
	}
	return proc
}

// Start starts a stopped lnd again with its data and ports.
func (l *Lnd) Start() {
	l.t.Helper()
	l.start()
}

// ctx is a context for one call.
func (l *Lnd) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 30*time.Second)
}

// PubKey returns the node's identity key, hex.
func (l *Lnd) PubKey() string {
	l.t.Helper()
	ctx, cancel := l.ctx()
	defer cancel()
	info, err := l.Client.GetInfo(ctx, &lnrpc.GetInfoRequest{})
	if err != nil {
		l.t.Fatalf("lnd %s GetInfo: %v", l.Name, err)
	}
	return info.IdentityPubkey
}

// NewAddress returns a new address of the node's wallet.
func (l *Lnd) NewAddress() string {
	l.t.Helper()
	ctx, cancel := l.ctx()
	defer cancel()
	r, err := l.Client.NewAddress(ctx, &lnrpc.NewAddressRequest{Type: lnrpc.AddressType_WITNESS_PUBKEY_HASH})
	if err != nil {
		l.t.Fatalf("lnd %s NewAddress: %v", l.Name, err)
	}
	return r.Address
}

// WaitBalance waits until the node's wallet has at least sats confirmed.
func (l *Lnd) WaitBalance(sats int64) {
	l.t.Helper()
	kassatest.Eventually(l.t, 60*time.Second, "lnd "+l.Name+" funded", func() error {
		ctx, cancel := l.ctx()
		defer cancel()
		b, err := l.Client.WalletBalance(ctx, &lnrpc.WalletBalanceRequest{})
		if err != nil {
			return err
		}
		if b.ConfirmedBalance < sats {
			return fmt.Errorf("confirmed balance %d", b.ConfirmedBalance)
		}
		return nil
	})
}

// OpenChannel opens a channel of capacity sats from l to peer, mines it
// deep enough and waits until both see it active.
func (l *Lnd) OpenChannel(peer *Lnd, sats int64) {
	t := l.t
	t.Helper()
	ctx, cancel := l.ctx()
	defer cancel()
	_, err := l.Client.ConnectPeer(ctx, &lnrpc.ConnectPeerRequest{Addr: &lnrpc.LightningAddress{Pubkey: peer.PubKey(), Host: peer.P2PAddr}, Perm: true})
	if err != nil && !strings.Contains(err.Error(), "already connected") {
		t.Fatalf("lnd %s connect to %s: %v", l.Name, peer.Name, err)
	}
	peerKey, _ := hex.DecodeString(peer.PubKey())
	kassatest.Eventually(t, 60*time.Second, "channel "+l.Name+" → "+peer.Name+" opened", func() error {
		ctx, cancel := l.ctx()
		defer cancel()
		_, err := l.Client.OpenChannelSync(ctx, &lnrpc.OpenChannelRequest{NodePubkey: peerKey, LocalFundingAmount: sats, SatPerVbyte: 2})
		return err
	})
	l.btcd.Mine(6)
	l.waitOpenedActive(peer)
}

// waitOpenedActive waits until the channel l opened to peer is active at
// both ends: l as its initiator, peer as the other side. WaitActive
// alone would pass on an older channel of the pair opened the other way.
func (l *Lnd) waitOpenedActive(peer *Lnd) {
	t := l.t
	t.Helper()
	for _, side := range []struct {
		n, other  *Lnd
		initiator bool
	}{{l, peer, true}, {peer, l, false}} {
		otherKey := side.other.PubKey()
		kassatest.Eventually(t, 120*time.Second, "channel "+l.Name+" → "+peer.Name+" active at "+side.n.Name, func() error {
			ctx, cancel := side.n.ctx()
			defer cancel()
			r, err := side.n.Client.ListChannels(ctx, &lnrpc.ListChannelsRequest{ActiveOnly: true})
			if err != nil {
				return err
			}
			for _, c := range r.Channels {
				if c.RemotePubkey == otherKey && c.Initiator == side.initiator {
					return nil
				}
			}
			return errors.New("not active yet")
		})
	}
}

// Reconnect connects l to peer again after one of them restarted, instead
// of waiting for lnd's own reconnection backoff, and waits until both see
// their channel active.
func (l *Lnd) Reconnect(peer *Lnd) {
	t := l.t
	t.Helper()
	kassatest.Eventually(t, 60*time.Second, l.Name+" reconnected to "+peer.Name, func() error {
		ctx, cancel := l.ctx()
		defer cancel()
		_, err := l.Client.ConnectPeer(ctx, &lnrpc.ConnectPeerRequest{Addr: &lnrpc.LightningAddress{Pubkey: peer.PubKey(), Host: peer.P2PAddr}, Perm: true})
		if err != nil && !strings.Contains(err.Error(), "already connected") {
			return err
		}
		return nil
	})
	l.WaitActive(peer)
}

// WaitActive waits until both l and peer see their channel active (after
// it opened, or after one of them restarted).
func (l *Lnd) WaitActive(peer *Lnd) {
	t := l.t
	t.Helper()
	for _, pair := range [][2]*Lnd{{l, peer}, {peer, l}} {
		n, other := pair[0], pair[1]
		otherKey := other.PubKey()
		kassatest.Eventually(t, 120*time.Second, "channel "+l.Name+" – "+peer.Name+" active at "+n.Name, func() error {
			ctx, cancel := n.ctx()
			defer cancel()
			r, err := n.Client.ListChannels(ctx, &lnrpc.ListChannelsRequest{ActiveOnly: true})
			if err != nil {
				return err
			}
			for _, c := range r.Channels {
				if c.RemotePubkey == otherKey {
					return nil
				}
			}
			return errors.New("not active yet")
		})
	}
}

// Pay pays a BOLT11 invoice and returns the final payment. The first
// payment after a channel turns active can fail for a few seconds;
// Pay retries failures until timeout.
func (l *Lnd) Pay(pr string, timeout time.Duration) (*lnrpc.Payment, error) {
	deadline := time.Now().Add(timeout)
	for {
		p, err := l.payOnce(pr)
		if err == nil && p.Status == lnrpc.Payment_SUCCEEDED {
			return p, nil
		}
		if time.Now().After(deadline) {
			if err == nil {
				err = fmt.Errorf("payment %s: %s", p.Status, p.FailureReason)
			}
			return p, err
		}
		if err != nil && (strings.Contains(err.Error(), "already paid") || strings.Contains(err.Error(), "invoice expired") || strings.Contains(err.Error(), "invoice is expired")) {
			return p, err
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (l *Lnd) payOnce(pr string) (*lnrpc.Payment, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	s, err := l.Router.SendPaymentV2(ctx, &routerrpc.SendPaymentRequest{PaymentRequest: pr, TimeoutSeconds: 30, FeeLimitSat: 1000, NoInflightUpdates: true})
	if err != nil {
		return nil, err
	}
	for {
		p, err := s.Recv()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("payment stream ended")
		}
		if err != nil {
			return nil, err
		}
		if p.Status == lnrpc.Payment_SUCCEEDED || p.Status == lnrpc.Payment_FAILED {
			return p, nil
		}
	}
}

// WaitRoute waits until l finds a route to dest for sats: the channels
// on the way are in l's graph.
func (l *Lnd) WaitRoute(dest *Lnd, sats int64) {
	t := l.t
	t.Helper()
	key := dest.PubKey()
	kassatest.Eventually(t, 120*time.Second, "a route from "+l.Name+" to "+dest.Name, func() error {
		ctx, cancel := l.ctx()
		defer cancel()
		r, err := l.Client.QueryRoutes(ctx, &lnrpc.QueryRoutesRequest{PubKey: key, Amt: sats})
		if err != nil {
			return err
		}
		if len(r.Routes) == 0 {
			return errors.New("no route")
		}
		return nil
	})
}
