package harness

// A throw-away etcd server for tests: one member with its data in a
// temporary directory, listening on free loopback ports, stopped and
// removed again by Stop. Nothing is skipped: when the server cannot be
// started, StartEtcd says why and the caller fails
// (scripts/install-test-deps.sh installs Debian's etcd-server, 3.4).

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/kassapay/kassa/internal/nodetls"
	"github.com/kassapay/kassa/kassatest"
)

// Etcd is a running throw-away etcd.
type Etcd struct {
	dir    string
	client int
	bin    string
	args   []string
	mu     sync.Mutex // guards proc across Down and Up
	proc   *daemon
	log    *kassatest.LogBuffer
	stop   sync.Once
	// tls is the client TLS of an etcd that serves TLS (StartEtcdTLS),
	// for its health check; nil: plaintext.
	tls *tls.Config
}

// StartEtcd starts etcd in a new temporary directory on free loopback
// ports and waits until it answers its health check.
func StartEtcd() (*Etcd, error) { return startEtcdWith(nil) }

// StartEtcdTLS is StartEtcd with etcd serving its clients TLS only, as
// an operator runs it with certificates of kassa cluster certs: server
// is the certificate etcd presents (--cert-file, --key-file; it must
// name 127.0.0.1) and its CA the only one whose client certificates it
// takes (--trusted-ca-file, --client-cert-auth). Plaintext clients and
// clients of another CA are refused.
func StartEtcdTLS(server nodetls.Files) (*Etcd, error) { return startEtcdWith(&server) }

func startEtcdWith(server *nodetls.Files) (*Etcd, error) {
	bin, err := exec.LookPath("etcd")
	if err != nil {
		return nil, fmt.Errorf("harness: etcd is not installed (%v); run scripts/install-test-deps.sh (Debian package etcd-server)", err)
	}
	var last error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := startEtcd(bin, server)
		if err == nil {
			return s, nil
		}
		last = err // most likely a free port taken before etcd bound it
	}
	return nil, last
}

// EtcdForTest starts etcd for t and stops it when t ends; a failure to
// start fails t. Under -short (the fast tier) t is skipped: it needs
// etcd.
func EtcdForTest(t T) *Etcd {
	t.Helper()
	SkipShort(t, "etcd")
	s, err := StartEtcd()
	return etcdForTest(t, s, err)
}

// EtcdTLSForTest is EtcdForTest with StartEtcdTLS.
func EtcdTLSForTest(t T, server nodetls.Files) *Etcd {
	t.Helper()
	SkipShort(t, "etcd")
	s, err := StartEtcdTLS(server)
	return etcdForTest(t, s, err)
}

func etcdForTest(t T, s *Etcd, err error) *Etcd {
	t.Helper()
	if err != nil {
		t.Fatalf("cannot start etcd for the test: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Stop(); err != nil {
			t.Logf("%v", err)
		}
	})
	return s
}

func startEtcd(bin string, server *nodetls.Files) (*Etcd, error) {
	dir, err := os.MkdirTemp("", "kassa-etcd-")
	if err != nil {
		return nil, fmt.Errorf("harness: etcd: %w", err)
	}
	client, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("harness: etcd: %w", err)
	}
	peer, err := freePort()
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("harness: etcd: %w", err)
	}
	scheme := "http"
	var clientTLS *tls.Config
	if server != nil {
		scheme = "https"
		if clientTLS, err = nodetls.LoadClient(*server); err != nil {
			os.RemoveAll(dir)
			return nil, fmt.Errorf("harness: etcd TLS: %w", err)
		}
	}
	clientURL := fmt.Sprintf("%s://127.0.0.1:%d", scheme, client)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peer)
	s := &Etcd{dir: dir, client: client, bin: bin, tls: clientTLS, log: &kassatest.LogBuffer{Max: 1 << 20}, args: []string{
		"--name", "test",
		"--data-dir", filepath.Join(dir, "data"),
		"--listen-client-urls", clientURL, "--advertise-client-urls", clientURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "test=" + peerURL,
		"--log-level", "warn",
	}}
	if server != nil {
		s.args = append(s.args, "--cert-file", server.Cert, "--key-file", server.Key,
			"--trusted-ca-file", server.CA, "--client-cert-auth")
	}
	if err := s.run(); err != nil {
		if s.proc != nil {
			_ = s.Stop()
		}
		os.RemoveAll(dir)
		return nil, err
	}
	return s, nil
}

// run starts the etcd process and waits until it is healthy.
func (s *Etcd) run() error {
	cmd := exec.Command(s.bin, s.args...)
	cmd.Stdout, cmd.Stderr = s.log, s.log
	proc, err := startDaemon(cmd, nil)
	if err != nil {
		return fmt.Errorf("harness: start etcd: %w", err)
	}
	s.mu.Lock()
	s.proc = proc
	s.mu.Unlock()
	switch proc.waitReady(30*time.Second, 50*time.Millisecond, s.healthy) {
	case errExited:
		return fmt.Errorf("harness: etcd exited at start:\n%s", tail(s.log.String()))
	case errNotReady:
		return fmt.Errorf("harness: etcd not healthy after 30 s:\n%s", tail(s.log.String()))
	}
	return nil
}

// Down kills etcd (an outage: every client connection is cut) and
// keeps its data, for Up.
func (s *Etcd) Down() error {
	s.mu.Lock()
	proc := s.proc
	s.mu.Unlock()
	if !proc.stop(os.Kill, 10*time.Second) {
		return errors.New("harness: etcd did not exit within 10 s of SIGKILL")
	}
	return nil
}

// Up starts etcd again after Down, on the same ports and data, and
// waits until it is healthy.
func (s *Etcd) Up() error { return s.run() }

func (s *Etcd) healthy() bool {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, s.ClientURL()+"/health", nil)
	client := http.DefaultClient
	if s.tls != nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: s.tls}}
		defer client.CloseIdleConnections()
	}
	res, err := client.Do(req)
	if err != nil {
		return false
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(res.Body, 1024))
	return res.StatusCode == http.StatusOK && bytes.Contains(body, []byte(`"true"`))
}

// Endpoint is the client address, host:port.
func (s *Etcd) Endpoint() string { return fmt.Sprintf("127.0.0.1:%d", s.client) }

// ClientURL is the client address as an http:// URL (https:// with
// StartEtcdTLS).
func (s *Etcd) ClientURL() string {
	if s.tls != nil {
		return "https://" + s.Endpoint()
	}
	return "http://" + s.Endpoint()
}

// ClusterURL is the address in the form `kassa serve --cluster` takes.
func (s *Etcd) ClusterURL() string { return "etcd://" + s.Endpoint() }

// ClusterURLTLS is ClusterURL with the TLS a client of StartEtcdTLS
// needs: the CA of etcd's certificate and the client certificate f.Cert
// with its key (kassa serve --cluster 'etcd://HOST:PORT?ca=…&cert=…&key=…').
func (s *Etcd) ClusterURLTLS(f nodetls.Files) string {
	q := url.Values{"ca": {f.CA}, "cert": {f.Cert}, "key": {f.Key}}
	return s.ClusterURL() + "?" + q.Encode()
}

// Stop kills etcd, waits for it and removes its directory. It may be
// called more than once.
func (s *Etcd) Stop() error {
	var err error
	s.stop.Do(func() {
		s.mu.Lock()
		proc := s.proc
		s.mu.Unlock()
		if proc != nil && !proc.stop(os.Kill, 10*time.Second) {
			err = errors.New("harness: etcd did not exit within 10 s of SIGKILL")
		}
		err = errors.Join(err, os.RemoveAll(s.dir))
	})
	return err
}
