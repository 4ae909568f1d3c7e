package actors

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/clusterproviders/test"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/kassapay/kassa"
	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest"
	testharness "github.com/kassapay/kassa/kassatest/harness"
	"github.com/kassapay/kassa/protos"
)

// skipRemoteUnderRace skips a test that starts protoactor-go remoting
// in the fast tier (-short): each starts remoting for several nodes
// (seconds a test). `make test` runs them under the race detector: the
// races protoactor-go had between nodes of one process (gRPC's global
// logger, gossip state marshalled while changed, a shared math/rand,
// the member and block lists, the endpoint reader at shutdown) are
// patched in third_party/protoactor-go (docs/decisions.md, "A patched
// protoactor-go"). Their names start with TestCluster
// (TestInProcessClusterTestsAreNamedSo holds them to it).
func skipRemoteUnderRace(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("skipped in the fast tier (-short): an in-process cluster of protoactor-go nodes; make test runs it")
	}
}

// clusterCerts makes a cluster CA and n node certificates for loopback
// in a temporary directory, as `kassa cluster certs` does.
func clusterCerts(t *testing.T, n int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "certs")
	if err := nodetls.Generate(dir, n, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	return dir
}

func loadNodeTLS(t *testing.T, dir string, i int) *nodetls.Config {
	t.Helper()
	c, err := nodetls.Load(nodetls.NodeFiles(dir, i), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// tlsNode starts a one-node cluster on loopback whose node port has the
// mutual TLS of certificate i in dir, and returns it with its address.
func tlsNode(t *testing.T, dir string, i int) (*harness, string) {
	t.Helper()
	skipRemoteUnderRace(t)
	h := newHarness(t, openMem(t), kassatest.NewTestClock(time.Now()))
	c := loadNodeTLS(t, dir, i)
	if err := h.sys.Cluster.Join(ClusterConfig{Name: "test", Provider: test.NewTestProvider(test.NewInMemAgent()),
		Host: "127.0.0.1", Port: testharness.FreePort(t), ServerTLS: c.Server, ClientTLS: c.Client}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the node sees itself", func() bool { return len(h.sys.Cluster.Health().Members) == 1 })
	if _, err := h.sys.Runtime.Recover(context.Background()); err != nil {
		t.Fatal(err)
	}
	return h, h.sys.Runtime.actorSystem().Address()
}

// tlsRead dials addr with cfg and reads once (nodetls.Probe).
func tlsRead(addr string, cfg *tls.Config) error { return nodetls.Probe(addr, cfg) }

// TestClusterNodePortRefusesStrangers: the node port takes only peers
// with a certificate of the cluster CA. A client without a certificate,
// and one with a certificate of another CA, are refused in the
// handshake; so is a plaintext gRPC client. A client with a node
// certificate gets through (the positive control). Before, the port was
// plaintext gRPC that anyone could talk to.
func TestClusterNodePortRefusesStrangers(t *testing.T) {
	t.Parallel()
	dir := clusterCerts(t, 2)
	_, addr := tlsNode(t, dir, 1)
	peer := loadNodeTLS(t, dir, 2)
	stranger := loadNodeTLS(t, clusterCerts(t, 1), 1)

	// The clients trust the node (the cluster CA is their root): what
	// they are refused for is their own certificate.
	noCert := peer.Client.Clone()
	noCert.Certificates = nil
	err := tlsRead(addr, noCert)
	if err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("a client without a certificate: %v, want refused in the handshake (certificate required)", err)
	}
	otherCA := stranger.Client.Clone()
	otherCA.RootCAs = peer.Client.RootCAs // it trusts the node; the node does not trust it
	if err := tlsRead(addr, otherCA); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Errorf("a client with a certificate of another CA: %v, want refused in the handshake (unknown certificate authority)", err)
	}

	// A plaintext client, as in the attack of issue 18, gets nowhere.
	plain, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := remote.NewRemotingClient(plain).ListProcesses(ctx, &remote.ListProcessesRequest{}); status.Code(err) != codes.Unavailable {
		t.Errorf("a plaintext client: %v, want Unavailable (no connection)", err)
	}

	// The positive control: the peer's certificate completes the
	// handshake, and the server speaks (its HTTP/2 settings).
	if err := tlsRead(addr, peer.Client.Clone()); err != nil {
		t.Errorf("a node certificate of the cluster CA: %v", err)
	}
}

// TestClusterNodePortSurvivesStubsAndBadBatches: ListProcesses and
// GetProcessDiagnostics, which protoactor-go implements as
// panic("implement me"), answer Unimplemented, and a message batch that
// names a target it does not carry ends its stream with Internal; the
// node lives on and still answers. Before, each of these killed the
// node.
func TestClusterNodePortSurvivesStubsAndBadBatches(t *testing.T) {
	t.Parallel()
	dir := clusterCerts(t, 2)
	h, addr := tlsNode(t, dir, 1)
	peer := loadNodeTLS(t, dir, 2)
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(peer.Client)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := remote.NewRemotingClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for i := 0; i < 2; i++ {
		if _, err := client.ListProcesses(ctx, &remote.ListProcessesRequest{Pattern: "x"}); status.Code(err) != codes.Unimplemented {
			t.Errorf("ListProcesses: %v, want Unimplemented", err)
		}
		if _, err := client.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{Pid: actor.NewPID(addr, "x")}); status.Code(err) != codes.Unimplemented {
			t.Errorf("GetProcessDiagnostics: %v, want Unimplemented", err)
		}
	}

	stream, err := client.Receive(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&remote.RemoteMessage{MessageType: &remote.RemoteMessage_MessageBatch{MessageBatch: &remote.MessageBatch{
		TypeNames: []string{"actor.PID"},
		Envelopes: []*remote.MessageEnvelope{{Target: 7, Sender: 9, TypeId: 3}},
	}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); status.Code(err) != codes.Internal {
		t.Errorf("a batch with out-of-range indexes: %v, want Internal", err)
	}

	// The node lives: it still serves its own calls and its port.
	if _, err := h.sys.Service.CreateStore(ctx, kassa.StoreSettings{Name: "Still here", Currency: kassa.EUR}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ListProcesses(ctx, &remote.ListProcessesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ListProcesses after the bad batch: %v, want Unimplemented", err)
	}
}

// remoteClient starts a bare protoactor-go actor system with remoting on
// loopback, as the attacker of issue 18 did: it dials the node with dial,
// and serves replies with server.
func remoteClient(t *testing.T, dial grpc.DialOption, server ...grpc.ServerOption) *actor.ActorSystem {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	as := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return quiet }))
	r := remote.NewRemote(as, remote.Configure("127.0.0.1", testharness.FreePort(t), remote.WithDialOptions(dial), remote.WithServerOptions(server...)))
	r.Start()
	t.Cleanup(func() { r.Shutdown(false) })
	return as
}

// probeBudget is how long a probe that must be refused waits for each
// answer: a refusal and a timeout are both errors, so it bounds only
// the test's time, not what it proves.
const probeBudget = 3 * time.Second

// controlBudget is how long a call that must succeed (a positive
// control) waits for each answer: the time left before the test's
// deadline, less a margin to report, at most two minutes. A loaded
// machine (-race, many packages at once) slows such a call; it must
// not fail it.
func controlBudget(t *testing.T) time.Duration {
	budget := 2 * time.Minute
	if d, ok := t.Deadline(); ok {
		budget = min(budget, max(time.Until(d)-10*time.Second, probeBudget))
	}
	return budget
}

// remoteTopUp asks the node at addr, as issue 18's attack did, to
// activate the store's grain (cluster.ActivationRequest to its
// partition-activator) and then sends the grain a TopUp StoreCall,
// waiting budget for each answer.
func remoteTopUp(as *actor.ActorSystem, addr, storeID string, amount kassa.Sats, budget time.Duration) error {
	call := &protos.StoreCall{StoreId: storeID, Call: &protos.StoreCall_TopUp{TopUp: &protos.TopUpCall{AmountSat: int64(amount), Reference: kassa.NewID("ref_")}}}
	rep, err := remoteStoreCall(as, addr, call, budget)
	if err != nil {
		return fmt.Errorf("top up: %w", err)
	}
	if rep.Code != "" {
		return fmt.Errorf("top up: %v", rep)
	}
	return nil
}

// remoteStoreCall has the node at addr activate the grain of call's
// store and sends it call, and returns its reply, waiting budget for
// each answer.
func remoteStoreCall(as *actor.ActorSystem, addr string, call *protos.StoreCall, budget time.Duration) (*protos.StoreCallReply, error) {
	res, err := as.Root.RequestFuture(actor.NewPID(addr, "partition-activator"), &cluster.ActivationRequest{
		ClusterIdentity: cluster.NewClusterIdentity(call.StoreId, KindStore), RequestId: kassa.NewID("req_"),
	}, budget).Result()
	if err != nil {
		return nil, fmt.Errorf("activate: %w", err)
	}
	act, ok := res.(*cluster.ActivationResponse)
	if !ok || act.Failed || act.Pid == nil {
		return nil, fmt.Errorf("activate: %v", res)
	}
	res, err = as.Root.RequestFuture(act.Pid, call, budget).Result()
	if err != nil {
		return nil, err
	}
	rep, ok := res.(*protos.StoreCallReply)
	if !ok {
		return nil, fmt.Errorf("reply %T", res)
	}
	return rep, nil
}

// TestClusterNodePortRefusesTheAttack replays issue 18's attack: a
// client without the cluster certificate sends an ActivationRequest and
// a TopUp StoreCall to a node. It is refused, and the store's balance
// does not move; the same calls from a client with a node certificate
// (the positive control) credit it. The control waits as long as
// the test may (controlBudget): a machine under load delays it, and
// the probes' refusal is what the test proves.
func TestClusterNodePortRefusesTheAttack(t *testing.T) {
	t.Parallel()
	dir := clusterCerts(t, 2)
	h, addr := tlsNode(t, dir, 1)
	st := h.createStore("0", "0")
	ctx := context.Background()

	attacker := remoteClient(t, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err := remoteTopUp(attacker, addr, st.ID, kassa.MaxSats, probeBudget); err == nil {
		t.Error("a client without the cluster certificate topped a store up")
	}
	stranger := loadNodeTLS(t, clusterCerts(t, 1), 1)
	strangerTLS := stranger.Client.Clone()
	strangerTLS.RootCAs = loadNodeTLS(t, dir, 2).Client.RootCAs
	other := remoteClient(t, grpc.WithTransportCredentials(credentials.NewTLS(strangerTLS)), grpc.Creds(credentials.NewTLS(stranger.Server)))
	if err := remoteTopUp(other, addr, st.ID, kassa.MaxSats, probeBudget); err == nil {
		t.Error("a client with a certificate of another CA topped a store up")
	}

	peer := loadNodeTLS(t, dir, 2)
	node := remoteClient(t, grpc.WithTransportCredentials(credentials.NewTLS(peer.Client)), grpc.Creds(credentials.NewTLS(peer.Server)))
	if err := remoteTopUp(node, addr, st.ID, 1234, controlBudget(t)); err != nil {
		t.Fatalf("a client with a node certificate (the positive control): %v", err)
	}
	balance, err := h.db.Balance(ctx, st.ID)
	if err != nil {
		t.Fatal(err)
	}
	if balance != 1234 {
		t.Fatalf("balance %d, want 1234: only the node's top-up", balance)
	}
}
