package main

import (
	"testing"
	"time"
)

// TestClusterSigtermWithoutEtcd: SIGTERM stops a cluster's node within
// --shutdown-timeout (and the few seconds of closeGrace) while etcd does
// not answer, and while PostgreSQL does not either. Before, the node
// waited for etcd to leave the membership and was still running 20 to
// 45 s after SIGTERM.
func TestClusterSigtermWithoutEtcd(t *testing.T) {
	if e2eOnPostgres() {
		t.Skip("starts its own PostgreSQL and etcd; make test runs it")
	}
	const timeout = 3 * time.Second
	nodes, _, pg, et := startClusterInfra(t, 2, "--dev", "--shutdown-timeout", timeout.String())
	if err := et.Stop(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	nodes[0].sigterm()
	if took := time.Since(start); took > timeout+closeGrace+time.Second {
		t.Errorf("node 0 took %v to stop after SIGTERM without etcd, bound %v", took.Round(time.Millisecond), timeout+closeGrace)
	} else {
		t.Logf("node 0 stopped %v after SIGTERM without etcd", took.Round(time.Millisecond))
	}
	if err := pg.Down(); err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	nodes[1].sigterm()
	if took := time.Since(start); took > timeout+closeGrace+time.Second {
		t.Errorf("node 1 took %v to stop after SIGTERM without etcd and PostgreSQL, bound %v", took.Round(time.Millisecond), timeout+closeGrace)
	} else {
		t.Logf("node 1 stopped %v after SIGTERM without etcd and PostgreSQL", took.Round(time.Millisecond))
	}
}
