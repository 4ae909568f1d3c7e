package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/etcdtest"
)

// With KASSA_E2E_STORE=cluster (`make test-cluster`) the end-to-end suite
// runs against three-node clusters: every server a test starts is the
// first node of a cluster with two more, over the data directory's own
// PostgreSQL schema and its own etcd. The test talks to the first node,
// which forwards what concerns stores the others run; the server's log is
// all three nodes' logs.

var e2eEtcd struct {
	mu      sync.Mutex
	servers map[string]*etcdtest.Server // data directory → its cluster's etcd
}

// e2eCluster says whether the end-to-end tests run on clusters.
func e2eCluster() bool { return os.Getenv("KASSA_E2E_STORE") == "cluster" }

// e2eClusterArgs returns the cluster flags of a node with data in dir (or
// of a peer of that node): none unless the tests run on clusters.
func e2eClusterArgs(t *testing.T, dir string) []string {
	t.Helper()
	if !e2eCluster() {
		return nil
	}
	e2eEtcd.mu.Lock()
	defer e2eEtcd.mu.Unlock()
	if e2eEtcd.servers == nil {
		e2eEtcd.servers = map[string]*etcdtest.Server{}
	}
	et, ok := e2eEtcd.servers[dir]
	if !ok {
		var err error
		if et, err = etcdtest.Start(); err != nil {
			t.Fatal(err)
		}
		e2eEtcd.servers[dir] = et
	}
	return []string{"--cluster", et.ClusterURL(), "--node-listen", fmt.Sprintf("127.0.0.1:%d", freeLoopbackPort(t))}
}

func stopE2EClusters() {
	e2eEtcd.mu.Lock()
	defer e2eEtcd.mu.Unlock()
	for _, et := range e2eEtcd.servers {
		if err := et.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
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
		peers = append(peers, launchServer(t, pdir, append(e2eStoreArgs(t, dir), extra...)...))
	}
	s.mu.Lock()
	s.peers = peers
	s.mu.Unlock()
	for _, n := range append([]*server{s}, peers...) {
		waitFor(t, 30*time.Second, "a three-node cluster", func() bool { return len(clusterHealth(n).Members) == 3 })
	}
}

// peerList returns the server's cluster peers.
func (s *server) peerList() []*server {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.peers
}
