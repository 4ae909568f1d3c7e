package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest/harness"
)

// flagValue returns the value of flag name in args.
func flagValue(t *testing.T, args []string, name string) string {
	t.Helper()
	for i, a := range args {
		if a == name && i+1 < len(args) {
			return args[i+1]
		}
	}
	t.Fatalf("no %s in %v", name, args)
	return ""
}

// readTLS dials addr with cfg and reads once (nodetls.Probe).
func readTLS(addr string, cfg *tls.Config) error { return nodetls.Probe(addr, cfg) }

// TestClusterNodePortMutualTLS starts a cluster node as an operator
// would, with certificates of `kassa cluster certs`: a client without a
// certificate and one with a certificate of another CA are refused in
// the handshake; a peer with a node certificate gets through, and
// ListProcesses and GetProcessDiagnostics (panic("implement me") in
// protoactor-go) answer Unimplemented while the node lives on. Before,
// the node port was plaintext and ListProcesses ended the process.
func TestClusterNodePortMutualTLS(t *testing.T) {
	t.Parallel()
	nodes, flags := startCluster(t, 1)
	addr := flagValue(t, flags[0], "--node-listen")
	peer, err := nodetls.Load(nodetls.Files{CA: flagValue(t, flags[0], "--node-tls-ca"),
		Cert: strings.Replace(flagValue(t, flags[0], "--node-tls-cert"), "node1", "node2", 1),
		Key:  strings.Replace(flagValue(t, flags[0], "--node-tls-key"), "node1", "node2", 1)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	others := filepath.Join(t.TempDir(), "others")
	if err := nodetls.Generate(others, 1, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	stranger, err := nodetls.Load(nodetls.NodeFiles(others, 1), time.Now())
	if err != nil {
		t.Fatal(err)
	}

	noCert := peer.Client.Clone()
	noCert.Certificates = nil
	if err := readTLS(addr, noCert); err == nil || !strings.Contains(err.Error(), "certificate required") {
		t.Errorf("a client without a certificate: %v, want refused in the handshake", err)
	}
	otherCA := stranger.Client.Clone()
	otherCA.RootCAs = peer.Client.RootCAs
	if err := readTLS(addr, otherCA); err == nil || !strings.Contains(err.Error(), "unknown certificate authority") {
		t.Errorf("a client with a certificate of another CA: %v, want refused in the handshake", err)
	}
	if err := readTLS(addr, peer.Client); err != nil {
		t.Errorf("a peer with a node certificate: %v", err)
	}

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(credentials.NewTLS(peer.Client)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	client := remote.NewRemotingClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := client.ListProcesses(ctx, &remote.ListProcessesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("ListProcesses: %v, want Unimplemented", err)
	}
	if _, err := client.GetProcessDiagnostics(ctx, &remote.GetProcessDiagnosticsRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("GetProcessDiagnostics: %v, want Unimplemented", err)
	}
	if h := clusterHealth(nodes[0]); len(h.Members) != 1 {
		t.Fatalf("after ListProcesses the node answers %+v, want itself as the one member", h)
	}
}

// TestClusterNodeRefusesToStartUnauthenticated: a cluster node without
// the node port's certificates does not start, nor does --node-insecure
// on an address other machines reach; each says what to give.
func TestClusterNodeRefusesToStartUnauthenticated(t *testing.T) {
	needBinary(t)
	t.Parallel()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--node-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}, "--cluster needs the node port's mutual TLS"},
		{[]string{"--node-listen", "10.0.0.5:7001", "--node-insecure"}, "--node-insecure only with a loopback --node-listen"},
	} {
		args := append([]string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--store", "postgres://kassa@127.0.0.1:1/kassa",
			"--cluster", "etcd://127.0.0.1:1", "--chain", "sim", "--lightning", "sim"}, c.args...)
		out, err := exec.Command(binPath, args...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), c.want) {
			t.Errorf("kassa %v: %v\n%s\nwant a refusal with %q", args, err, out, c.want)
		}
	}
}
