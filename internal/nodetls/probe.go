package nodetls

import (
	"crypto/tls"
	"net"
	"time"
)

// Probe dials addr with cfg and reads once, and returns what a peer
// learns of the handshake: in TLS 1.3 a client learns that the server
// refused its certificate only on its first read, not from the dial. It
// offers ALPN "h2", without which gRPC's server closes the connection.
// The tests of the node port use it to show who gets through.
func Probe(addr string, cfg *tls.Config) error {
	cfg = cfg.Clone()
	cfg.NextProtos = []string{"h2"}
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	return err
}
