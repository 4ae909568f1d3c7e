package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest/harness"
)

// With KASSA_E2E_STORE=cluster (`make test-cluster`) the end-to-end suite
// runs against three-node clusters: every server a test starts is the
// first node of a cluster with two more, over the data directory's own
// PostgreSQL schema and its own etcd. The test talks to the first node,
// which forwards what concerns stores the others run; the server's log is
// all three nodes' logs.

var e2eEtcd struct {
	mu      sync.Mutex
	servers map[string]*harness.Etcd // data directory → its cluster's etcd
	certs   map[string]string        // data directory → its cluster's certificates
}

// e2eCluster says whether the end-to-end tests run on clusters.
func e2eCluster() bool { return os.Getenv("KASSA_E2E_STORE") == "cluster" }

// e2eClusterArgs returns the cluster flags of a node with data in dir (or
// of a peer of that node): none unless the tests run on clusters.
func e2eClusterArgs(t *testing.T, dir string) []string {
	needBinary(t)
	t.Helper()
	if !e2eCluster() {
		return nil
	}
	e2eEtcd.mu.Lock()
	defer e2eEtcd.mu.Unlock()
	if e2eEtcd.servers == nil {
		e2eEtcd.servers = map[string]*harness.Etcd{}
	}
	et, ok := e2eEtcd.servers[dir]
	if !ok {
		var err error
		if et, err = harness.StartEtcd(); err != nil {
			t.Fatal(err)
		}
		e2eEtcd.servers[dir] = et
	}
	// The certificates live outside the data directories, which some
	// tests want empty (kassa restore).
	if e2eEtcd.certs == nil {
		e2eEtcd.certs = map[string]string{}
	}
	certs, ok := e2eEtcd.certs[dir]
	if !ok {
		tmp, err := os.MkdirTemp("", "kassa-e2e-certs")
		if err != nil {
			t.Fatal(err)
		}
		certs = filepath.Join(tmp, "certs")
		e2eEtcd.certs[dir] = certs
	}
	return append([]string{"--cluster", et.ClusterURL(), "--node-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))},
		nodeTLSArgs(t, certs)...)
}

// clusterCertsMade counts the nodes given certificates of each directory
// (see nodeTLSArgs).
var clusterCertsMade struct {
	mu    sync.Mutex
	nodes map[string]int
}

// nodeTLSCerts is how many node certificates a test cluster has.
const nodeTLSCerts = 3

// nodeTLSArgs returns the --node-tls-* flags of the next node of the
// cluster whose certificates are in dir, making them the first time
// with the code of `kassa cluster certs`: every cluster node a test
// starts has mutual TLS on its node port.
func nodeTLSArgs(t *testing.T, dir string) []string {
	t.Helper()
	clusterCertsMade.mu.Lock()
	defer clusterCertsMade.mu.Unlock()
	if clusterCertsMade.nodes == nil {
		clusterCertsMade.nodes = map[string]int{}
	}
	n, ok := clusterCertsMade.nodes[dir]
	if !ok {
		if err := nodetls.Generate(dir, nodeTLSCerts, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	clusterCertsMade.nodes[dir] = n + 1
	f := nodetls.NodeFiles(dir, n%nodeTLSCerts+1)
	return []string{"--node-tls-ca", f.CA, "--node-tls-cert", f.Cert, "--node-tls-key", f.Key}
}

func stopE2EClusters() {
	e2eEtcd.mu.Lock()
	defer e2eEtcd.mu.Unlock()
	for _, et := range e2eEtcd.servers {
		if err := et.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
	}
	for _, certs := range e2eEtcd.certs {
		os.RemoveAll(filepath.Dir(certs))
	}
}

// startPeers starts the two other nodes of s's cluster when the tests run
// on clusters, and waits until all three see each other.
func startPeers(t *testing.T, s *server, dir string, extra ...string) {
	t.Helper()
	if !e2eCluster() {
		return
	}
	var peers []*server
	for i := 1; i <= 2; i++ {
		pdir := filepath.Join(dir, fmt.Sprintf("peer%d", i))
		flags := e2eStoreArgs(t, dir)
		p := launchServer(t, pdir, append(flags, peerFlags(t, extra)...)...)
		p.nodeFlags = flags
		peers = append(peers, p)
	}
	s.mu.Lock()
	s.peers = peers
	s.mu.Unlock()
	waitThreeNodes(t, s.nodes())
}

// peerFlags are a test's extra flags for a peer node: the same, but a
// debug listener of its own on a free loopback port, as a node's debug
// listener is the node's (a node that cannot bind it does not start).
func peerFlags(t *testing.T, extra []string) []string {
	t.Helper()
	out := slices.Clone(extra)
	own := func() string { return fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)) }
	for i, f := range out {
		switch {
		case (f == "--debug-listen" || f == "-debug-listen") && i+1 < len(out):
			out[i+1] = own()
		case strings.HasPrefix(f, "--debug-listen="), strings.HasPrefix(f, "-debug-listen="):
			out[i] = f[:strings.IndexByte(f, '=')+1] + own()
		}
	}
	return out
}

// waitThreeNodes waits until each of the nodes sees three members.
func waitThreeNodes(t *testing.T, nodes []*server) {
	t.Helper()
	for _, n := range nodes {
		waitFor(t, 30*time.Second, "a three-node cluster", func() bool { return len(clusterHealth(n).Members) == 3 })
	}
}

// peerList returns the server's cluster peers.
func (s *server) peerList() []*server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers
}

// nodes returns the nodes of s's cluster, s first; only s on a single
// node.
func (s *server) nodes() []*server { return append([]*server{s}, s.peerList()...) }

// nodeOf returns the node of s's cluster that runs the store of an
// invoice: the one whose own log has the invoice's events (the invoice
// actor is a child of its store's actor, and the store grain runs on one
// node). On a single node it is s. It waits for the invoice's first
// event, which follows its creation's answer by a moment.
func (s *server) nodeOf(invoiceID string) *server {
	s.t.Helper()
	var owner *server
	waitFor(s.t, 30*time.Second, "the events of invoice "+invoiceID+" in a node's log", func() bool {
		for _, n := range s.nodes() {
			for _, m := range eventLine.FindAllStringSubmatch(n.ownLogs(), -1) {
				if m[1] == invoiceID {
					owner = n
					return true
				}
			}
		}
		return false
	})
	return owner
}

// restartNode starts node n of s's cluster again on its data, after n
// exited, with its store and cluster flags and extra. On a single node
// that is startServer on n's data. In a cluster n rejoins the two other
// nodes, which went on running (at the same node address, so that its
// stores come back to it); the server returned has them as its peers and
// the restart waits until all three see each other.
func (s *server) restartNode(n *server, extra ...string) *server {
	s.t.Helper()
	if !e2eCluster() {
		return startServer(s.t, n.data, extra...)
	}
	r := launchServer(s.t, n.data, append(n.nodeFlags, extra...)...)
	r.nodeFlags = n.nodeFlags
	var others []*server
	for _, o := range s.nodes() {
		if o != n {
			others = append(others, o)
		}
	}
	r.mu.Lock()
	r.peers = others
	r.mu.Unlock()
	waitThreeNodes(s.t, r.nodes())
	return r
}
