//go:build daemon

package harness

import (
	"context"
	"crypto/tls"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kassapay/kassa/internal/nodetls"
)

// TestStartServesTheV3API starts etcd and uses it the way protoactor-go's
// etcd provider does (the 3.6 client against the 3.4 server): a lease, a
// key under it, a prefix watch that sees the key go when the lease is
// revoked.
func TestStartServesTheV3API(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd: skipped under -short (make test runs it)")
	}
	s, err := StartEtcd()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Error(err)
		}
	})
	c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	lease, err := c.Grant(ctx, 5)
	if err != nil {
		t.Fatal(err)
	}
	watch := c.Watch(ctx, "/kassa/", clientv3.WithPrefix())
	if _, err := c.Put(ctx, "/kassa/node", "a", clientv3.WithLease(lease.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Revoke(ctx, lease.ID); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for len(seen) < 2 {
		select {
		case res := <-watch:
			if err := res.Err(); err != nil {
				t.Fatal(err)
			}
			for _, ev := range res.Events {
				seen = append(seen, ev.Type.String())
			}
		case <-ctx.Done():
			t.Fatalf("watch saw %v, want PUT then DELETE", seen)
		}
	}
	if seen[0] != "PUT" || seen[1] != "DELETE" {
		t.Fatalf("watch saw %v, want PUT then DELETE", seen)
	}
	got, err := c.Get(ctx, "/kassa/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 0 {
		t.Fatalf("keys left after the lease was revoked: %v", got.Kvs)
	}
}

// TestStartEtcdTLS: StartEtcdTLS serves TLS only, to clients with a
// certificate of the CA it was given.
func TestStartEtcdTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("needs etcd: skipped under -short (make test runs it)")
	}
	dir := t.TempDir()
	if err := nodetls.Generate(dir, 2, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	s := EtcdTLSForTest(t, nodetls.NodeFiles(dir, 1))
	get := func(cfg *tls.Config) error {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{s.Endpoint()}, DialTimeout: 2 * time.Second, TLS: cfg})
		if err != nil {
			return err
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		defer cancel()
		_, err = c.Get(ctx, "/kassa/ping")
		return err
	}
	client, err := nodetls.LoadClient(nodetls.NodeFiles(dir, 2))
	if err != nil {
		t.Fatal(err)
	}
	if err := get(client); err != nil {
		t.Fatalf("a client with a node certificate: %v", err)
	}
	if err := get(nil); err == nil {
		t.Error("a plaintext client was answered")
	}
	noCert := client.Clone()
	noCert.Certificates = nil
	if err := get(noCert); err == nil {
		t.Error("a client without a certificate was answered")
	}
}
