package main

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest/harness"
)

// TestClusterJoinsThroughTLSEtcd: an etcd that serves TLS only and
// requires a client certificate of the cluster CA (etcd's
// --client-cert-auth, its certificate made by kassa cluster certs) takes
// two nodes that name ca=, cert= and key= in --cluster, and they see each
// other; a node that reaches it in plaintext, one that trusts another CA
// and one without a client certificate do not start, and none of them
// falls back to plaintext.
func TestClusterJoinsThroughTLSEtcd(t *testing.T) {
	t.Parallel()
	needBinary(t)
	_, dsn := harness.PostgresForTest(t)
	certs := filepath.Join(t.TempDir(), "certs")
	if err := nodetls.Generate(certs, 3, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	et := harness.EtcdTLSForTest(t, nodetls.NodeFiles(certs, 1))
	node := func(i int, cluster string) []string {
		f := nodetls.NodeFiles(certs, i)
		return []string{"--store", dsn, "--cluster", cluster, "--node-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t)),
			"--node-tls-ca", f.CA, "--node-tls-cert", f.Cert, "--node-tls-key", f.Key}
	}
	var nodes []*server
	for _, i := range []int{2, 3} {
		nodes = append(nodes, launchServer(t, t.TempDir(), node(i, et.ClusterURLTLS(nodetls.NodeFiles(certs, i)))...))
	}
	for _, s := range nodes {
		waitFor(t, 30*time.Second, "both nodes see both members through TLS etcd", func() bool { return len(clusterHealth(s).Members) == 2 })
	}

	others := filepath.Join(t.TempDir(), "others")
	if err := nodetls.Generate(others, 1, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	f2, stranger := nodetls.NodeFiles(certs, 2), nodetls.NodeFiles(others, 1)
	for _, c := range []struct{ what, cluster string }{
		{"plaintext", et.ClusterURL()},
		{"another CA", et.ClusterURLTLS(stranger)},
		{"the CA, a client certificate of another", et.ClusterURLTLS(nodetls.Files{CA: f2.CA, Cert: stranger.Cert, Key: stranger.Key})},
		{"no client certificate", et.ClusterURL() + "?ca=" + f2.CA},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		args := append([]string{"serve", "--data", t.TempDir(), "--listen", "127.0.0.1:0", "--chain", "sim", "--lightning", "sim"}, node(2, c.cluster)...)
		start := time.Now()
		out, err := exec.CommandContext(ctx, binPath, args...).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "does not answer") {
			t.Errorf("%s: kassa serve --cluster %s: %v\n%s\nwant it not to start: etcd does not answer", c.what, c.cluster, err, out)
		}
		t.Logf("%s: refused, the node stopped after %v", c.what, time.Since(start).Round(time.Millisecond))
	}
}
