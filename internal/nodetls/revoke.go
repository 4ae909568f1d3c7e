package nodetls

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"sync"
)

// Revocations is the cluster's list of revoked node certificates, by
// serial number, as this node last read it (cmd/kassa keeps it in etcd
// and refreshes it by a watch). Guard makes a node's TLS configurations
// refuse a revoked certificate in every handshake, both ways, and Set
// closes the connections a newly revoked certificate opened to this
// node's port. A certificate is revoked without a new CA: the other
// nodes keep theirs.
type Revocations struct {
	mu      sync.Mutex
	revoked map[string]bool
	// conns are the node port's accepted connections, by the serial of
	// the peer's certificate, oldest first (at most maxTracked).
	conns []tracked
}

type tracked struct {
	conn   net.Conn
	serial string
}

// maxTracked bounds the accepted connections remembered for closing: the
// nodes of a cluster keep a few long-lived connections to each other,
// and a connection forgotten (the oldest, most likely closed long ago)
// is refused at its next handshake all the same.
const maxTracked = 4096

// NewRevocations returns an empty list.
func NewRevocations() *Revocations { return &Revocations{revoked: map[string]bool{}} }

// SerialKey is the spelling of serial in the list: lower-case hex,
// without leading zeros.
func SerialKey(serial *big.Int) string { return strings.ToLower(serial.Text(16)) }

// ParseSerial reads a certificate serial number in hex, as openssl
// x509 -serial and the browsers print it ("serial=0A1B…", "0a:1b:…",
// "0x0a1b…"), into SerialKey's spelling.
func ParseSerial(s string) (string, error) {
	t := strings.TrimSpace(s)
	t = strings.TrimPrefix(strings.TrimPrefix(t, "serial="), "0x")
	t = strings.ReplaceAll(t, ":", "")
	n, ok := new(big.Int).SetString(t, 16)
	if t == "" || len(t) > 64 || !ok || n.Sign() <= 0 {
		return "", fmt.Errorf("serial %q: want the certificate's serial number in hex (openssl x509 -noout -serial -in FILE)", s)
	}
	return SerialKey(n), nil
}

// Set replaces the list by serials (SerialKey spelling) and closes the
// accepted connections of every certificate it revokes; it returns how
// many it closed.
func (r *Revocations) Set(serials []string) int {
	next := make(map[string]bool, len(serials))
	for _, s := range serials {
		next[s] = true
	}
	r.mu.Lock()
	r.revoked = next
	var closing []net.Conn
	kept := r.conns[:0]
	for _, c := range r.conns {
		if next[c.serial] {
			closing = append(closing, c.conn)
		} else {
			kept = append(kept, c)
		}
	}
	clear(r.conns[len(kept):])
	r.conns = kept
	r.mu.Unlock()
	for _, c := range closing {
		c.Close()
	}
	return len(closing)
}

var errRevoked = errors.New("nodetls: the peer's node certificate is revoked")

// check refuses a handshake whose peer presented a revoked certificate,
// and remembers conn (the node port's side; nil for this node's own
// dials) to close should the certificate be revoked later. The check and
// the remembering are one step under the lock, so that no connection
// slips between a Set and its closing.
func (r *Revocations) check(cs tls.ConnectionState, conn net.Conn) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("nodetls: the peer presented no certificate")
	}
	serial := SerialKey(cs.PeerCertificates[0].SerialNumber)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.revoked[serial] {
		return fmt.Errorf("%w (serial %s)", errRevoked, serial)
	}
	if conn != nil {
		if len(r.conns) >= maxTracked {
			r.conns = append(r.conns[:0], r.conns[1:]...)
		}
		r.conns = append(r.conns, tracked{conn: conn, serial: serial})
	}
	return nil
}

// Guard makes c's Server and Client check the list in every handshake
// (VerifyConnection, which runs on resumed sessions too; the server
// issues no session tickets all the same). A node's own certificate
// revoked is the operator's to replace; the node is not stopped.
func (r *Revocations) Guard(c *Config) {
	base := c.Server.Clone()
	base.SessionTicketsDisabled = true
	server := base.Clone()
	server.GetConfigForClient = func(hello *tls.ClientHelloInfo) (*tls.Config, error) {
		cfg := base.Clone()
		conn := hello.Conn
		cfg.VerifyConnection = func(cs tls.ConnectionState) error { return r.check(cs, conn) }
		return cfg, nil
	}
	c.Server = server
	client := c.Client.Clone()
	client.VerifyConnection = func(cs tls.ConnectionState) error { return r.check(cs, nil) }
	c.Client = client
}

// CertSerial reads the serial number of the PEM certificate cert (the
// first in it), in SerialKey's spelling.
func CertSerial(pemData []byte) (string, *x509.Certificate, error) {
	cert, err := firstCert(pemData)
	if err != nil {
		return "", nil, err
	}
	return SerialKey(cert.SerialNumber), cert, nil
}

func firstCert(pemData []byte) (*x509.Certificate, error) {
	for {
		var b *pem.Block
		b, pemData = pem.Decode(pemData)
		if b == nil {
			return nil, errors.New("no PEM certificate in it")
		}
		if b.Type == "CERTIFICATE" {
			return x509.ParseCertificate(b.Bytes)
		}
	}
}
