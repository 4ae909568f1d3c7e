package nodetls

import (
	"crypto/tls"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestGenerateAndHandshake makes a cluster's files and checks them: the
// keys are 0600, two nodes complete a mutual TLS 1.3 handshake, and a
// node of another CA, or a client without a certificate, is refused.
func TestGenerateAndHandshake(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "certs")
	now := time.Now()
	if err := Generate(dir, 3, nil, now); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ca.key", "node1.key", "node2.key", "node3.key"} {
		fi, err := os.Stat(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %#o, want 0600", name, fi.Mode().Perm())
		}
	}
	if err := Generate(dir, 1, nil, now); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("a second Generate into %s = %v, want a refusal to overwrite the CA", dir, err)
	}
	node1, err := Load(NodeFiles(dir, 1), now)
	if err != nil {
		t.Fatal(err)
	}
	node2, err := Load(NodeFiles(dir, 2), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"localhost", "127.0.0.1", "::1", "[::1]"} {
		if err := node1.CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q) = %v", h, err)
		}
	}
	if err := node1.CheckHost("10.0.0.5"); err == nil || !strings.Contains(err.Error(), "--host 10.0.0.5") {
		t.Errorf("CheckHost(10.0.0.5) = %v, want advice to make certificates with --host", err)
	}

	other := filepath.Join(t.TempDir(), "other")
	if err := Generate(other, 1, nil, now); err != nil {
		t.Fatal(err)
	}
	stranger, err := Load(NodeFiles(other, 1), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Load(Files{CA: NodeFiles(dir, 1).CA, Cert: NodeFiles(other, 1).Cert, Key: NodeFiles(other, 1).Key}, now); err == nil {
		t.Error("Load accepted a node certificate of another CA")
	}

	addr := serve(t, node1.Server)
	if err := handshake(addr, node2.Client); err != nil {
		t.Errorf("node2 → node1: %v", err)
	}
	noCert := node2.Client.Clone()
	noCert.Certificates = nil
	if err := handshake(addr, noCert); err == nil {
		t.Error("a client without a certificate was let in")
	}
	if err := handshake(addr, stranger.Client); err == nil {
		t.Error("a client of another CA was let in")
	}
	strangerTrustingUs := stranger.Client.Clone()
	strangerTrustingUs.RootCAs = node2.Client.RootCAs
	if err := handshake(addr, strangerTrustingUs); err == nil {
		t.Error("a client with a certificate of another CA was let in")
	}
}

// TestGenerateHosts checks that --host names and addresses go into every
// node certificate.
func TestGenerateHosts(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir, 2, []string{"node1.internal", "10.0.0.5", "fd00::5"}, time.Now()); err != nil {
		t.Fatal(err)
	}
	c, err := Load(NodeFiles(dir, 2), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []string{"node1.internal", "10.0.0.5", "fd00::5"} {
		if err := c.CheckHost(h); err != nil {
			t.Errorf("CheckHost(%q) = %v", h, err)
		}
	}
	if err := c.CheckHost("localhost"); err == nil {
		t.Error("the certificate names localhost, which was not asked for")
	}
	os.Chmod(NodeFiles(dir, 1).Key, 0o644)
	if _, err := Load(NodeFiles(dir, 1), time.Now()); err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Errorf("Load with a key of mode 0644 = %v, want a refusal", err)
	}
}

// serve accepts TLS connections on a loopback port and completes their
// handshakes, answering one byte.
func serve(t *testing.T, cfg *tls.Config) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				if c.(*tls.Conn).Handshake() == nil {
					c.Write([]byte{1})
				}
			}()
		}
	}()
	return l.Addr().String()
}

// handshake probes addr (Probe) as a client of 127.0.0.1.
func handshake(addr string, cfg *tls.Config) error {
	cfg = cfg.Clone()
	cfg.ServerName = "127.0.0.1"
	return Probe(addr, cfg)
}

// TestParseSerial reads serial numbers as openssl and browsers print them.
func TestParseSerial(t *testing.T) {
	for in, want := range map[string]string{
		"serial=0A1B": "a1b", "0a:1b": "a1b", "0x0A1B": "a1b", " a1b ": "a1b",
		"": "", "xyz": "", "0": "", "serial=": "",
	} {
		got, err := ParseSerial(in)
		if (err != nil) != (want == "") || got != want {
			t.Errorf("ParseSerial(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
