package harness

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
)

// ClusterNodes hands out the cluster flags of the nodes of one test
// cluster: each node listens on a free loopback port, and its node port
// has mutual TLS with certificates made as `kassa cluster certs` makes
// them, in a temporary directory.
type ClusterNodes struct {
	t     T
	dir   string
	n     int
	etcd  string
	store string
}

// clusterCerts is how many node certificates a test cluster has; nodes
// beyond that share them.
const clusterCerts = 3

// NewClusterNodes makes the certificates of a test cluster with etcd at
// etcdURL (etcd://HOST:PORT) over the PostgreSQL store dsn.
func NewClusterNodes(t T, etcdURL, dsn string) *ClusterNodes {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "cluster-certs")
	if err := nodetls.Generate(dir, clusterCerts, nil, time.Now()); err != nil {
		t.Fatalf("cluster certificates: %v", err)
	}
	return &ClusterNodes{t: t, dir: dir, etcd: etcdURL, store: dsn}
}

// Next returns the serve flags of the next node: --store, --cluster,
// --node-listen and --node-tls-*.
func (c *ClusterNodes) Next() []string {
	c.t.Helper()
	c.n++
	f := nodetls.NodeFiles(c.dir, (c.n-1)%clusterCerts+1)
	return []string{"--store", c.store, "--cluster", c.etcd, "--node-listen", fmt.Sprintf("127.0.0.1:%d", FreePort(c.t)),
		"--node-tls-ca", f.CA, "--node-tls-cert", f.Cert, "--node-tls-key", f.Key}
}
