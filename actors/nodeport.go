package actors

import (
	"context"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"strconv"

	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// remoteConfig is the node port of cc: protoactor-go remote's gRPC
// server and dial options. With TLS the server requires a client
// certificate of the cluster CA and this node dials the others with its
// own (docs/decisions.md, "An authenticated node port"). Either way no
// request can crash the node: a panic in a handler becomes an Internal
// error, and the two methods protoactor-go left as panic("implement me")
// answer Unimplemented before their handler runs.
func (c *Cluster) remoteConfig(cc ClusterConfig) (*remote.Config, error) {
	creds, dial := insecure.NewCredentials(), insecure.NewCredentials()
	switch {
	case cc.ServerTLS != nil && cc.ClientTLS != nil:
		creds, dial = credentials.NewTLS(cc.ServerTLS), credentials.NewTLS(cc.ClientTLS)
	case cc.ServerTLS != nil || cc.ClientTLS != nil:
		return nil, errors.New("cluster: the node port needs both the server and the client TLS configuration")
	case !cc.Insecure:
		return nil, errors.New("cluster: the node port has no TLS configuration (a cluster CA and a node certificate), and plaintext was not asked for")
	}
	opts := []remote.ConfigOption{
		remote.WithServerOptions(
			grpc.Creds(creds),
			grpc.ChainUnaryInterceptor(unimplementedStubs, c.recoverUnary),
			grpc.ChainStreamInterceptor(c.recoverStream),
		),
		remote.WithDialOptions(grpc.WithTransportCredentials(dial), grpc.WithChainStreamInterceptor(closedIsEnd)),
	}
	if cc.Port != 0 {
		// The others dial the address as given, so that a node
		// certificate names the host the operator gave, not whichever
		// address that name resolved to here.
		opts = append(opts, remote.WithAdvertisedHost(net.JoinHostPort(cc.Host, strconv.Itoa(cc.Port))))
	}
	return remote.Configure(cc.Host, cc.Port, opts...), nil
}

// closedIsEnd makes the stream of a connection to another node's port
// end (io.EOF) rather than fail when this node closed the connection
// itself. protoactor-go's endpoint writer, which holds the connection,
// announces a failed stream as the end of the other node's address
// (EndpointTerminatedEvent), and closes its connection when it stops
// for that very announcement: without this, every connection's stop
// announced the address's end once more and stopped the next connection
// to it, with the calls queued on it, for as long as calls came (after
// a node joined again at its address, seconds under load). The stream
// is opened without a deadline or cancellation of its own, so a
// Canceled status is the connection closed here; a stream the other
// node ended or broke fails as before (docs/decisions.md, "Membership
// fence and self-fencing").
func closedIsEnd(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	s, err := streamer(ctx, desc, cc, method, opts...)
	if err != nil || method != remote.Remoting_Receive_FullMethodName {
		return s, err
	}
	return endOnClose{s}, nil
}

// endOnClose is a stream whose receive answers io.EOF once its
// connection was closed by this node (closedIsEnd).
type endOnClose struct{ grpc.ClientStream }

func (s endOnClose) RecvMsg(m any) error {
	err := s.ClientStream.RecvMsg(m)
	if status.Code(err) == codes.Canceled {
		return io.EOF
	}
	return err
}

// unimplementedStubs answers Unimplemented for the Remoting methods
// protoactor-go implements as panic("implement me").
func unimplementedStubs(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch info.FullMethod {
	case remote.Remoting_ListProcesses_FullMethodName, remote.Remoting_GetProcessDiagnostics_FullMethodName:
		return nil, status.Errorf(codes.Unimplemented, "%s is not implemented", info.FullMethod)
	}
	return handler(ctx, req)
}

// recoverUnary turns a panic of a unary handler into an Internal error.
func (c *Cluster) recoverUnary(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (res any, err error) {
	defer c.recoverCall(info.FullMethod, &err)
	return handler(ctx, req)
}

// recoverStream turns a panic of a stream handler (protoactor-go's
// Receive, which indexes its tables by numbers from the wire) into an
// Internal error that ends the stream.
func (c *Cluster) recoverStream(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) (err error) {
	defer c.recoverCall(info.FullMethod, &err)
	return handler(srv, ss)
}

func (c *Cluster) recoverCall(method string, err *error) {
	if r := recover(); r != nil {
		c.log.Error("node port: a request panicked", "method", method, "panic", r, "stack", string(debug.Stack()))
		*err = status.Errorf(codes.Internal, "internal error")
	}
}
