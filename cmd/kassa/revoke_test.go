package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest/harness"
)

// tlsEcho accepts TLS connections on a loopback port with cfg, writes a
// byte to each after the handshake and holds it open until the peer or
// the server closes it.
func tlsEcho(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if _, err := c.Write([]byte{1}); err != nil {
					return
				}
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	return ln.Addr().String()
}

// dialTLS dials addr with cfg and reads the server's first byte: in TLS
// 1.3 a client learns that its certificate was refused on its first read.
func dialTLS(addr string, cfg *tls.Config) (*tls.Conn, error) {
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return nil, err
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != nil {
		c.Close()
		return nil, err
	}
	c.SetReadDeadline(time.Time{})
	return c, nil
}

// TestClusterRevokedNodeRefused: `kassa cluster revoke --cert FILE` puts
// a node certificate on the cluster's list in etcd; a node that follows
// the list (as kassa serve does in cluster mode) refuses it from then on
// in the node port's handshake, both as the server and when it dials,
// and closes the connection the revoked node had open to it, while the
// other nodes' certificates of the same CA go on working. Before, a node
// certificate could only be taken back by a new CA for every node.
func TestClusterRevokedNodeRefused(t *testing.T) {
	t.Parallel()
	et := harness.EtcdForTest(t)
	certs := filepath.Join(t.TempDir(), "certs")
	if err := nodetls.Generate(certs, 3, nil, time.Now()); err != nil {
		t.Fatal(err)
	}
	f1, f2, f3 := nodetls.NodeFiles(certs, 1), nodetls.NodeFiles(certs, 2), nodetls.NodeFiles(certs, 3)
	s := &clusterSettings{host: "127.0.0.1"}
	if err := parseNodeTLS(Config{NodeListen: "127.0.0.1:7000", NodeTLSCA: f1.CA, NodeTLSCert: f1.Cert, NodeTLSKey: f1.Key}, s); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	client, err := newEtcdClient([]string{et.Endpoint()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := followRevocations(ctx, ctx, client, s.revoked, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	node2, err := nodetls.Load(f2, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	node3, err := nodetls.Load(f3, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	port := tlsEcho(t, s.tls.Server)          // node 1's node port
	port2 := tlsEcho(t, node2.Server)         // node 2's, which node 1 dials
	open2, err := dialTLS(port, node2.Client) // node 2's connection to node 1
	if err != nil {
		t.Fatalf("node 2 before the revocation: %v", err)
	}
	defer open2.Close()
	open3, err := dialTLS(port, node3.Client)
	if err != nil {
		t.Fatalf("node 3: %v", err)
	}
	defer open3.Close()
	if c, err := dialTLS(port2, s.tls.Client); err != nil {
		t.Fatalf("node 1 dials node 2 before the revocation: %v", err)
	} else {
		c.Close()
	}
	closed := make(chan time.Time, 1)
	go func() {
		_, _ = io.Copy(io.Discard, open2)
		closed <- time.Now()
	}()

	var out, errOut bytes.Buffer
	start := time.Now()
	if err := runCluster([]string{"revoke", "--cluster", et.ClusterURL(), "--cert", f2.Cert}, &out, &errOut); err != nil {
		t.Fatalf("kassa cluster revoke: %v\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "revoked the node certificate with serial "+nodetls.SerialKey(node2.Leaf.SerialNumber)) {
		t.Errorf("kassa cluster revoke said %q", out.String())
	}
	const deadline = 10 * time.Second
	var closedIn time.Duration
	select {
	case at := <-closed:
		closedIn = at.Sub(start)
	case <-time.After(deadline):
		t.Fatalf("node 2's open connection to node 1 still open %v after the revocation", deadline)
	}
	var refusedIn time.Duration
	for {
		c, err := dialTLS(port, node2.Client)
		if err != nil {
			refusedIn = time.Since(start)
			break
		}
		c.Close()
		if time.Since(start) > deadline {
			t.Fatalf("node 1 still takes node 2's certificate %v after the revocation", deadline)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if _, err := dialTLS(port2, s.tls.Client); err == nil || !strings.Contains(err.Error(), "revoked") {
		t.Errorf("node 1 dialled node 2 after the revocation: %v, want refused as revoked", err)
	}
	// Node 3, of the same CA, goes on: its open connection and a new one.
	open3.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := open3.Read(make([]byte, 1)); err == nil || !isTimeout(err) {
		t.Errorf("node 3's open connection: %v, want it open (a read timeout)", err)
	}
	if c, err := dialTLS(port, node3.Client); err != nil {
		t.Errorf("node 3 after node 2's revocation: %v", err)
	} else {
		c.Close()
	}
	t.Logf("a revoked node certificate: its open connection closed within %v, a new handshake refused within %v of kassa cluster revoke",
		closedIn.Round(time.Millisecond), refusedIn.Round(time.Millisecond))
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
