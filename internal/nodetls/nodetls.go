// Package nodetls is the mutual TLS of a cluster's node port: it makes a
// cluster CA and node certificates (`kassa cluster certs`), and loads
// them into the TLS configurations of a node's gRPC server and client.
//
// Every node holds a certificate of the cluster CA and presents it both
// ways: as a server to the nodes that dial it, and as a client when it
// dials them. A peer without such a certificate is refused in the TLS
// 1.3 handshake, before a byte of protoactor-go's protocol is read.
// docs/decisions.md, "An authenticated node port", says what a holder of
// a node certificate can do.
package nodetls

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Validity of what Generate makes: the CA ten years, a node certificate
// two (replace them with a new run before then; docs/operators.md).
const (
	CAValidity   = 10 * 365 * 24 * time.Hour
	NodeValidity = 2 * 365 * 24 * time.Hour
)

// DefaultHosts are the names a node certificate carries when none are
// given: a cluster of nodes on one machine.
var DefaultHosts = []string{"localhost", "127.0.0.1", "::1"}

// Files are the paths of a node's CA certificate, certificate and key.
type Files struct{ CA, Cert, Key string }

// NodeFiles returns the files Generate writes for node i (from 1) in dir.
func NodeFiles(dir string, i int) Files {
	return Files{
		CA:   filepath.Join(dir, "ca.crt"),
		Cert: filepath.Join(dir, fmt.Sprintf("node%d.crt", i)),
		Key:  filepath.Join(dir, fmt.Sprintf("node%d.key", i)),
	}
}

// Generate makes a new cluster CA and nodes node certificates signed by
// it, and writes dir/ca.crt, dir/ca.key, dir/node1.crt, dir/node1.key …
// (keys 0600, dir 0700). Every node certificate names hosts (DNS names
// or IP addresses; DefaultHosts when empty) and is good for server and
// client authentication. Keys are ECDSA P-256. It refuses to overwrite a
// CA key that exists: a new CA would lock the running nodes out.
func Generate(dir string, nodes int, hosts []string, now time.Time) error {
	if nodes < 1 {
		return errors.New("at least one node")
	}
	if len(hosts) == 0 {
		hosts = DefaultHosts
	}
	var dns []string
	var ips []net.IP
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		switch ip := net.ParseIP(strings.Trim(h, "[]")); {
		case h == "":
			return errors.New("an empty host name")
		case ip != nil:
			ips = append(ips, ip)
		default:
			dns = append(dns, h)
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.key")); err == nil {
		return fmt.Errorf("%s already exists: remove it (and every node's files) to make a new cluster CA", filepath.Join(dir, "ca.key"))
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	start := now.Add(-time.Hour) // clocks of the nodes differ a little
	caTmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "Kassa cluster CA", Organization: []string{"Kassa"}},
		NotBefore:             start,
		NotAfter:              now.Add(CAValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		return err
	}
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.key"), "PRIVATE KEY", mustPKCS8(caKey), 0o600); err != nil {
		return err
	}
	if err := writePEM(filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER, 0o644); err != nil {
		return err
	}
	for i := 1; i <= nodes; i++ {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return err
		}
		tmpl := &x509.Certificate{
			SerialNumber: serial(),
			Subject:      pkix.Name{CommonName: fmt.Sprintf("node%d", i), Organization: []string{"Kassa"}},
			NotBefore:    start,
			NotAfter:     now.Add(NodeValidity),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
			DNSNames:     dns,
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			return err
		}
		f := NodeFiles(dir, i)
		if err := writePEM(f.Key, "PRIVATE KEY", mustPKCS8(key), 0o600); err != nil {
			return err
		}
		if err := writePEM(f.Cert, "CERTIFICATE", der, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

func mustPKCS8(key *ecdsa.PrivateKey) []byte {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		panic(err) // a P-256 key always marshals
	}
	return der
}

// writePEM writes one PEM block to a new file with mode perm (and makes
// an existing file that mode).
func writePEM(path, typ string, der []byte, perm os.FileMode) error {
	data := pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
	if err := os.WriteFile(path, data, perm); err != nil {
		return err
	}
	return os.Chmod(path, perm)
}

// Config is a node's loaded TLS material.
type Config struct {
	// Server is the configuration of the node port: TLS 1.3, and a
	// client certificate of the cluster CA required.
	Server *tls.Config
	// Client is the configuration of this node's connections to the
	// others: its certificate, and the cluster CA as the only root.
	Client *tls.Config
	// Leaf is this node's certificate.
	Leaf *x509.Certificate
}

// Load reads a node's files: the cluster CA's certificate, the node's
// certificate and its key. It checks that the certificate is the key's,
// that the CA signed it and that it may serve and dial; each error names
// the file at fault.
func Load(f Files, now time.Time) (*Config, error) {
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("cluster CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("cluster CA %s: no PEM certificate in it", f.CA)
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("node certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("node certificate %s: %w", f.Cert, err)
		}
	}
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			return nil, fmt.Errorf("node certificate %s is not one of the cluster CA %s for server and client authentication (make both with kassa cluster certs): %w", f.Cert, f.CA, err)
		}
	}
	if fi, err := os.Stat(f.Key); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("node key %s is readable by others (mode %#o): chmod 600 it", f.Key, fi.Mode().Perm())
	}
	return &Config{
		Server: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{pair},
			ClientAuth:   tls.RequireAndVerifyClientCert,
			ClientCAs:    pool,
		},
		Client: &tls.Config{
			MinVersion:   tls.VersionTLS13,
			Certificates: []tls.Certificate{pair},
			RootCAs:      pool,
		},
		Leaf: leaf,
	}, nil
}

// CheckHost says whether the node certificate names host, the address
// the other nodes dial this one at.
func (c *Config) CheckHost(host string) error {
	if err := c.Leaf.VerifyHostname(strings.Trim(host, "[]")); err != nil {
		names := append(append([]string(nil), c.Leaf.DNSNames...), ipStrings(c.Leaf.IPAddresses)...)
		return fmt.Errorf("the node certificate names %s, not %s, the host the other nodes dial: make the certificates with kassa cluster certs --host %s", strings.Join(names, ", "), host, host)
	}
	return nil
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

// LoadClient is the client TLS of a connection to a service the cluster
// uses (etcd): f.CA the only root, and f.Cert with f.Key presented
// when given (both or neither). The key must not be readable by others.
func LoadClient(f Files) (*tls.Config, error) {
	caPEM, err := os.ReadFile(f.CA)
	if err != nil {
		return nil, fmt.Errorf("CA: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("CA %s: no PEM certificate in it", f.CA)
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, RootCAs: pool}
	if f.Cert == "" && f.Key == "" {
		return cfg, nil
	}
	pair, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, fmt.Errorf("client certificate %s with key %s: %w", f.Cert, f.Key, err)
	}
	if fi, err := os.Stat(f.Key); err == nil && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("key %s is readable by others (mode %#o): chmod 600 it", f.Key, fi.Mode().Perm())
	}
	cfg.Certificates = []tls.Certificate{pair}
	return cfg, nil
}
