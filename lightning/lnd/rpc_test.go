package lnd_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"

	"github.com/kassapay/kassa/lightning/lnd"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
)

// countingListener counts the connections it accepts and their writes
// and reads: on the server side of a gRPC connection, each read or
// write is a flush of the peer's frames or of the server's own.
type countingListener struct {
	net.Listener
	accepts, writes, reads atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	l.accepts.Add(1)
	return &countingConn{Conn: c, l: l}, nil
}

type countingConn struct {
	net.Conn
	l *countingListener
}

func (c *countingConn) Write(p []byte) (int, error) { c.l.writes.Add(1); return c.Conn.Write(p) }
func (c *countingConn) Read(p []byte) (int, error)  { c.l.reads.Add(1); return c.Conn.Read(p) }

// invoiceServer is lnd's AddInvoice over real gRPC and TLS: it answers
// a payment request of lnd's size and checks the macaroon.
type invoiceServer struct {
	lnrpc.UnimplementedLightningServer
	macaroon string
	calls    atomic.Int64
}

func (s *invoiceServer) AddInvoice(ctx context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	if m := md.Get("macaroon"); len(m) != 1 || m[0] != s.macaroon {
		return nil, os.ErrPermission
	}
	s.calls.Add(1)
	req := make([]byte, 360)
	for i := range req {
		req[i] = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"[i%32]
	}
	return &lnrpc.AddInvoiceResponse{RHash: make([]byte, 32), PaymentRequest: "lnbcrt10u1p" + string(req), AddIndex: uint64(s.calls.Load()), PaymentAddr: make([]byte, 32)}, nil
}

// startGRPCLnd starts invoiceServer behind TLS on a free port and
// returns the target that lnd.Dial takes.
func startGRPCLnd(t testing.TB) (lnd.Target, *countingListener, *invoiceServer) {
	t.Helper()
	return startGRPCLndWith(t, nil)
}

// startGRPCLndWith is startGRPCLnd serving wrap(invoiceServer) when wrap
// is not nil.
func startGRPCLndWith(t testing.TB, wrap func(*invoiceServer) lnrpc.LightningServer) (lnd.Target, *countingListener, *invoiceServer) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPath := filepath.Join(t.TempDir(), "tls.cert")
	if err := os.WriteFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cl := &countingListener{Listener: ln}
	srv := grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}},
	})))
	mac := []byte{0x02, 0x01, 0x03, 0x6c, 0x6e, 0x64}
	is := &invoiceServer{macaroon: "0201036c6e64"}
	var served lnrpc.LightningServer = is
	if wrap != nil {
		served = wrap(is)
	}
	lnrpc.RegisterLightningServer(srv, served)
	go srv.Serve(cl)
	t.Cleanup(srv.Stop)
	return lnd.Target{Host: ln.Addr().String(), TLSCertPath: certPath, Macaroon: mac}, cl, is
}

// TestAddInvoiceOverGRPC creates invoices through lnd.Dial's connection
// to a gRPC server with TLS that checks the macaroon of every call: all
// calls, sequential and concurrent, share one connection (a new TLS
// handshake per call would cost more than the call). The socket writes
// and reads per call are logged: one each, as lnd's own clients make.
func TestAddInvoiceOverGRPC(t *testing.T) {
	t.Parallel()
	target, cl, is := startGRPCLnd(t)
	rpc, err := lnd.Dial(target)
	if err != nil {
		t.Fatal(err)
	}
	defer rpc.Close()
	ctx := context.Background()
	for range 5 { // connection set-up
		if _, err := rpc.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1000}); err != nil {
			t.Fatal(err)
		}
	}
	w0, r0 := cl.writes.Load(), cl.reads.Load()
	const n = 200
	for range n {
		res, err := rpc.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1_000_000, Memo: "order 42", Expiry: 900})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.PaymentRequest) != 371 {
			t.Fatalf("payment request of %d characters", len(res.PaymentRequest))
		}
	}
	t.Logf("per call: %.2f server writes, %.2f server reads",
		float64(cl.writes.Load()-w0)/n, float64(cl.reads.Load()-r0)/n)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			_, err := rpc.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1000})
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := is.calls.Load(); got != 5+n+32 {
		t.Errorf("server answered %d calls, want %d", got, 5+n+32)
	}
	if got := cl.accepts.Load(); got != 1 {
		t.Errorf("%d connections for %d calls, want 1", got, is.calls.Load())
	}
}

// BenchmarkAddInvoiceOverGRPC is TestAddInvoiceOverGRPC's call from 32
// goroutines at once, as the HTTP creates make it under load: client
// and server CPU and allocations per call (both sides run in this
// process), and the server's socket writes and reads per call.
func BenchmarkAddInvoiceOverGRPC(b *testing.B) {
	target, cl, _ := startGRPCLnd(b)
	rpc, err := lnd.Dial(target)
	if err != nil {
		b.Fatal(err)
	}
	defer rpc.Close()
	ctx := context.Background()
	if _, err := rpc.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1000}); err != nil {
		b.Fatal(err)
	}
	w0, r0 := cl.writes.Load(), cl.reads.Load()
	b.SetParallelism(16) // 32 goroutines on 2 cores
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := rpc.AddInvoice(ctx, &lnrpc.Invoice{ValueMsat: 1_000_000, Memo: "Bench order 42", Expiry: 900}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(cl.writes.Load()-w0)/float64(b.N), "srv-writes/op")
	b.ReportMetric(float64(cl.reads.Load()-r0)/float64(b.N), "srv-reads/op")
}
