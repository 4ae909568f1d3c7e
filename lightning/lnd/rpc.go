package lnd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"

	"github.com/kassapay/kassa/lightning/lnd/lnrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/invoicesrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/routerrpc"
	"github.com/kassapay/kassa/lightning/lnd/lnrpc/walletrpc"
)

// RPC is the part of lnd's gRPC interface the backend uses, with the
// streams reduced to a receive function. Dial returns the real one; tests
// give function fields.
type RPC interface {
	GetInfo(ctx context.Context) (*lnrpc.GetInfoResponse, error)
	AddInvoice(ctx context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error)
	LookupInvoice(ctx context.Context, paymentHash []byte) (*lnrpc.Invoice, error)
	// SubscribeInvoices streams invoice updates after settleIndex. The
	// watcher acts on settles alone, and Dial's leaves the others out
	// undecoded (see subscribeSettles).
	SubscribeInvoices(ctx context.Context, settleIndex uint64) (func() (*lnrpc.Invoice, error), error)
	CancelInvoice(ctx context.Context, paymentHash []byte) error
	SendPayment(ctx context.Context, in *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error)
	TrackPayment(ctx context.Context, paymentHash []byte) (func() (*lnrpc.Payment, error), error)
	QueryRoutes(ctx context.Context, in *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error)
	NewAddress(ctx context.Context) (string, error)
	Close() error
}

// Target says where lnd is and how to authenticate to it: the value of
// `--lightning 'lnd://HOST:PORT?tls=PATH&macaroon=PATH'`.
type Target struct {
	// Host is HOST:PORT of lnd's gRPC interface.
	Host string
	// TLSCertPath is lnd's tls.cert.
	TLSCertPath string
	// Macaroon is the macaroon, raw bytes (read from a file, or decoded
	// from hex).
	Macaroon []byte
	// Network, when given (&network=regtest), is checked against lnd's.
	Network string
}

// ParseTarget parses an lnd://HOST:PORT?tls=PATH&macaroon=PATH|HEX URL.
// The macaroon is a file path, or the macaroon itself in hex. The error
// never repeats the macaroon.
func ParseTarget(raw string) (Target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "lnd" || u.Host == "" || u.Port() == "" {
		return Target{}, fmt.Errorf("lightning: want lnd://HOST:PORT?tls=PATH&macaroon=PATH (or hex)")
	}
	q := u.Query()
	t := Target{Host: u.Host, TLSCertPath: q.Get("tls"), Network: q.Get("network")}
	if t.TLSCertPath == "" {
		return Target{}, fmt.Errorf("lightning: lnd URL needs tls=PATH of lnd's tls.cert")
	}
	if _, err := os.Stat(t.TLSCertPath); err != nil {
		return Target{}, fmt.Errorf("lightning: lnd TLS certificate: %w", err)
	}
	mac := q.Get("macaroon")
	if mac == "" {
		return Target{}, fmt.Errorf("lightning: lnd URL needs macaroon=PATH (or the macaroon in hex)")
	}
	if b, err := hex.DecodeString(mac); err == nil && len(b) > 0 && !fileExists(mac) {
		t.Macaroon = b
	} else {
		b, err := os.ReadFile(mac)
		if err != nil {
			return Target{}, fmt.Errorf("lightning: read lnd macaroon: %w", err)
		}
		t.Macaroon = b
	}
	return t, nil
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// macaroonCredential sends the macaroon with every call, as lnd expects.
type macaroonCredential string

func (m macaroonCredential) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"macaroon": string(m)}, nil
}

func (macaroonCredential) RequireTransportSecurity() bool { return true }

// The flow-control windows of the connection to lnd (see Dial).
const (
	streamWindow = 1 << 20
	connWindow   = 4 << 20
)

// grpcRPC is RPC over a gRPC connection to lnd.
type grpcRPC struct {
	conn     *grpc.ClientConn
	ln       lnrpc.LightningClient
	invoices invoicesrpc.InvoicesClient
	router   routerrpc.RouterClient
	wallet   walletrpc.WalletKitClient
}

// Dial prepares a connection to lnd. It does not wait for lnd: calls fail
// while lnd is unreachable and the connection comes back by itself.
func Dial(t Target) (RPC, error) {
	pem, err := os.ReadFile(t.TLSCertPath)
	if err != nil {
		return nil, fmt.Errorf("lightning: read lnd TLS certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("lightning: %s holds no PEM certificate", t.TLSCertPath)
	}
	creds := credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12})
	bo := backoff.DefaultConfig
	bo.MaxDelay = 5 * time.Second
	conn, err := grpc.NewClient(t.Host,
		grpc.WithTransportCredentials(creds),
		grpc.WithPerRPCCredentials(macaroonCredential(hex.EncodeToString(t.Macaroon))),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: bo, MinConnectTimeout: 5 * time.Second}),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(50<<20)),
		// Fixed flow-control windows: gRPC's default (dynamic) windows
		// come with a bandwidth-delay probe, a ping that the client
		// sends, and lnd answers, each time data arrives while none is
		// out: about one per invoice created under load, as every
		// AddInvoice answer and every update of the invoice stream is
		// data. Lnd's messages are small; windows this size never hold
		// them back, and the client sends window updates every 256 KiB
		// of a stream rather than every 16 KiB.
		grpc.WithStaticStreamWindowSize(streamWindow),
		grpc.WithStaticConnWindowSize(connWindow),
	)
	if err != nil {
		return nil, fmt.Errorf("lightning: connect to lnd at %s: %w", t.Host, err)
	}
	return &grpcRPC{
		conn:     conn,
		ln:       lnrpc.NewLightningClient(conn),
		invoices: invoicesrpc.NewInvoicesClient(conn),
		router:   routerrpc.NewRouterClient(conn),
		wallet:   walletrpc.NewWalletKitClient(conn),
	}, nil
}

func (g *grpcRPC) Close() error { return g.conn.Close() }

func (g *grpcRPC) GetInfo(ctx context.Context) (*lnrpc.GetInfoResponse, error) {
	return g.ln.GetInfo(ctx, &lnrpc.GetInfoRequest{})
}

func (g *grpcRPC) AddInvoice(ctx context.Context, in *lnrpc.Invoice) (*lnrpc.AddInvoiceResponse, error) {
	return g.ln.AddInvoice(ctx, in)
}

func (g *grpcRPC) LookupInvoice(ctx context.Context, hash []byte) (*lnrpc.Invoice, error) {
	return g.ln.LookupInvoice(ctx, &lnrpc.PaymentHash{RHash: hash})
}

func (g *grpcRPC) SubscribeInvoices(ctx context.Context, settleIndex uint64) (func() (*lnrpc.Invoice, error), error) {
	return g.subscribeSettles(ctx, settleIndex)
}

func (g *grpcRPC) CancelInvoice(ctx context.Context, hash []byte) error {
	_, err := g.invoices.CancelInvoice(ctx, &invoicesrpc.CancelInvoiceMsg{PaymentHash: hash})
	return err
}

func (g *grpcRPC) SendPayment(ctx context.Context, in *routerrpc.SendPaymentRequest) (func() (*lnrpc.Payment, error), error) {
	s, err := g.router.SendPaymentV2(ctx, in)
	if err != nil {
		return nil, err
	}
	return s.Recv, nil
}

func (g *grpcRPC) TrackPayment(ctx context.Context, hash []byte) (func() (*lnrpc.Payment, error), error) {
	s, err := g.router.TrackPaymentV2(ctx, &routerrpc.TrackPaymentRequest{PaymentHash: hash, NoInflightUpdates: true})
	if err != nil {
		return nil, err
	}
	return s.Recv, nil
}

func (g *grpcRPC) QueryRoutes(ctx context.Context, in *lnrpc.QueryRoutesRequest) (*lnrpc.QueryRoutesResponse, error) {
	return g.ln.QueryRoutes(ctx, in)
}

func (g *grpcRPC) NewAddress(ctx context.Context) (string, error) {
	r, err := g.ln.NewAddress(ctx, &lnrpc.NewAddressRequest{Type: lnrpc.AddressType_WITNESS_PUBKEY_HASH})
	if err != nil {
		return "", err
	}
	return r.Address, nil
}

// containsAny reports whether err's text holds one of the phrases; lnd
// reports many conditions only in text over gRPC.
func containsAny(err error, phrases ...string) bool {
	if err == nil {
		return false
	}
	s := strings.ToLower(err.Error())
	for _, p := range phrases {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}
