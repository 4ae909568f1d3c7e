package main

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
)

// TestClusterNodesRefuseARevokedCertificate: two running nodes take a
// third certificate of their CA on the node port until `kassa cluster
// revoke` names it, and refuse it from then on (each follows the list in
// etcd), while their own certificates go on working.
func TestClusterNodesRefuseARevokedCertificate(t *testing.T) {
	t.Parallel()
	_, flags := startCluster(t, 2)
	dir := filepath.Dir(flagValue(t, flags[0], "--node-tls-ca"))
	load := func(i int) *nodetls.Config {
		c, err := nodetls.Load(nodetls.NodeFiles(dir, i), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	revoked, kept := load(3), load(1)
	ports := []string{flagValue(t, flags[0], "--node-listen"), flagValue(t, flags[1], "--node-listen")}
	for _, p := range ports {
		if err := nodetls.Probe(p, revoked.Client); err != nil {
			t.Fatalf("node certificate 3 at %s before the revocation: %v", p, err)
		}
	}
	var out, errOut bytes.Buffer
	start := time.Now()
	if err := runCluster([]string{"revoke", "--cluster", flagValue(t, flags[0], "--cluster"), "--cert", nodetls.NodeFiles(dir, 3).Cert}, &out, &errOut); err != nil {
		t.Fatalf("kassa cluster revoke: %v\n%s", err, errOut.String())
	}
	for _, p := range ports {
		waitFor(t, 10*time.Second, "node certificate 3 refused at "+p, func() bool { return nodetls.Probe(p, revoked.Client) != nil })
		t.Logf("node at %s: the revoked certificate refused within %v of kassa cluster revoke", p, time.Since(start).Round(time.Millisecond))
		if err := nodetls.Probe(p, kept.Client); err != nil {
			t.Errorf("node certificate 1 at %s after another's revocation: %v", p, err)
		}
	}
}
